import CSQLite
import DAOValue

extension Statement {
    /// The number of columns in the statement's result rows (0 for most writes).
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The name of a result column: its `AS` alias, else SQLite's choice.
    public func columnName(_ index: Int) -> String {
        String(cString: sqlite3_column_name(handle, Int32(index)))
    }

    /// The declared type of the table column behind a result column
    /// (`sqlite3_column_decltype`); `nil` for expressions.
    public func columnDeclaredType(_ index: Int) -> String? {
        sqlite3_column_decltype(handle, Int32(index)).map { String(cString: $0) }
    }

    /// The result columns' names and which of them are declared boolean,
    /// read once per compilation of the statement (a schema change recompiles
    /// it, and may change the names and types), not once per row or cell.
    public var columns: ResultColumns {
        let reprepares = sqlite3_stmt_status(handle, Int32(SQLITE_STMTSTATUS_REPREPARE), 0)
        if let cached = columnsCache, cached.reprepares == reprepares { return cached.columns }
        let count = columnCount
        let columns = ResultColumns(
            names: (0..<count).map(columnName),
            booleans: (0..<count).map { columnDeclaredType($0).map(declaredTypeIsBoolean) ?? false })
        columnsCache = (reprepares, columns)
        return columns
    }

    /// For each result column, whether its declared type says boolean (`declaredTypeIsBoolean`).
    public var booleanColumns: [Bool] { columns.booleans }

    /// The storage class of a column of the current row: `SQLITE_INTEGER`,
    /// `SQLITE_FLOAT`, `SQLITE_TEXT`, `SQLITE_BLOB` or `SQLITE_NULL`.
    public func columnType(_ index: Int) -> Int32 {
        sqlite3_column_type(handle, Int32(index))
    }

    /// A column of the current row as an integer, converted by SQLite's rules.
    public func int64(at index: Int) -> Int64 {
        sqlite3_column_int64(handle, Int32(index))
    }

    /// A column of the current row as a double, converted by SQLite's rules.
    public func double(at index: Int) -> Double {
        sqlite3_column_double(handle, Int32(index))
    }

    /// A column of the current row as text; invalid UTF-8 is repaired with U+FFFD.
    public func string(at index: Int) -> String {
        let column = Int32(index)
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// A column of the current row as bytes; empty for a zero-length blob or NULL.
    public func bytes(at index: Int) -> [UInt8] {
        let column = Int32(index)
        guard let blob = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: blob, count: count))
    }

    /// A column of the current row by its storage class: INTEGER → `.integer`,
    /// FLOAT → `.double`, TEXT → `.string`, BLOB → `.blob`, NULL → `.null`.
    public func value(at index: Int) -> Value {
        switch columnType(index) {
        case SQLITE_INTEGER: .integer(int64(at: index))
        case SQLITE_FLOAT: .double(double(at: index))
        case SQLITE_TEXT: .string(string(at: index))
        case SQLITE_BLOB: .blob(bytes(at: index))
        default: .null
        }
    }
}

/// What a statement's result rows hold, the same for every row: the columns'
/// names (`AS` alias, else SQLite's choice) and whether each is declared boolean.
public struct ResultColumns: Sendable {
    public let names: [String]
    public let booleans: [Bool]
}

/// Whether a column declared with this type holds booleans: SQLite gives
/// the type NUMERIC affinity (none of `INT`, `CHAR`, `CLOB`, `TEXT`, `BLOB`,
/// `REAL`, `FLOA`, `DOUB` is in it, and it is not empty) and it names
/// `BOOL` (`BOOL`, `BOOLEAN`). SQLite stores such values as the integers 1 and 0.
public func declaredTypeIsBoolean(_ declaredType: String) -> Bool {
    let type = declaredType.uppercased()
    return type.contains("BOOL")
        && !["INT", "CHAR", "CLOB", "TEXT", "BLOB", "REAL", "FLOA", "DOUB"].contains(where: type.contains)
}
