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
    init(checking name: String) throws(KeyValueError) {
        try Names.checkCacheName(name)
        guard name.lowercased() != "caches" else {
            throw KeyValueError(.invalidName, "'\(name)' cannot name a cache: daogate_lru_caches is the caches' own list")
        }
        self.name = name
        self.table = "\"daogate_lru_\(name)\""
    }

    var createTable: String {
        "CREATE TABLE \(table) (key TEXT PRIMARY KEY, value BLOB NOT NULL, expire REAL NOT NULL DEFAULT 0, touched INTEGER NOT NULL, used REAL NOT NULL DEFAULT 0)"
    }

    /// The bytes an entry holds, as `maxBytes` counts them: its key's UTF-8 and its stored value.
    static func size(_ row: String) -> String { "(length(CAST(\(row).key AS BLOB)) + length(CAST(\(row).value AS BLOB)))" }

    /// Triggers that keep the catalog's `bytes` in step with the table, whatever the statement.
    var createTriggers: [String] {
        let row = "UPDATE daogate_lru_caches SET bytes = bytes"
        return [
            "CREATE TRIGGER \"daogate_lru_\(name):insert\" AFTER INSERT ON \(table) BEGIN \(row) + \(Self.size("new")) WHERE name = '\(name)'; END",
            "CREATE TRIGGER \"daogate_lru_\(name):delete\" AFTER DELETE ON \(table) BEGIN \(row) - \(Self.size("old")) WHERE name = '\(name)'; END",
            "CREATE TRIGGER \"daogate_lru_\(name):update\" AFTER UPDATE OF key, value ON \(table) BEGIN \(row) + \(Self.size("new")) - \(Self.size("old")) WHERE name = '\(name)'; END",
        ]
    }

    /// For a table made before `used`: the column, every entry used now (the parameter), the triggers.
    var migrate: [String] {
        ["ALTER TABLE \(table) ADD COLUMN used REAL NOT NULL DEFAULT 0", "UPDATE \(table) SET used = ?"] + createTriggers
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

    /// Marks a live entry most recent, used now, and returns its stored value. Parameters: key, now.
    var touch: String {
        "UPDATE \(table) SET touched = \(nextTouched), used = ?2 WHERE key = ?1 AND (expire = 0 OR expire > ?2) RETURNING value"
    }

    /// Replaces an entry and marks it most recent. Parameters: key, value, expire, now.
    var update: String { "UPDATE \(table) SET value = ?2, expire = ?3, used = ?4, touched = \(nextTouched) WHERE key = ?1" }

    /// Adds an entry as the most recent. Parameters: key, value, expire, now.
    var insert: String { "INSERT INTO \(table) (key, value, expire, used, touched) VALUES (?1, ?2, ?3, ?4, \(nextTouched))" }

    /// Deletes the entries last used at or before a time (the parameter): the cache's `maxAge`. Returns their bytes.
    var deleteUnused: String { "DELETE FROM \(table) WHERE used <= ? RETURNING \(Self.size(table))" }

    /// Deletes the least recently used entries beyond a number of bytes (the parameter): the most recent
    /// entries whose bytes add up to at most it stay.
    var evictBeyondBytes: String {
        """
        DELETE FROM \(table) WHERE key IN (SELECT key FROM (SELECT key, sum(\(Self.size(table))) OVER (ORDER BY touched DESC) AS kept
          FROM \(table)) WHERE kept > ?)
        """
    }

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
    /// Seconds after its last use an entry is removed by the sweep; nil: the server's age; 0: never.
    var maxAge: Double? = nil
    /// The most bytes (keys and values) the cache holds; nil: no bound.
    var maxBytes: Int? = nil
    /// Entries in the table, kept in step with it by every write.
    var count: Int
}

/// The metadata table, `daogate_lru_caches`: one row per disk cache of the database.
enum DiskCacheCatalog {
    static let createTable = """
        CREATE TABLE IF NOT EXISTS daogate_lru_caches (name TEXT PRIMARY KEY, capacity INTEGER NOT NULL, \
        encrypted INTEGER NOT NULL, created REAL NOT NULL, count INTEGER NOT NULL DEFAULT 0, \
        max_age REAL, max_bytes INTEGER, bytes INTEGER NOT NULL DEFAULT 0)
        """
    /// The columns a catalog made before the age and size policies lacks.
    static let migration = ["ALTER TABLE daogate_lru_caches ADD COLUMN max_age REAL",
                            "ALTER TABLE daogate_lru_caches ADD COLUMN max_bytes INTEGER",
                            "ALTER TABLE daogate_lru_caches ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0"]
    private static let hasBytes = "SELECT 1 FROM pragma_table_info('daogate_lru_caches') WHERE name = 'bytes'"
    private static let selectBytes = "SELECT bytes FROM daogate_lru_caches WHERE name = ?"
    private static let updatePolicy = "UPDATE daogate_lru_caches SET max_age = ?, max_bytes = ? WHERE name = ?"
    private static let exists = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'daogate_lru_caches'"
    private static let select = "SELECT capacity, encrypted, count, max_age, max_bytes FROM daogate_lru_caches WHERE name = ?"
    private static let selectIgnoringCase = "SELECT name FROM daogate_lru_caches WHERE name = ? COLLATE NOCASE"
    private static let selectAll = "SELECT name, capacity, encrypted, count, max_age, max_bytes FROM daogate_lru_caches ORDER BY name"
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
                                     maxAge: optionalDouble(statement, 3), maxBytes: optionalInteger(statement, 4),
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
                                        encrypted: statement.int64(at: 2) != 0, count: Int(statement.int64(at: 3)),
                                        maxAge: optionalDouble(statement, 4), maxBytes: optionalInteger(statement, 5)))
        }
        return caches
    }

    static func add(_ db: Database, _ name: String, capacity: Int, encrypted: Bool, created: Double) throws {
        let statement = try db.cachedStatement(insert)
        try statement.bind([.string(name), .integer(Int64(capacity)), .integer(encrypted ? 1 : 0), .double(created)])
        try statement.run()
    }

    /// A column that may be NULL, as a number.
    /// An integer column read as stored (through a double, Int64.max would round beyond Int's range and trap).
    private static func optionalInteger(_ statement: Statement, _ column: Int) -> Int? {
        guard case .integer(let integer) = statement.value(at: column) else { return nil }
        return Int(integer)
    }

    private static func optionalDouble(_ statement: Statement, _ column: Int) -> Double? {
        guard case .integer(let integer) = statement.value(at: column) else {
            if case .double(let double) = statement.value(at: column) { return double }
            return nil
        }
        return Double(integer)
    }

    /// Brings a catalog (and its caches' tables) made before the age and size
    /// policies to today's layout: the columns, every entry used `now`, the
    /// byte counts and their triggers. Nothing when there is no catalog or it is current.
    static func migrate(_ db: Database, now: Double) throws {
        let probe = try db.cachedStatement(exists)
        let found = try probe.step()
        if found { _ = try probe.step() }
        guard found else { return }
        let current = try db.cachedStatement(hasBytes)
        let isCurrent = try current.step()
        if isCurrent { _ = try current.step() }
        guard !isCurrent else { return }
        for statement in migration { try db.execute(statement) }
        for cache in try all(db) {
            guard let table = try? DiskCacheTable(checking: cache.name) else { continue }
            for sql in table.migrate {
                let statement = try db.makeStatement(sql)
                if sql.hasPrefix("UPDATE") { try statement.bind([.double(now)]) }
                try statement.run()
            }
            let bytes = try db.makeStatement(
                "UPDATE daogate_lru_caches SET bytes = (SELECT coalesce(sum(\(DiskCacheTable.size(table.table))), 0) FROM \(table.table)) WHERE name = ?")
            try bytes.bind([.string(cache.name)])
            try bytes.run()
        }
    }

    /// The bytes a cache's entries hold now.
    static func bytes(_ db: Database, _ name: String) throws -> Int {
        let statement = try db.cachedStatement(selectBytes)
        try statement.bind([.string(name)])
        guard try statement.step() else { return 0 }
        let bytes = Int(statement.int64(at: 0))
        _ = try statement.step()
        return bytes
    }

    static func setPolicy(_ db: Database, _ name: String, maxAge: Double?, maxBytes: Int?) throws {
        let statement = try db.cachedStatement(updatePolicy)
        try statement.bind([maxAge.map(Value.double) ?? .null, maxBytes.map { .integer(Int64($0)) } ?? .null, .string(name)])
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
