import CSQLite

/// A raw `sqlite3 *` connection handle.
public typealias SQLiteConnection = OpaquePointer
/// A raw `sqlite3_stmt *` prepared statement handle.
public typealias SQLiteStatement = OpaquePointer
