import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Synchronization
import Testing

/// A data folder in a fresh temporary folder, engines without modules over
/// it, and a clock the test moves.
final class DiskCacheFixture: Sendable {
    let root: URL
    var dataDirectory: String { root.appendingPathComponent("data").path }
    /// The clock, seconds since 1970.
    private let time = ManualClock()
    let cipher = Cipher(key: try! CipherKey.generate())

    static let common = DatabaseLocation.common(storage: nil)
    static let ann = DatabaseLocation.user(try! UserID("ann"), storage: nil)

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-disklru-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    var now: Double { time.now }

    /// Moves the clock by `seconds`.
    func advance(_ seconds: Double) { time.now += seconds }

    var clock: ExpiryClock { time.expiryClock }

    func engine() throws -> Engine {
        try Engine(modules: [], configuration: Engine.Configuration(dataDirectory: dataDirectory))
    }

    /// Caches over a new engine, with `cipher` or else the fixture's, or none when `keyless`.
    func caches(keyless: Bool = false, cipher: Cipher? = nil, maximumCapacity: Int = 1_000_000) throws -> DiskCaches {
        DiskCaches(engine: try engine(), cipher: keyless ? nil : cipher ?? self.cipher, clock: clock,
                   maximumCapacity: maximumCapacity)
    }

    /// Caches over an existing engine, with the fixture's clock.
    func caches(on engine: Engine, cipher: Cipher?) -> DiskCaches {
        DiskCaches(engine: engine, cipher: cipher, clock: clock)
    }

    /// Every file under the data folder, relative to it.
    func dataFiles() -> [String] {
        (FileManager.default.enumerator(atPath: dataDirectory)?.allObjects as? [String] ?? [])
            .filter { path in
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: dataDirectory + "/" + path, isDirectory: &isDirectory)
                return !isDirectory.boolValue
            }
            .sorted()
    }

    /// The bytes of a location's database file followed by its `-wal` file's, if any.
    func rawBytes(of location: DatabaseLocation) -> [UInt8] {
        databaseBytes(at: dataDirectory + "/" + location.relativePath)
    }
}

extension DiskCaches {
    /// The rows of a query on the location's database, through a reader.
    func rows(_ sql: String, in location: DatabaseLocation, _ arguments: [Value] = []) throws -> [[Value]] {
        try engine.withOpenDatabase(location) { database in
            try database.pool.read { db in
                let statement = try db.makeStatement(sql)
                try statement.bind(arguments)
                var rows: [[Value]] = []
                while try statement.step() {
                    rows.append((0..<statement.columnCount).map { statement.value(at: $0) })
                }
                return rows
            }
        }
    }

    /// Runs a statement on the location's writer.
    func execute(_ sql: String, in location: DatabaseLocation, _ arguments: [Value] = []) throws {
        try engine.withOpenDatabase(location) { database in
            try database.pool.write { db in
                let statement = try db.makeStatement(sql)
                try statement.bind(arguments)
                try statement.run()
            }
        }
    }

    /// A cache's keys from least to most recently used, read from the table itself.
    func keysByRecency(_ name: String, in location: DatabaseLocation) throws -> [String] {
        try rows("SELECT key FROM \"daogate_lru_\(name)\" ORDER BY touched", in: location).map { $0[0].stringValue ?? "?" }
    }

    /// The rows of a cache's table, counted by SQLite.
    func rowCount(_ name: String, in location: DatabaseLocation) throws -> Int {
        Int(try rows("SELECT count(*) FROM \"daogate_lru_\(name)\"", in: location)[0][0].integerValue ?? -1)
    }
}

/// The `KeyValueError` code `body` throws, recording an issue when it throws none or another error.
func diskCacheError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> KeyValueError.Code? {
    thrown(KeyValueError.self, sourceLocation: sourceLocation, body)?.code
}

/// The `EngineError` code `body` throws, recording an issue when it throws none or another error.
func diskCacheEngineError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> EngineError.Code? {
    thrown(EngineError.self, sourceLocation: sourceLocation, body)?.code
}

/// The `E` that `body` throws, recording an issue when it throws none or another error.
func thrown<E: Error>(_ type: E.Type, sourceLocation: SourceLocation, _ body: () throws -> Void) -> E? {
    do {
        try body()
        Issue.record("expected \(E.self), got none", sourceLocation: sourceLocation)
    } catch let error as E {
        return error
    } catch {
        Issue.record("expected \(E.self), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The LRU cache the disk caches must behave as: entries in recency order,
/// evicting down to capacity when the count passes capacity plus slack.
struct DiskCacheModel {
    let capacity: Int
    private(set) var values: [String: Value] = [:]
    /// Keys from least to most recently used.
    private(set) var order: [String] = []

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { order.count }

    /// Stores one entry; returns the evicted count.
    mutating func set(_ key: String, _ value: Value) -> Int {
        put(key, value)
        return evictIfFull()
    }

    /// Stores a batch, evicting once at the end, as `DiskCaches.add` does.
    mutating func add(_ entries: [(key: String, value: Value)]) -> Int {
        for (key, value) in entries {
            if value.isNull { _ = remove(key) } else { put(key, value) }
        }
        return evictIfFull()
    }

    mutating func get(_ key: String) -> Value? {
        guard let value = values[key] else { return nil }
        order.removeAll { $0 == key }
        order.append(key)
        return value
    }

    mutating func remove(_ key: String) -> Bool {
        guard values.removeValue(forKey: key) != nil else { return false }
        order.removeAll { $0 == key }
        return true
    }

    private mutating func put(_ key: String, _ value: Value) {
        if values.updateValue(value, forKey: key) != nil { order.removeAll { $0 == key } }
        order.append(key)
    }

    private mutating func evictIfFull() -> Int {
        guard count > capacity + DiskCaches.slack(forCapacity: capacity) else { return 0 }
        let excess = count - capacity
        for key in order.prefix(excess) { values[key] = nil }
        order.removeFirst(excess)
        return excess
    }
}
