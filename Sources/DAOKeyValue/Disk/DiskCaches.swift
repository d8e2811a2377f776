import DAOEngine
import DAOValue
import Foundation

/// What a disk cache is: its settings and how many entries it holds now.
public struct DiskCacheInfo: Sendable, Equatable {
    public var name: String
    public var capacity: Int
    public var encrypted: Bool
    /// Entries stored, expired ones not yet removed included; at most
    /// `capacity + DiskCaches.slack(forCapacity: capacity)`.
    public var count: Int
    /// Seconds after its last write or read an entry is removed by the
    /// background sweep; nil: the server's `--purge-older-than`; 0: never.
    public var maxAge: Double?
    /// The most bytes (keys' UTF-8 and stored values) the cache holds; beyond,
    /// the least recently used entries go. nil: no bound but `capacity`.
    public var maxBytes: Int?

    public init(name: String, capacity: Int, encrypted: Bool, count: Int, maxAge: Double? = nil, maxBytes: Int? = nil) {
        self.name = name
        self.capacity = capacity
        self.encrypted = encrypted
        self.count = count
        self.maxAge = maxAge
        self.maxBytes = maxBytes
    }
}

/// Persistent least-recently-used caches in SQLite: the reference's `APLRUDiskCache`.
///
/// Each database (a `DatabaseLocation`: the common one, a user's, a custom
/// storage's) has its own set of named caches, stored in tables of that same
/// file, next to the DAO modules' tables and reached through the engine's
/// registry (one writer per file, pooled readers). The reference's
/// `userDependent` is the choice of location. Entries survive restarts,
/// recency order included.
///
/// ## Storage layout
///
/// A file format users keep; change it only with a migration.
///
/// - `daogate_lru_caches(name TEXT PRIMARY KEY, capacity INTEGER NOT NULL,
///   encrypted INTEGER NOT NULL, created REAL NOT NULL, count INTEGER NOT NULL
///   DEFAULT 0, max_age REAL, max_bytes INTEGER, bytes INTEGER NOT NULL
///   DEFAULT 0)`: one row per cache. `encrypted` is 0 or 1; `created` is
///   seconds since 1970; `count` is the number of rows in the cache's table,
///   updated in the same transaction as every write to it, so that neither
///   `info` nor the eviction check has to count rows (O(n) in SQLite).
///   `max_age` (seconds, NULL: the server's purge age, 0: never) and
///   `max_bytes` (NULL: no bound) are the cache's policies; `bytes` is what
///   its keys and values hold, kept by three triggers on its table
///   (`"daogate_lru_<name>:insert"`, `:delete`, `:update`).
/// - per cache, `"daogate_lru_<name>"(key TEXT PRIMARY KEY, value BLOB NOT
///   NULL, expire REAL NOT NULL DEFAULT 0, touched INTEGER NOT NULL, used REAL
///   NOT NULL DEFAULT 0)` (`used`: when the entry was last written or read,
///   seconds since 1970, what `max_age` compares with), with
///   the indexes `"daogate_lru_<name>:touched"` on `touched` and
///   `"daogate_lru_<name>:expire"` on `expire WHERE expire > 0`.
///   - `value`: a plain cache's value as compact JSON text (binary data as
///     `{"$base64":"…"}`); an encrypted cache's as the ciphertext of
///     `Cipher.encrypt(value, context: "lru:<name>/<key>")`. Keys are never
///     encrypted. See `DiskCacheCodec`.
///   - `expire`: seconds since 1970 after which the entry is gone; 0 never.
///   - `touched`: the recency stamp, a counter: each write or read of an
///     entry sets it to one more than the largest in the table (read from
///     the end of the index, O(log n)). The smallest is the least recently used.
///
/// Cache names are identifiers (`Names.checkCacheName`), except `caches`,
/// whose table would be the metadata table. SQLite table names ignore case,
/// so two caches whose names differ only in case cannot live in one
/// database (`.cacheConflict`). Tables named `daogate_…` are the storage
/// layers' own: DAO modules cannot use them.
///
/// ## Capacity and eviction
///
/// As in the reference, the real capacity is somewhat larger than `capacity`,
/// so that a full cache does not pay for an eviction on every insert: entries
/// may exceed `capacity` by up to `slack(forCapacity:)`; when a write makes
/// the count larger than `capacity + slack`, the least recently used entries
/// are deleted down to `capacity`, in one statement. Expired entries count
/// until read, evicted or purged (`purgeExpired(in:)`). With `maxBytes`,
/// after every write the least recently used entries beyond that many bytes
/// are deleted too (one read of the catalog row when within it); an entry
/// larger than `maxBytes` alone is refused.
///
/// A file made before `used`, `max_age`, `max_bytes` and `bytes` existed is
/// brought to this layout on its first use by this process, in one
/// transaction: every entry then counts as used at that moment.
///
/// ## Concurrency and errors
///
/// Every write runs in one immediate transaction on the file's writer: all
/// or nothing. `get` writes too (it marks the entry most recent), so it runs
/// on the writer; `info` and `list` read on a pooled reader. Operations other
/// than `create` do not create a database file that does not exist: its
/// caches are unknown. Errors are `KeyValueError`s for what the caller sent
/// and `EngineError`s for the files (busy, a failed statement, a value that
/// does not decrypt: `.encryption`).
public final class DiskCaches: Sendable {
    public let engine: Engine
    /// The cipher of encrypted caches; without one, they cannot be created or used.
    public let cipher: Cipher?
    /// What expiry compares with.
    public let clock: ExpiryClock
    /// The largest capacity a cache may have.
    public let maximumCapacity: Int

    public init(engine: Engine, cipher: Cipher?, clock: ExpiryClock = .system, maximumCapacity: Int = 1_000_000) {
        self.engine = engine
        self.cipher = cipher
        self.clock = clock
        self.maximumCapacity = max(1, maximumCapacity)
    }

    /// How many entries a cache may hold beyond its capacity before it evicts:
    /// a tenth of the capacity, at least 1.
    ///
    /// Eviction then runs once per `slack` inserts into a full cache, and
    /// deletes `slack + 1` entries at a time, instead of one per insert.
    public static func slack(forCapacity capacity: Int) -> Int { max(1, capacity / 10) }

    // MARK: Caches

    /// Creates a cache (`initWithName:capacity:userDependent:crypted:`), or
    /// changes the capacity of the existing one.
    ///
    /// A smaller capacity than the cache's count evicts the least recently
    /// used entries down to it at once. An existing cache created with the
    /// other `encrypted` setting is a `.cacheConflict`: the values already
    /// stored one way cannot silently change. Capacity is 1 to
    /// `maximumCapacity`; `encrypted` needs a cipher (`.encryptionUnavailable`).
    /// - Returns: the cache, whether it was created, and how many entries a
    ///   smaller capacity evicted.
    ///
    /// `maxAge` (seconds; nil: the server's purge age; 0: never) and
    /// `maxBytes` (nil: no bound) are the cache's age and size policies;
    /// each call sets them to what it gives. A smaller `maxBytes` than the
    /// cache holds evicts at once too.
    @discardableResult
    public func create(_ name: String, in location: DatabaseLocation, capacity: Int, encrypted: Bool,
                       maxAge: Double? = nil, maxBytes: Int? = nil) throws
        -> (info: DiskCacheInfo, created: Bool, evicted: Int) {
        let table = try DiskCacheTable(checking: name)
        guard capacity >= 1 else { throw KeyValueError(.invalidValue, "a cache's capacity is at least 1, not \(capacity)") }
        if let maxAge, !(maxAge.isFinite && maxAge >= 0) {
            throw KeyValueError(.invalidValue, "maxAge is a number of seconds, 0 for never; not \(maxAge)")
        }
        if let maxBytes, maxBytes < 1 { throw KeyValueError(.invalidValue, "maxBytes is at least 1, not \(maxBytes)") }
        guard capacity <= maximumCapacity else {
            throw KeyValueError(.limitExceeded, "a cache's capacity is at most \(maximumCapacity), not \(capacity)")
        }
        if encrypted, cipher == nil { throw Self.noCipher(name) }
        let now = clock.now()
        return try write(location) { db in
            try DiskCacheCatalog.ensureTable(db)
            if var record = try DiskCacheCatalog.record(db, name) {
                guard record.encrypted == encrypted else {
                    throw KeyValueError(
                        .cacheConflict,
                        "cache '\(name)' exists \(record.encrypted ? "encrypted" : "not encrypted"); its values cannot change how they are stored: delete it first")
                }
                var evicted = 0
                let count = record.count
                if record.capacity != capacity {
                    try DiskCacheCatalog.setCapacity(db, name, capacity)
                    record.capacity = capacity
                    if record.count > capacity {
                        evicted = try Self.evict(db, table, record: &record, downTo: capacity)
                    }
                }
                if record.maxAge != maxAge || record.maxBytes != maxBytes {
                    try DiskCacheCatalog.setPolicy(db, name, maxAge: maxAge, maxBytes: maxBytes)
                    record.maxAge = maxAge
                    record.maxBytes = maxBytes
                    evicted += try Self.evictBeyondBytes(db, table, record: &record)
                }
                if record.count != count { try DiskCacheCatalog.setCount(db, name, record.count) }
                return (DiskCacheInfo(name: name, capacity: capacity, encrypted: encrypted, count: record.count,
                                      maxAge: maxAge, maxBytes: maxBytes), false, evicted)
            }
            if let other = try DiskCacheCatalog.nameIgnoringCase(db, name) {
                throw KeyValueError(
                    .cacheConflict, "cache '\(other)' exists: names that differ only in case would share one table")
            }
            try db.execute(table.createTable)
            try db.execute(table.createTouchedIndex)
            try db.execute(table.createExpireIndex)
            for trigger in table.createTriggers { try db.execute(trigger) }
            try DiskCacheCatalog.add(db, name, capacity: capacity, encrypted: encrypted, created: now)
            if maxAge != nil || maxBytes != nil { try DiskCacheCatalog.setPolicy(db, name, maxAge: maxAge, maxBytes: maxBytes) }
            return (DiskCacheInfo(name: name, capacity: capacity, encrypted: encrypted, count: 0, maxAge: maxAge, maxBytes: maxBytes),
                    true, 0)
        }
    }

    /// A cache's settings and count, or `.unknownCache`.
    public func info(_ name: String, in location: DatabaseLocation) throws -> DiskCacheInfo {
        _ = try DiskCacheTable(checking: name)
        let record = try engine.withExistingDatabase(location) { database in
            try migrate(database)
            return try database.pool.read { db in try DiskCacheCatalog.existingRecord(db, name) }
        }
        guard let record else { throw Self.unknown(name) }
        return DiskCacheInfo(name: name, capacity: record.capacity, encrypted: record.encrypted, count: record.count,
                             maxAge: record.maxAge, maxBytes: record.maxBytes)
    }

    /// Every cache of the location's database, sorted by name (byte order).
    public func list(in location: DatabaseLocation) throws -> [DiskCacheInfo] {
        try engine.withExistingDatabase(location) { database in
            try migrate(database)
            return try database.pool.read { db in try DiskCacheCatalog.all(db) }
        } ?? []
    }

    /// Deletes a cache: its table, indexes and metadata row.
    /// - Returns: whether there was such a cache (an unknown cache is not an error here).
    @discardableResult
    public func delete(_ name: String, in location: DatabaseLocation) throws -> Bool {
        let table = try DiskCacheTable(checking: name)
        return try writeExisting(location) { db in
            guard try DiskCacheCatalog.record(db, name) != nil else { return false }
            try db.execute(table.dropTable)
            try DiskCacheCatalog.remove(db, name)
            return true
        } ?? false
    }

    // MARK: Helpers

    /// Runs `body` in an immediate transaction on the location's writer,
    /// opening (and creating) the file if needed.
    func write<T>(_ location: DatabaseLocation, _ body: (Database) throws -> T) throws -> T {
        try engine.withOpenDatabase(location) { database in
            try migrate(database)
            return try Self.transaction(database, body)
        }
    }

    /// Brings the file's caches to today's layout once per open file (`DiskCacheCatalog.migrate`).
    func migrate(_ database: OpenDatabase) throws {
        try database.ensure("daogate_lru_caches:policies") {
            let now = clock.now()
            try Self.transaction(database) { db in try DiskCacheCatalog.migrate(db, now: now) }
        }
    }

    /// As `write`, in a database that exists: nil, creating no file, when
    /// there is none (reads and deletions there would only create it, empty).
    func writeExisting<T>(_ location: DatabaseLocation, _ body: (Database) throws -> T) throws -> T? {
        try engine.withExistingDatabase(location) { database in
            try migrate(database)
            return try Self.transaction(database, body)
        }
    }

    static func transaction<T>(_ database: OpenDatabase, _ body: (Database) throws -> T) throws -> T {
        try database.pool.write { db in try db.inTransaction(.immediate) { try body(db) } }
    }

    /// Deletes least recently used entries until `downTo` remain, in one
    /// statement; sets `record.count` (the caller stores it).
    ///
    /// The rows are counted first rather than trusting the stored count, so a
    /// count that drifted (a table edited by hand) is repaired here; this runs
    /// at most once per `slack` inserts, which keeps its cost per insert small.
    static func evict(_ db: Database, _ table: DiskCacheTable, record: inout DiskCacheRecord, downTo target: Int) throws -> Int {
        let counting = try db.cachedStatement(table.count)
        _ = try counting.step()
        let rows = Int(counting.int64(at: 0))
        _ = try counting.step()
        var evicted = 0
        if rows > target {
            let eviction = try db.cachedStatement(table.evictOldest)
            try eviction.bind([.integer(Int64(rows - target))])
            evicted = try eviction.run()
        }
        record.count = rows - evicted
        return evicted
    }

    /// Evicts when `record.count` is beyond capacity and slack (see `evict(_:_:record:downTo:)`),
    /// or the bytes beyond `maxBytes`.
    static func evictIfFull(_ db: Database, _ table: DiskCacheTable, record: inout DiskCacheRecord) throws -> Int {
        var evicted = 0
        if record.count > record.capacity + slack(forCapacity: record.capacity) {
            evicted = try evict(db, table, record: &record, downTo: record.capacity)
        }
        return evicted + (try evictBeyondBytes(db, table, record: &record))
    }

    /// With `maxBytes`, deletes the least recently used entries while the
    /// cache holds more bytes than it; counts them out of `record`. The byte
    /// count is kept by triggers, so the check costs one read of the catalog row.
    static func evictBeyondBytes(_ db: Database, _ table: DiskCacheTable, record: inout DiskCacheRecord) throws -> Int {
        guard let maxBytes = record.maxBytes, try DiskCacheCatalog.bytes(db, table.name) > maxBytes else { return 0 }
        let eviction = try db.cachedStatement(table.evictBeyondBytes)
        try eviction.bind([.integer(Int64(maxBytes))])
        let evicted = try eviction.run()
        record.count -= evicted
        return evicted
    }

    static func unknown(_ name: String) -> KeyValueError {
        KeyValueError(.unknownCache, "there is no disk cache named '\(name)' here")
    }

    static func noCipher(_ name: String) -> KeyValueError {
        KeyValueError(.encryptionUnavailable, "encrypted cache '\(name)' needs a key, and the server has none: \(CipherKey.howToConfigure)")
    }
}
