//! `serde_with::rust::double_option` as serde_with defines it: an optional
//! nullable member as `Option<Option<T>>` — absent is `None` (with
//! `#[serde(default)]`), `null` is `Some(None)`, a value is `Some(Some(value))`.
pub mod rust {
    pub mod double_option {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn deserialize<'de, T, D>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
        where
            T: Deserialize<'de>,
            D: Deserializer<'de>,
        {
            Deserialize::deserialize(deserializer).map(Some)
        }

        pub fn serialize<S, T>(values: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error>
        where
            S: Serializer,
            T: Serialize,
        {
            match values {
                None => serializer.serialize_unit(),
                Some(None) => serializer.serialize_none(),
                Some(Some(value)) => serializer.serialize_some(value),
            }
        }
    }
}
