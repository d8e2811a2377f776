//! Reads what the server answered (on standard input, gathered by ../run from
//! the raw calls) with the models the `rust` generator made: a write result
//! and a nullable class result, present and null. Each must parse, hold the
//! values, and write back the same JSON.
#[allow(unused, clippy::all)]
mod models;

use serde_json::Value;

fn same(label: &str, typed: Value, raw: &Value) {
    fn strip(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), strip(v))).collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    assert_eq!(strip(&typed), strip(raw), "{label}: the models wrote back other JSON");
}

fn main() {
    let samples: Value = serde_json::from_reader(std::io::stdin()).expect("samples JSON");

    let raw = &samples["write"];
    let write: models::WriteResult = serde_json::from_value(raw.clone()).expect("a write result parses");
    assert_eq!(write.changes, 1);
    assert_eq!(write.last_insert_row_id, 1);
    same("write result", serde_json::to_value(&write).unwrap(), raw);

    let raw = &samples["book"];
    let book: models::BooksSelectBook200Response = serde_json::from_value(raw.clone()).expect("a class result parses");
    let row = book.result.clone().expect("the book is there");
    assert_eq!(row.year, Some(Some(2000)));
    same("class result", serde_json::to_value(&book).unwrap(), raw);

    let raw = &samples["missing"];
    let missing: models::MessagesGetMessage200Response =
        serde_json::from_value(raw.clone()).expect("a null class result parses");
    same("null class result", serde_json::to_value(&missing).unwrap(), raw);

    println!("rust: the generated models read a write result and a nullable class result (present and null)");
}
