import CSQLite

/// One SQLite connection. Not Sendable: one thread at a time (the pool guarantees it).
///
/// Opened with `SQLITE_OPEN_NOMUTEX` (SQLite does no locking of its own),
/// extended result codes, double-quoted strings as identifiers only, and the
/// configuration's busy timeout; writable connections also get
/// `foreign_keys = ON` and the configuration's `synchronous`. `":memory:"`
/// opens a private in-memory database.
public final class Database {
    /// The file, or `":memory:"`.
    public let path: String
    /// Opened with `SQLITE_OPEN_READONLY`: every write fails with `SQLITE_READONLY`.
    public let isReadOnly: Bool
    /// `nil` once closed.
    private var connection: SQLiteConnection?
    /// Only ever touched by the connection's one thread: no need for exclusivity checks on the hot path.
    @exclusivity(unchecked) private var cache: StatementCache
    /// Savepoints open through `inSavepoint(_:)`, which names them `s_1`, `s_2`….
    var savepointDepth = 0
    /// What `observeChanges(_:)` reports committed changes to (see Database+Hooks.swift).
    var changeHooks: ChangeHooks?

    /// Opens (a writable connection creates the file, not its folder) and configures the connection.
    public init(path: String, readOnly: Bool, configuration: DatabaseConfiguration) throws(SQLiteError) {
        _ = Database.libraryConfigured
        self.path = path
        self.isReadOnly = readOnly
        self.cache = StatementCache(capacity: configuration.statementCacheCapacity)
        self.connection = try Database.open(path: path, readOnly: readOnly, configuration: configuration)
    }

    deinit {
        close()
    }

    private static func open(path: String, readOnly: Bool, configuration: DatabaseConfiguration) throws(SQLiteError) -> SQLiteConnection {
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        var connection: SQLiteConnection?
        let code = sqlite3_open_v2(path, &connection, access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                                   configuration.usesFileLocks ? nil : "unix-none")
        guard code == SQLITE_OK, let connection else {
            var error = SQLiteError(resultCode: code, connection: connection, sql: nil)
            error.message += ": \(path)"
            sqlite3_close_v2(connection)
            throw error
        }
        do {
            try check(sqlite3_extended_result_codes(connection, 1), connection)
            daogate_sqlite_disable_dqs(connection)
            try check(sqlite3_busy_timeout(connection, configuration.busyTimeoutMilliseconds), connection)
            let cache = "PRAGMA cache_size = -\(configuration.pageCacheKibibytes)"
            if readOnly {
                try check(sqlite3_exec(connection, cache, nil, nil, nil), connection, sql: cache)
            } else {
                // Before anything writes the file's header: on a file that has pages it changes nothing.
                let pageSize = configuration.newFilePageSize.map { "PRAGMA page_size = \($0); " } ?? ""
                let pragmas = "\(pageSize)\(cache); PRAGMA foreign_keys = ON; PRAGMA synchronous = \(configuration.synchronous.rawValue)"
                try check(sqlite3_exec(connection, pragmas, nil, nil, nil), connection, sql: pragmas)
                if let bytes = configuration.maximumDatabaseBytes {
                    try limitSize(of: connection, to: bytes)
                }
            }
        } catch {
            sqlite3_close_v2(connection)
            throw error
        }
        return connection
    }

    /// Sets `max_page_count` to the pages of the file's page size that fit in `bytes` (at least one).
    private static func limitSize(of connection: SQLiteConnection, to bytes: Int) throws(SQLiteError) {
        let query = "PRAGMA page_size"
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(connection, query, -1, &statement, nil), connection, sql: query)
        defer { sqlite3_finalize(statement) }
        let pageSize = sqlite3_step(statement) == SQLITE_ROW ? Int(sqlite3_column_int64(statement, 0)) : 4096
        let limit = "PRAGMA max_page_count = \(max(1, bytes / max(pageSize, 512)))"
        try check(sqlite3_exec(connection, limit, nil, nil, nil), connection, sql: limit)
    }

    /// The raw connection, for the SQLite C API. Must not be used after `close()`.
    public var handle: SQLiteConnection {
        guard let connection else { preconditionFailure("Database.handle used after close(): \(path)") }
        return connection
    }

    /// The connection, or the "closed" error.
    @inline(__always)
    func requireConnection() throws(SQLiteError) -> SQLiteConnection {
        guard let connection else { throw .closed }
        return connection
    }

    /// Runs one or more statements without bindings (`sqlite3_exec`); rows are discarded.
    /// Configures the SQLite library once, before its first connection opens:
    /// no memory statistics (a global mutex on every allocation), no bulk
    /// page-cache allocation per connection (see README, "What an open user costs").
    private static let libraryConfigured: Bool = {
        let statistics = daogate_sqlite_disable_memory_statistics()
        let pageCache = daogate_sqlite_disable_bulk_page_cache()
        return statistics == SQLITE_OK && pageCache == SQLITE_OK
    }()

    public func execute(_ sql: String) throws(SQLiteError) {
        let connection = try requireConnection()
        guard isQueryOnly else {
            try check(sqlite3_exec(connection, sql, nil, nil, nil), connection, sql: sql)
            return
        }
        // Query-only: each statement of the script is checked before it runs.
        let failure: SQLiteError? = sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var handle: SQLiteStatement?
                let code = sqlite3_prepare_v2(connection, current, -1, &handle, &next)
                if code != SQLITE_OK { return SQLiteError(resultCode: code, connection: connection, sql: sql) }
                guard let handle else { continue }  // whitespace or a comment
                defer { sqlite3_finalize(handle) }
                if !Self.mayRunQueryOnly(handle, String(cString: sqlite3_sql(handle))) { return Self.queryOnlyRefusal(sql) }
                var step = sqlite3_step(handle)
                while step == SQLITE_ROW { step = sqlite3_step(handle) }
                if step != SQLITE_DONE { return SQLiteError(resultCode: step, connection: connection, sql: sql) }
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Whether a statement may run while the connection is query-only: one
    /// that does not write (`sqlite3_stmt_readonly`), or a pragma that sets
    /// nothing (`PRAGMA journal_mode`, `PRAGMA table_info(t)`), which SQLite
    /// never counts as read-only.
    private static func mayRunQueryOnly(_ handle: SQLiteStatement, _ sql: String) -> Bool {
        if sqlite3_stmt_readonly(handle) != 0 { return true }
        let text = sql.drop { $0.isWhitespace }
        return text.prefix(6).lowercased() == "pragma" && !text.contains("=")
    }

    /// A write refused while the connection is query-only, as SQLite refuses one on a read-only connection.
    private static func queryOnlyRefusal(_ sql: String) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_READONLY, message: "attempt to write a readonly database (a read)", sql: sql)
    }

    /// The statement for `sql`, prepared once per connection and kept: rewound, parameters NULL.
    ///
    /// Prepared with `SQLITE_PREPARE_PERSISTENT`; the cache evicts the least
    /// recently used statement at `statementCacheCapacity`. The same SQL gives
    /// the same object, so a statement must be done with before its SQL is
    /// asked for again (use `makeStatement(_:)` to run one SQL text twice at
    /// once). `sql` must hold exactly one statement.
    public func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = cache.statement(for: sql) {
            if isQueryOnly, !Self.mayRunQueryOnly(statement.handle, sql) { throw Self.queryOnlyRefusal(sql) }
            statement.rewindIfBusy()
            statement.clearBindings()
            return statement
        }
        let statement = try Statement.prepare(sql, connection: requireConnection(), flags: UInt32(SQLITE_PREPARE_PERSISTENT))
        cache.insert(statement)
        if isQueryOnly, !Self.mayRunQueryOnly(statement.handle, sql) { throw Self.queryOnlyRefusal(sql) }
        return statement
    }

    /// A statement for one-off SQL, not cached; finalized when released. `sql` must hold exactly one statement.
    public func makeStatement(_ sql: String) throws(SQLiteError) -> Statement {
        let statement = try Statement.prepare(sql, connection: requireConnection(), flags: 0)
        if isQueryOnly, !Self.mayRunQueryOnly(statement.handle, sql) { throw Self.queryOnlyRefusal(sql) }
        return statement
    }

    /// The rowid of the latest successful insert on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the latest insert, update or delete (`sqlite3_changes64`).
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows changed since the connection opened (`sqlite3_total_changes64`).
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// Whether a transaction is open (`!sqlite3_get_autocommit`).
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Whether statements that write are refused: while it is set, a
    /// statement that would write (`sqlite3_stmt_readonly` false) fails with
    /// `SQLITE_READONLY` before it runs, as on a read-only connection (the
    /// pool sets it around a read on the writer). Not `PRAGMA query_only`:
    /// running that pragma expires every prepared statement of the
    /// connection, so each read on the writer compiled its statements again
    /// (17 % of a PK select's time in `sqlite3Reprepare`).
    var isQueryOnly = false

    /// The bytes of this connection's page cache now (`SQLITE_DBSTATUS_CACHE_USED`), 0 once closed.
    public var pageCacheBytes: Int {
        guard let connection else { return 0 }
        var current: Int32 = 0
        var highest: Int32 = 0
        guard sqlite3_db_status(connection, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0) == SQLITE_OK else { return 0 }
        return Int(current)
    }

    /// Frees the pages of the page cache no statement holds (`sqlite3_db_release_memory`): the next
    /// statements read the pages they need again, from the operating system's cache.
    func releasePageCache() {
        guard let connection else { return }
        sqlite3_db_release_memory(connection)
    }

    /// Closes the connection; idempotent.
    ///
    /// Cached statements are let go of and finalized, except those a caller
    /// still holds: `sqlite3_close_v2` keeps the connection as an unusable
    /// zombie until they are released. Later calls that need the connection
    /// throw `SQLITE_MISUSE` "the database is closed".
    public func close() {
        guard let connection else { return }
        cache.removeAll()
        self.connection = nil
        sqlite3_close_v2(connection)
    }

    var isClosed: Bool { connection == nil }

    /// `isInTransaction`, `false` once closed.
    var hasOpenTransaction: Bool {
        guard let connection else { return false }
        return sqlite3_get_autocommit(connection) == 0
    }

    /// Ends whatever a pool body left running, so the connection goes back clean.
    ///
    /// A statement stopped mid-run holds a read snapshot (and, in a reader,
    /// keeps checkpoints from completing); a transaction left open would be
    /// the next body's. Costs one `sqlite3_txn_state` when nothing was left.
    func endUse() {
        guard let connection, sqlite3_txn_state(connection, nil) != SQLITE_TXN_NONE else { return }
        rewindStatements()
        if sqlite3_get_autocommit(connection) == 0 {
            sqlite3_exec(connection, "ROLLBACK", nil, nil, nil)
        }
    }

    /// Resets the statements a body left mid-run, so they release what they read.
    func rewindStatements() {
        guard let connection else { return }
        var next = sqlite3_next_stmt(connection, nil)
        while let statement = next {
            if sqlite3_stmt_busy(statement) != 0 { sqlite3_reset(statement) }
            next = sqlite3_next_stmt(connection, statement)
        }
    }
}
