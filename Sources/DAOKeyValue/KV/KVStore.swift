import DAOEngine
import DAOValue

/// The type a key-value entry keeps, as the reference's typed setters and
/// getters (`setInteger`, `setLongLong`, `setBool`, `setDouble`, `setString`,
/// `setObject`/`saveJsonObject`, `NSData`).
public enum KVType: String, Sendable, CaseIterable {
    /// `NSInteger`: 64 bits, as on every 64-bit system.
    case integer
    /// `long long`: 64 bits.
    case longLong
    case bool
    case double
    case string
    /// A JSON object or array.
    case json
    /// Bytes, base64 in JSON.
    case binary

    /// The type a JSON value is taken for when none is given; binary has to be asked for.
    public static func inferred(from value: Value) -> KVType? {
        switch value {
        case .integer: .integer
        case .double: .double
        case .bool: .bool
        case .string: .string
        case .array, .object: .json
        case .blob: .binary
        case .null: nil
        }
    }

    /// Whether an entry of this type may be read as `requested`: the same
    /// type, or the two 64-bit integer types, which the reference treats alike.
    public func reads(as requested: KVType) -> Bool {
        self == requested || (isInteger && requested.isInteger)
    }

    var isInteger: Bool { self == .integer || self == .longLong }
}

/// One entry: its typed value and flags.
public struct KVEntry: Sendable, Equatable {
    public var type: KVType
    public var value: Value
    public var encrypted: Bool
    /// Whether a purge removes it (the reference's `APDataOptionPurgeable`).
    public var purgeable: Bool
    /// When it was last set, in seconds since 1970.
    public var updated: Double

    public init(type: KVType, value: Value, encrypted: Bool, purgeable: Bool, updated: Double) {
        self.type = type
        self.value = value
        self.encrypted = encrypted
        self.purgeable = purgeable
        self.updated = updated
    }
}

/// A key's entry without its value, as a listing shows it.
public struct KVKey: Sendable, Equatable {
    public var key: String
    public var type: KVType
    public var encrypted: Bool
    public var purgeable: Bool
    public var updated: Double

    public init(key: String, type: KVType, encrypted: Bool, purgeable: Bool, updated: Double) {
        self.key = key
        self.type = type
        self.encrypted = encrypted
        self.purgeable = purgeable
        self.updated = updated
    }
}

/// The key-value store (APSharedPreferences): typed values under (business,
/// key) in a storage's common database or a user's own, next to the DAO
/// modules' tables.
///
/// One table per database, a file format users keep:
///
/// ```sql
/// CREATE TABLE daogate_kv (business TEXT NOT NULL, key TEXT NOT NULL,
///   type TEXT NOT NULL, value, encrypted INTEGER NOT NULL, purgeable INTEGER NOT NULL,
///   updated REAL NOT NULL, PRIMARY KEY (business, key)) WITHOUT ROWID
/// ```
///
/// `value` holds integers and booleans as INTEGER, doubles as REAL, strings
/// and JSON (compact text) as TEXT, binary as BLOB. An encrypted entry's
/// value is the `Cipher` ciphertext of the typed value under the context
/// `kv:<business>/<key>`, so a ciphertext moved to another key does not decrypt.
public final class KVStore: Sendable {
    let engine: Engine
    let cipher: Cipher?
    let clock: ExpiryClock

    static let table = "daogate_kv"
    static let create = """
        CREATE TABLE IF NOT EXISTS daogate_kv (business TEXT NOT NULL, key TEXT NOT NULL, type TEXT NOT NULL, value,
          encrypted INTEGER NOT NULL, purgeable INTEGER NOT NULL, updated REAL NOT NULL,
          PRIMARY KEY (business, key)) WITHOUT ROWID
        """

    public init(engine: Engine, cipher: Cipher?, clock: ExpiryClock = .system) {
        self.engine = engine
        self.cipher = cipher
        self.clock = clock
    }

    /// The entry under (business, key), nil when there is none.
    public func get(_ business: String, _ key: String, in location: DatabaseLocation) throws -> KVEntry? {
        try Names.checkBusiness(business)
        try Names.checkKey(key)
        // No database, no entry: a read creates no file.
        return try engine.withExistingDatabase(location) { database in
            try prepare(database)
            return try database.pool.read { db in
                let statement = try db.cachedStatement(
                    "SELECT type, value, encrypted, purgeable, updated FROM daogate_kv WHERE business = ? AND key = ?")
                defer { statement.reset() }
                try statement.bind([.string(business), .string(key)])
                guard try statement.step() else { return nil }
                return try entry(statement, business: business, key: key)
            }
        } ?? nil
    }

    /// Sets the entry under (business, key) and returns it as stored.
    ///
    /// `type` nil takes the value's own (`KVType.inferred`). The value must be
    /// of the type: an integer (or its decimal text, or an integral decimal)
    /// for the integer types, a boolean, a number, a string, an object or
    /// array for `json`, base64 text (or `{"$base64": …}`) for `binary`.
    @discardableResult
    public func set(_ business: String, _ key: String, value: Value, type: KVType?, encrypted: Bool, purgeable: Bool,
                    in location: DatabaseLocation) throws -> KVEntry {
        try Names.checkBusiness(business)
        try Names.checkKey(key)
        guard let type = type ?? KVType.inferred(from: value) else {
            throw KeyValueError(.invalidValue, "a value cannot be null: delete the key instead")
        }
        let typed = try Self.conform(value, to: type)
        let stored: Value
        if encrypted {
            guard let cipher else {
                throw KeyValueError(.encryptionUnavailable, "encrypted values need a key, and the server has none: \(CipherKey.howToConfigure)")
            }
            stored = try cipher.encryptStored(typed, context: Self.context(business, key), what: "kv \(business)/\(key)")
        } else {
            stored = Self.storedForm(typed, type)
        }
        let entry = KVEntry(type: type, value: typed, encrypted: encrypted, purgeable: purgeable, updated: clock.now())
        try engine.withOpenDatabase(location) { database in
            try prepare(database)
            try database.pool.write { db in
                let statement = try db.cachedStatement("""
                    INSERT OR REPLACE INTO daogate_kv (business, key, type, value, encrypted, purgeable, updated)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
                try statement.bind([.string(business), .string(key), .string(type.rawValue), stored,
                                    .bool(encrypted), .bool(purgeable), .double(entry.updated)])
                _ = try statement.run()
            }
        }
        return entry
    }

    /// Removes one entry; whether there was one.
    public func remove(_ business: String, _ key: String, in location: DatabaseLocation) throws -> Bool {
        try Names.checkBusiness(business)
        try Names.checkKey(key)
        return try delete(location, "DELETE FROM daogate_kv WHERE business = ? AND key = ?", [.string(business), .string(key)]) > 0
    }

    /// Removes every entry of a business; how many there were.
    public func removeBusiness(_ business: String, in location: DatabaseLocation) throws -> Int {
        try Names.checkBusiness(business)
        return try delete(location, "DELETE FROM daogate_kv WHERE business = ?", [.string(business)])
    }

    /// The keys of a business in key order, without their values; with a
    /// prefix, only the keys that start with it.
    public func keys(_ business: String, prefix: String? = nil, in location: DatabaseLocation) throws -> [KVKey] {
        try list(business, prefix: prefix, values: false, in: location).entries.map(\.key)
    }

    /// A page of a business's entries in key order (byte order of their UTF-8), the reference's
    /// `SharedPreferences.getAll` in pages: those whose key starts with `prefix`, after the key `after`, at
    /// most `limit` (nil: all), each with its value (decrypted, as `get` gives it) when `values` is set.
    /// `more` says whether entries follow the page (the next page starts after its last key).
    public func list(_ business: String, prefix: String? = nil, after: String? = nil, limit: Int? = nil, values: Bool,
                     in location: DatabaseLocation) throws -> (entries: [(key: KVKey, value: Value?)], more: Bool) {
        try Names.checkBusiness(business)
        return try engine.withExistingDatabase(location) { database in
            try prepare(database)
            return try database.pool.read { db in
                // Keys with a prefix are contiguous in byte order, from the prefix itself on.
                let statement = try db.cachedStatement(values
                    ? "SELECT type, value, encrypted, purgeable, updated, key FROM daogate_kv WHERE business = ? AND key >= ? AND key > ? ORDER BY key"
                    : "SELECT type, NULL, encrypted, purgeable, updated, key FROM daogate_kv WHERE business = ? AND key >= ? AND key > ? ORDER BY key")
                defer { statement.reset() }
                try statement.bind([.string(business), .string(prefix ?? ""), .string(after ?? "")])
                var entries: [(key: KVKey, value: Value?)] = []
                while try statement.step() {
                    let key = statement.string(at: 5)
                    if let prefix, !key.utf8.starts(with: prefix.utf8) { break }
                    if let limit, entries.count == limit { return (entries, true) }
                    let listed = KVKey(key: key, type: try Self.type(statement.string(at: 0)), encrypted: statement.int64(at: 2) != 0,
                                       purgeable: statement.int64(at: 3) != 0, updated: statement.double(at: 4))
                    entries.append((listed, values ? try entry(statement, business: business, key: key).value : Optional<Value>.none))
                }
                return (entries, false)
            }
        } ?? ([], false)
    }

    /// Removes the purgeable entries of a database: how many, and the bytes
    /// their keys and values held.
    public func purge(in location: DatabaseLocation) throws -> (entries: Int, bytes: Int) {
        try engine.withExistingDatabase(location) { database in
            try prepare(database)
            return try database.pool.write { db in
                try db.inTransaction {
                    let size = try db.cachedStatement("""
                        SELECT count(*), coalesce(sum(length(CAST(business AS BLOB)) + length(CAST(key AS BLOB))
                          + coalesce(length(CAST(value AS BLOB)), 0)), 0) FROM daogate_kv WHERE purgeable != 0
                        """)
                    defer { size.reset() }
                    _ = try size.step()
                    let counted = (entries: Int(size.int64(at: 0)), bytes: Int(size.int64(at: 1)))
                    _ = try db.cachedStatement("DELETE FROM daogate_kv WHERE purgeable != 0").run()
                    return counted
                }
            }
        } ?? (0, 0)
    }

    /// Removes, from an open database, the purgeable entries last written at
    /// or before `cutoff` (seconds since 1970), in write transactions of at
    /// most `batch` entries each, so that a call waiting for the writer waits
    /// for one batch at most: how many, and the bytes their keys and values held.
    /// A database without the key-value table is left as it is (no table is made).
    public func purgeAged(in database: OpenDatabase, writtenBefore cutoff: Double, batch: Int = 256) throws -> (entries: Int, bytes: Int) {
        guard try database.pool.read({ db in try Self.hasTable(db) }) else { return (0, 0) }
        var total = (entries: 0, bytes: 0)
        while true {
            let removed = try database.pool.write { db in
                try db.inTransaction {
                    let delete = try db.cachedStatement("""
                        DELETE FROM daogate_kv WHERE (business, key) IN (SELECT business, key FROM daogate_kv
                          WHERE purgeable != 0 AND updated <= ?1 LIMIT ?2)
                        RETURNING length(CAST(business AS BLOB)) + length(CAST(key AS BLOB)) + coalesce(length(CAST(value AS BLOB)), 0)
                        """)
                    defer { delete.reset() }
                    try delete.bind([.double(cutoff), .integer(Int64(batch))])
                    var removed = (entries: 0, bytes: 0)
                    while try delete.step() {
                        removed.entries += 1
                        removed.bytes += Int(delete.int64(at: 0))
                    }
                    return removed
                }
            }
            total.entries += removed.entries
            total.bytes += removed.bytes
            if removed.entries < batch { return total }
        }
    }

    /// Whether the database has the key-value table.
    static func hasTable(_ db: Database) throws -> Bool {
        let probe = try db.cachedStatement("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'daogate_kv'")
        defer { probe.reset() }
        return try probe.step()
    }

    // MARK: Values

    /// The value as the type holds it, or `invalidValue` naming what was expected.
    public static func conform(_ value: Value, to type: KVType) throws(KeyValueError) -> Value {
        func mismatch(_ expected: String) -> KeyValueError {
            KeyValueError(.invalidValue, "type \(type.rawValue) takes \(expected), not \(value.kindPhrase)")
        }
        switch (type, value) {
        case (.integer, .integer), (.longLong, .integer), (.bool, .bool), (.double, .double), (.string, .string),
             (.json, .array), (.json, .object), (.binary, .blob):
            return value
        case (.integer, .double(let double)), (.longLong, .double(let double)):
            guard let integer = Int64(exactly: double) else { throw mismatch("an integer") }
            return .integer(integer)
        case (.integer, .string(let text)), (.longLong, .string(let text)):
            guard let integer = Int64(text) else { throw mismatch("an integer (or its decimal digits)") }
            return .integer(integer)
        case (.double, .integer(let integer)):
            return .double(Double(integer))
        case (.binary, .string(let text)):
            guard let bytes = Base64.decode(text) else { throw mismatch("base64 text") }
            return .blob(bytes)
        case (.integer, _), (.longLong, _): throw mismatch("an integer")
        case (.bool, _): throw mismatch("a boolean")
        case (.double, _): throw mismatch("a number")
        case (.string, _): throw mismatch("a string")
        case (.json, _): throw mismatch("an object or an array")
        case (.binary, _): throw mismatch("base64 text")
        }
    }

    /// How a plain value is stored: JSON as its text, the rest as SQLite keeps it.
    static func storedForm(_ value: Value, _ type: KVType) -> Value {
        type == .json ? .string(value.jsonString()) : value
    }

    static func context(_ business: String, _ key: String) -> String { "kv:\(business)/\(key)" }

    static func type(_ name: String) throws -> KVType {
        guard let type = KVType(rawValue: name) else {
            throw EngineError(.storageFailed, "the key-value table holds an unknown type '\(name.prefix(40))'")
        }
        return type
    }

    /// The entry of the row the statement is on (type, value, encrypted, purgeable, updated).
    private func entry(_ statement: Statement, business: String, key: String) throws -> KVEntry {
        let type = try Self.type(statement.string(at: 0))
        let encrypted = statement.int64(at: 2) != 0
        let value: Value
        if encrypted {
            guard let cipher else {
                throw EngineError(.encryption, "kv \(business)/\(key) is encrypted, and no key is configured: \(CipherKey.howToConfigure)")
            }
            value = try cipher.decryptStored(statement.bytes(at: 1), context: Self.context(business, key), what: "kv \(business)/\(key)")
        } else {
            value = try Self.plainValue(statement.value(at: 1), type, business: business, key: key)
        }
        return KVEntry(type: type, value: value, encrypted: encrypted, purgeable: statement.int64(at: 3) != 0,
                       updated: statement.double(at: 4))
    }

    /// A plain stored value back as its type.
    static func plainValue(_ stored: Value, _ type: KVType, business: String, key: String) throws -> Value {
        switch (type, stored) {
        case (.bool, .integer(let integer)): return .bool(integer != 0)
        case (.json, .string(let text)):
            guard let value = try? Value(parsingJSON: text) else {
                throw EngineError(.storageFailed, "kv \(business)/\(key) holds JSON that does not parse")
            }
            return value
        case (.double, .integer(let integer)): return .double(Double(integer))
        default: return stored
        }
    }

    // MARK: Statements

    /// Creates the table once per open database.
    private func prepare(_ database: OpenDatabase) throws {
        try database.ensure(Self.table) {
            try database.pool.write { db in try db.execute(Self.create) }
        }
    }

    /// Runs a deletion; in a location without a database, none (and no file).
    private func delete(_ location: DatabaseLocation, _ sql: String, _ bindings: [Value]) throws -> Int {
        try engine.withExistingDatabase(location) { database in
            try prepare(database)
            return try database.pool.write { db in
                let statement = try db.cachedStatement(sql)
                try statement.bind(bindings)
                return try statement.run()
            }
        } ?? 0
    }
}
