import DAOEngine
import DAOValue

/// Entries: the reference's `setObject:forKey:expire:`, `objectForKey:`,
/// `removeObjectForKey:`, `removeAllObjects`, `addObjects:`,
/// `removeObjectsWithSqlLike:`, `removeObjectsWithKeys:`. Every one of them
/// on a cache that does not exist is `KeyValueError(.unknownCache)`.
extension DiskCaches {
    /// The longest `LIKE` pattern taken, in bytes: room for any key with every character escaped.
    public static let maximumPatternLength = 2 * Names.maximumKeyLength

    /// Stores `value` under `key` as the most recent entry (`setObject:forKey:expire:`).
    ///
    /// `expire` is a time in seconds since 1970 after which the entry is gone,
    /// or 0 for never. `.null` deletes the key (as a nil object does in the
    /// reference), and so does an `expire` already reached: nothing is stored.
    /// - Returns: how many least recently used entries the insert evicted.
    @discardableResult
    public func set(_ name: String, in location: DatabaseLocation, key: String, value: Value, expire: Double = 0) throws -> Int {
        let table = try DiskCacheTable(checking: name)
        try Names.checkKey(key)
        try Self.checkExpire(expire)
        let stale = value.isNull || (expire > 0 && expire <= clock.now())
        return try update(location, table) { db, record in
            if stale {
                try Self.deleteKeys(db, table, [key], record: &record)
                return 0
            }
            try store(db, table, record: &record, key: key, value: value, expire: expire)
            return try Self.evictIfFull(db, table, record: &record)
        }
    }

    /// The value under `key`, nil when there is none (`objectForKey:`); marks the entry most recent.
    ///
    /// An entry whose `expire` is reached is deleted and nil returned. A value
    /// that does not decrypt is `EngineError(.encryption)`; it stays, marked
    /// most recent (values are decoded after the transaction, to keep the
    /// cipher's work off the file's one writer).
    public func get(_ name: String, in location: DatabaseLocation, key: String) throws -> Value? {
        let table = try DiskCacheTable(checking: name)
        try Names.checkKey(key)
        let now = clock.now()
        let found: (stored: [UInt8], encrypted: Bool)? = try update(location, table) { db, record in
            if record.encrypted, cipher == nil { throw Self.noCipher(name) }
            // One statement finds a live entry, stamps it most recent and returns its value.
            let touch = try db.cachedStatement(table.touch)
            try touch.bind([.string(key), .double(now)])
            if try touch.step() {
                let stored = touch.bytes(at: 0)
                while try touch.step() {}
                return (stored, record.encrypted)
            }
            // Not live: gone, or expired and deleted now.
            try Self.deleteKeys(db, table, [key], record: &record)
            return nil
        }
        guard let found else { return nil }
        // Decoded after the transaction, off the writer.
        return try DiskCacheCodec.decode(found.stored, encrypted: found.encrypted, cipher: cipher, cache: name, key: key)
    }

    /// Deletes the entry under `key` (`removeObjectForKey:`).
    /// - Returns: whether there was one.
    @discardableResult
    public func remove(_ name: String, in location: DatabaseLocation, key: String) throws -> Bool {
        try remove(name, in: location, keys: [key]) > 0
    }

    /// Deletes every entry (`removeAllObjects`); the cache stays.
    /// - Returns: how many there were.
    @discardableResult
    public func removeAll(_ name: String, in location: DatabaseLocation) throws -> Int {
        let table = try DiskCacheTable(checking: name)
        return try update(location, table) { db, record in
            let removed = try db.cachedStatement(table.deleteAll).run()
            record.count = 0
            return removed
        }
    }

    /// Stores several entries in one transaction (`addObjects:`), never
    /// expiring, in order: the last is the most recent; a `.null` value
    /// deletes its key.
    ///
    /// Eviction runs once, after the whole batch: a batch larger than the
    /// capacity keeps its last `capacity` entries.
    /// - Returns: how many entries were evicted.
    @discardableResult
    public func add(_ name: String, in location: DatabaseLocation, entries: [(key: String, value: Value)]) throws -> Int {
        let table = try DiskCacheTable(checking: name)
        for entry in entries { try Names.checkKey(entry.key) }
        return try update(location, table) { db, record in
            for (key, value) in entries {
                if value.isNull {
                    try Self.deleteKeys(db, table, [key], record: &record)
                } else {
                    try store(db, table, record: &record, key: key, value: value, expire: 0)
                }
            }
            return try Self.evictIfFull(db, table, record: &record)
        }
    }

    /// Deletes the entries whose key matches an SQLite `LIKE` pattern (`removeObjectsWithSqlLike:`).
    ///
    /// `%` matches any run of characters (none included), `_` any one
    /// character; letters match either case for ASCII only (`a` matches `A`,
    /// `é` does not match `É`), as SQLite's `LIKE`. With `escape`, that
    /// character makes the next one literal (`escape: "\\"` and `a\%` match
    /// the key `a%` only). The pattern is 1 to `maximumPatternLength`
    /// characters (code points, as JSON Schema counts).
    /// - Returns: how many entries were deleted.
    @discardableResult
    public func remove(_ name: String, in location: DatabaseLocation, like pattern: String, escape: Unicode.Scalar? = nil) throws -> Int {
        let table = try DiskCacheTable(checking: name)
        let length = pattern.unicodeScalars.count
        guard length >= 1, length <= Self.maximumPatternLength else {
            throw KeyValueError(.invalidValue, "a LIKE pattern is 1 to \(Self.maximumPatternLength) characters, not \(length)")
        }
        return try update(location, table) { db, record in
            let removed: Int
            if let escape {
                let statement = try db.cachedStatement(table.deleteLikeEscaped)
                try statement.bind([.string(pattern), .string(String(Character(escape)))])
                removed = try statement.run()
            } else {
                let statement = try db.cachedStatement(table.deleteLike)
                try statement.bind([.string(pattern)])
                removed = try statement.run()
            }
            record.count -= removed
            return removed
        }
    }

    /// Deletes the entries under `keys` (`removeObjectsWithKeys:`), in one transaction.
    /// - Returns: how many there were.
    @discardableResult
    public func remove(_ name: String, in location: DatabaseLocation, keys: [String]) throws -> Int {
        let table = try DiskCacheTable(checking: name)
        for key in keys { try Names.checkKey(key) }
        return try update(location, table) { db, record in
            try Self.deleteKeys(db, table, keys, record: &record)
        }
    }

    /// Deletes the expired entries of every cache of the location's database, in one transaction.
    /// - Returns: how many entries, and the bytes they held: their keys'
    ///   UTF-8 and their stored values (JSON text or ciphertext), not SQLite's
    ///   own overhead.
    @discardableResult
    public func purgeExpired(in location: DatabaseLocation) throws -> (entries: Int, bytes: Int) {
        try engine.withExistingDatabase(location) { database in try purgeExpired(in: database) } ?? (0, 0)
    }

    /// As `purgeExpired(in:)`, in a database already open (the background
    /// sweep's visit); with `maxAge` (seconds), also the entries not written
    /// or read for that long, in caches without a `maxAge` of their own
    /// (a cache's own 0: never).
    @discardableResult
    public func purgeExpired(in database: OpenDatabase, maxAge: Double? = nil) throws -> (entries: Int, bytes: Int) {
        let now = clock.now()
        try migrate(database)
        return try Self.transaction(database) { db in
            var entries = 0
            var bytes = 0
            for cache in try DiskCacheCatalog.all(db) {
                guard let table = try? DiskCacheTable(checking: cache.name) else { continue }
                var removed = 0
                let purge = try db.cachedStatement(table.deleteExpired)
                try purge.bind([.double(now)])
                while try purge.step() {
                    removed += 1
                    bytes += Int(purge.int64(at: 0))
                }
                if let age = cache.maxAge ?? maxAge, age > 0 {
                    let unused = try db.cachedStatement(table.deleteUnused)
                    try unused.bind([.double(now - age)])
                    while try unused.step() {
                        removed += 1
                        bytes += Int(unused.int64(at: 0))
                    }
                }
                if removed > 0 {
                    try DiskCacheCatalog.setCount(db, cache.name, cache.count - removed)
                    entries += removed
                }
            }
            return (entries, bytes)
        }
    }

    // MARK: Helpers

    /// Runs `body` in a write transaction with the cache's metadata row
    /// (`.unknownCache` without one), and stores the count `body` leaves in
    /// it once, at the end: a batch of inserts writes the row once.
    private func update<T>(_ location: DatabaseLocation, _ table: DiskCacheTable,
                           _ body: (Database, inout DiskCacheRecord) throws -> T) throws -> T {
        let result = try writeExisting(location) { db in
            var record = try DiskCacheCatalog.existingRecord(db, table.name)
            let count = record.count
            let result = try body(db, &record)
            if record.count != count { try DiskCacheCatalog.setCount(db, table.name, record.count) }
            return result
        }
        guard let result else { throw Self.unknown(table.name) }
        return result
    }

    /// Upserts an entry as the most recent and counts it in `record` (eviction is the caller's).
    private func store(_ db: Database, _ table: DiskCacheTable, record: inout DiskCacheRecord,
                       key: String, value: Value, expire: Double) throws {
        let stored = try DiskCacheCodec.encode(value, encrypted: record.encrypted, cipher: cipher, cache: table.name, key: key)
        if let maxBytes = record.maxBytes {
            let valueBytes = switch stored {
            case .string(let text): text.utf8.count
            case .blob(let bytes): bytes.count
            default: 0
            }
            let size = key.utf8.count + valueBytes
            guard size <= maxBytes else {
                throw KeyValueError(.limitExceeded, "the entry takes \(size) bytes, more than cache '\(table.name)' holds in all (maxBytes \(maxBytes))")
            }
        }
        let now = Value.double(clock.now())
        let update = try db.cachedStatement(table.update)
        try update.bind([.string(key), stored, .double(expire), now])
        guard try update.run() == 0 else { return }
        let insert = try db.cachedStatement(table.insert)
        try insert.bind([.string(key), stored, .double(expire), now])
        try insert.run()
        record.count += 1
    }

    /// Deletes `keys`' entries, and counts them out of `record`.
    @discardableResult
    static func deleteKeys(_ db: Database, _ table: DiskCacheTable, _ keys: [String], record: inout DiskCacheRecord) throws -> Int {
        guard !keys.isEmpty else { return 0 }
        let delete = try db.cachedStatement(table.deleteKey)
        var removed = 0
        for key in keys {
            try delete.bind([.string(key)])
            removed += try delete.run()
        }
        record.count -= removed
        return removed
    }

    private static func checkExpire(_ expire: Double) throws(KeyValueError) {
        guard expire.isFinite, expire >= 0 else {
            throw KeyValueError(.invalidValue, "expire is a time in seconds since 1970, or 0 for never; not \(expire)")
        }
    }
}
