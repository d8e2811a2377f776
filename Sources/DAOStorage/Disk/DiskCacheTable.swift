import DAOEngine
import DAOValue

/// The SQL of one disk cache's table, `"daogate_lru_<name>"`, and of its indexes.
///
/// Built from a name `Names.checkCacheName` accepted (ASCII letters, digits
/// and `_`), so the quoted identifiers need no escaping. Index names carry a
/// `:`, which no cache name has: an index can never take the name of another
/// cache's table (tables and indexes share one namespace in SQLite).
/// Statements are built per call and prepared once per connection through its
/// statement cache, keyed by their text.
struct DiskCacheTable {
    let name: String
    /// The quoted table name.
    let table: String

    /// The table of cache `name`, after checking the name.
    ///
    /// `caches` (in any case) is refused: its table would be the metadata
    /// table, `daogate_lru_caches`.
    init(checking name: String) throws(StorageError) {
        try Names.checkCacheName(name)
        guard name.lowercased() != "caches" else {
            throw StorageError(.invalidName, "'\(name)' cannot name a cache: daogate_lru_caches is the caches' own list")
        }
        self.name = name
        self.table = "\"daogate_lru_\(name)\""
    }

    var createTable: String {
        "CREATE TABLE \(table) (key TEXT PRIMARY KEY, value BLOB NOT NULL, expire REAL NOT NULL DEFAULT 0, touched INTEGER NOT NULL)"
    }

    /// Eviction walks it from the oldest entry; `max(touched)` reads its last entry.
    var createTouchedIndex: String { "CREATE INDEX \"daogate_lru_\(name):touched\" ON \(table) (touched)" }

    /// Partial: only expiring entries are in it, so never-expiring entries cost
    /// nothing, and a purge visits only expired entries.
    var createExpireIndex: String { "CREATE INDEX \"daogate_lru_\(name):expire\" ON \(table) (expire) WHERE expire > 0" }

    /// Drops the indexes with it.
    var dropTable: String { "DROP TABLE \(table)" }

    /// The next recency stamp: one more than the newest, read from the end of the `touched` index.
    private var nextTouched: String { "coalesce((SELECT max(touched) FROM \(table)), 0) + 1" }

    /// Marks a live entry most recent and returns its stored value. Parameters: key, now.
    var touch: String {
        "UPDATE \(table) SET touched = \(nextTouched) WHERE key = ?1 AND (expire = 0 OR expire > ?2) RETURNING value"
    }

    /// Replaces an entry and marks it most recent. Parameters: key, value, expire.
    var update: String { "UPDATE \(table) SET value = ?2, expire = ?3, touched = \(nextTouched) WHERE key = ?1" }

    /// Adds an entry as the most recent. Parameters: key, value, expire.
    var insert: String { "INSERT INTO \(table) (key, value, expire, touched) VALUES (?1, ?2, ?3, \(nextTouched))" }

    var deleteKey: String { "DELETE FROM \(table) WHERE key = ?" }
    var deleteAll: String { "DELETE FROM \(table)" }
    var deleteLike: String { "DELETE FROM \(table) WHERE key LIKE ?" }
    var deleteLikeEscaped: String { "DELETE FROM \(table) WHERE key LIKE ? ESCAPE ?" }

    /// Deletes the entries expired at a time (the parameter), returning the
    /// bytes each held: its key's UTF-8 and its stored value (JSON text or
    /// ciphertext). Uses the partial index on `expire`.
    var deleteExpired: String {
        "DELETE FROM \(table) WHERE expire > 0 AND expire <= ? RETURNING length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))"
    }

    var count: String { "SELECT count(*) FROM \(table)" }

    /// Deletes the given number of least recently used entries, in one statement.
    var evictOldest: String { "DELETE FROM \(table) WHERE key IN (SELECT key FROM \(table) ORDER BY touched LIMIT ?)" }
}

/// A cache's row in the metadata table.
struct DiskCacheRecord {
    var capacity: Int
    var encrypted: Bool
    /// Entries in the table, kept in step with it by every write.
    var count: Int
}

/// The metadata table, `daogate_lru_caches`: one row per disk cache of the database.
enum DiskCacheCatalog {
    static let createTable = """
        CREATE TABLE IF NOT EXISTS daogate_lru_caches (name TEXT PRIMARY KEY, capacity INTEGER NOT NULL, \
        encrypted INTEGER NOT NULL, created REAL NOT NULL, count INTEGER NOT NULL DEFAULT 0)
        """
    private static let exists = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'daogate_lru_caches'"
    private static let select = "SELECT capacity, encrypted, count FROM daogate_lru_caches WHERE name = ?"
    private static let selectIgnoringCase = "SELECT name FROM daogate_lru_caches WHERE name = ? COLLATE NOCASE"
    private static let selectAll = "SELECT name, capacity, encrypted, count FROM daogate_lru_caches ORDER BY name"
    private static let insert = "INSERT INTO daogate_lru_caches (name, capacity, encrypted, created, count) VALUES (?, ?, ?, ?, 0)"
    private static let updateCapacity = "UPDATE daogate_lru_caches SET capacity = ? WHERE name = ?"
    private static let updateCount = "UPDATE daogate_lru_caches SET count = ? WHERE name = ?"
    private static let delete = "DELETE FROM daogate_lru_caches WHERE name = ?"

    /// The statement for `sql` over the metadata table, or nil when the
    /// database has no such table yet (no cache was ever created in it).
    ///
    /// Preparing is what fails when the table is missing; only then is the
    /// schema asked, so the common path costs nothing more.
    private static func statement(_ db: Database, _ sql: String) throws -> Statement? {
        do {
            return try db.cachedStatement(sql)
        } catch {
            let probe = try db.cachedStatement(exists)
            let found = try probe.step()
            if found { _ = try probe.step() }
            if found { throw error }
            return nil
        }
    }

    static func ensureTable(_ db: Database) throws {
        try db.cachedStatement(createTable).run()
    }

    /// The cache's row, nil when there is none.
    static func record(_ db: Database, _ name: String) throws -> DiskCacheRecord? {
        guard let statement = try statement(db, select) else { return nil }
        try statement.bind([.string(name)])
        guard try statement.step() else { return nil }
        let record = DiskCacheRecord(capacity: Int(statement.int64(at: 0)), encrypted: statement.int64(at: 1) != 0,
                                     count: Int(statement.int64(at: 2)))
        _ = try statement.step()
        return record
    }

    /// The cache's row, or `.unknownCache`.
    static func existingRecord(_ db: Database, _ name: String) throws -> DiskCacheRecord {
        guard let record = try record(db, name) else { throw DiskCaches.unknown(name) }
        return record
    }

    /// The name of a cache whose name equals `name` but for ASCII case, if any.
    static func nameIgnoringCase(_ db: Database, _ name: String) throws -> String? {
        guard let statement = try statement(db, selectIgnoringCase) else { return nil }
        try statement.bind([.string(name)])
        guard try statement.step() else { return nil }
        let found = statement.string(at: 0)
        _ = try statement.step()
        return found
    }

    /// Every cache of the database, by name.
    static func all(_ db: Database) throws -> [DiskCacheInfo] {
        guard let statement = try statement(db, selectAll) else { return [] }
        var caches: [DiskCacheInfo] = []
        while try statement.step() {
            caches.append(DiskCacheInfo(name: statement.string(at: 0), capacity: Int(statement.int64(at: 1)),
                                        encrypted: statement.int64(at: 2) != 0, count: Int(statement.int64(at: 3))))
        }
        return caches
    }

    static func add(_ db: Database, _ name: String, capacity: Int, encrypted: Bool, created: Double) throws {
        let statement = try db.cachedStatement(insert)
        try statement.bind([.string(name), .integer(Int64(capacity)), .integer(encrypted ? 1 : 0), .double(created)])
        try statement.run()
    }

    static func setCapacity(_ db: Database, _ name: String, _ capacity: Int) throws {
        let statement = try db.cachedStatement(updateCapacity)
        try statement.bind([.integer(Int64(capacity)), .string(name)])
        try statement.run()
    }

    static func setCount(_ db: Database, _ name: String, _ count: Int) throws {
        let statement = try db.cachedStatement(updateCount)
        try statement.bind([.integer(Int64(count)), .string(name)])
        try statement.run()
    }

    static func remove(_ db: Database, _ name: String) throws {
        let statement = try db.cachedStatement(delete)
        try statement.bind([.string(name)])
        try statement.run()
    }
}
