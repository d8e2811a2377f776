import CSQLite

/// A prepared statement. Not Sendable: it is used on its connection's thread of the moment.
///
/// Statements come from `Database.cachedStatement(_:)` (kept and reused) or
/// `Database.makeStatement(_:)` (one-off); a statement is finalized when its
/// last reference goes, which may outlive `Database.close()`: the connection
/// then lingers, unusable, until that moment (`sqlite3_close_v2`).
public final class Statement {
    public let sql: String
    public let handle: SQLiteStatement
    /// The statement cache's clock reading when it last handed this statement out.
    var lastUse: UInt64 = 0
    /// Whether `bind(_:)` set parameters since they were last cleared: the cache skips clearing them when not.
    var hasBindings = false
    /// `columns`, and the compilation (`SQLITE_STMTSTATUS_REPREPARE`) it was read from.
    var columnsCache: (reprepares: Int32, columns: ResultColumns)?

    private init(handle: SQLiteStatement, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Compiles `sql`, which must hold exactly one statement.
    static func prepare(_ sql: String, connection: SQLiteConnection, flags: UInt32) throws(SQLiteError) -> Statement {
        if sql.utf8.contains(0) {
            throw .misuse("the SQL contains a NUL character", sql: sql)
        }
        var handle: SQLiteStatement?
        var extraHandle: SQLiteStatement?
        var extraCode = SQLITE_OK
        let code = sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            let count = sql.utf8.count
            let code = sqlite3_prepare_v3(connection, start, Int32(clamping: count + 1), flags, &handle, &tail)
            if code == SQLITE_OK, let tail, tail - start < count {
                // Whitespace and comments after the statement compile to nothing; anything else is a second statement.
                extraCode = sqlite3_prepare_v3(connection, tail, Int32(clamping: count - (tail - start) + 1), 0, &extraHandle, nil)
            }
            return code
        }
        try check(code, connection, sql: sql)
        guard let handle else {
            throw .misuse("the SQL holds no statement", sql: sql)
        }
        guard extraCode == SQLITE_OK, extraHandle == nil else {
            sqlite3_finalize(extraHandle)
            sqlite3_finalize(handle)
            throw .misuse("the SQL holds more than one statement; use execute(_:) for scripts", sql: sql)
        }
        return Statement(handle: handle, sql: sql)
    }

    /// Advances to the next row: `true` when a row is available, `false` when done.
    ///
    /// When done or failed, the statement is reset (its bindings kept), ready
    /// to run again. Errors carry this statement's SQL.
    public func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE {
            sqlite3_reset(handle)
            return false
        }
        throw stepFailure(code)
    }

    /// The error for a failed step, taken before the reset that leaves the statement reusable.
    func stepFailure(_ code: Int32) -> SQLiteError {
        let error = SQLiteError(resultCode: code, connection: sqlite3_db_handle(handle), sql: sql)
        sqlite3_reset(handle)
        return error
    }

    /// Steps to completion, discarding rows (for writes); returns the connection's
    /// `sqlite3_changes64` after it: the rows an insert, update or delete changed.
    @discardableResult
    public func run() throws(SQLiteError) -> Int {
        while try step() {}
        return Int(sqlite3_changes64(sqlite3_db_handle(handle)))
    }

    /// Whether the statement makes no direct change to the database (`sqlite3_stmt_readonly`).
    public var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    /// Rewinds the statement (`sqlite3_reset`) and sets every parameter back to NULL.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        hasBindings = false
    }

    /// Sets every parameter back to NULL, unless `bind(_:)` set none since the last time.
    @inline(__always)
    func clearBindings() {
        guard hasBindings else { return }
        sqlite3_clear_bindings(handle)
        hasBindings = false
    }

    /// Rewinds the statement if it stopped mid-run; cheaper than `reset()` when it did not.
    @inline(__always)
    func rewindIfBusy() {
        if sqlite3_stmt_busy(handle) != 0 { sqlite3_reset(handle) }
    }
}
