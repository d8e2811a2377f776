import DAOSQLite
import Foundation
import Synchronization

/// A database file in use by the engine: its connections, and the tables
/// whose initializer and upgrades have been seen to this process.
public final class OpenDatabase: Sendable {
    public let location: StorageLocation
    public let pool: DatabasePool
    /// The storage layers' tables set up in this file (`ensure`).
    let readyTables = Mutex<Set<String>>([])

    init(location: StorageLocation, pool: DatabasePool) {
        self.location = location
        self.pool = pool
    }

    /// Runs `setUp` (an idempotent `create table if not exists`, say) the
    /// first time `name` is asked for while this file is open, then never
    /// again; two threads may both run it once.
    public func ensure(_ name: String, _ setUp: () throws -> Void) rethrows {
        if isReady(name) { return }
        try setUp()
        markReady(name)
    }

    func isReady(_ table: String) -> Bool { readyTables.withLock { $0.contains(table) } }
    func markReady(_ table: String) { _ = readyTables.withLock { $0.insert(table) } }

    /// A module's table is ready per module (a caller-named table is checked
    /// to be the module's own before it is) and without regard to ASCII case,
    /// as SQLite names tables; kept apart from the storage layers' names.
    /// Every call asks, so the key compares and hashes the names as they
    /// are, building no string.
    struct ModuleTable: Hashable {
        let module: String
        let table: String

        static func == (a: Self, b: Self) -> Bool { a.module == b.module && sameTable(a.table, b.table) }

        func hash(into hasher: inout Hasher) {
            hasher.combine(module)
            for byte in table.utf8 { hasher.combine(byte >= 65 && byte <= 90 ? byte + 32 : byte) }
        }
    }

    let readyModuleTables = Mutex<Set<ModuleTable>>([])

    func isReady(module: String, table: String) -> Bool {
        readyModuleTables.withLock { $0.contains(ModuleTable(module: module, table: table)) }
    }

    func markReady(module: String, table: String) {
        _ = readyModuleTables.withLock { $0.insert(ModuleTable(module: module, table: table)) }
    }

    /// Forgets that a module's table is ready: called under the writer by
    /// whatever drops it, so that the next call, which checks under the
    /// writer or after a failed read, creates it again.
    func forget(module: String, table: String) {
        _ = readyModuleTables.withLock { $0.remove(ModuleTable(module: module, table: table)) }
        drops.add(1, ordering: .sequentiallyConsistent)
    }

    /// How many times a module's table was forgotten (dropped): a read that
    /// fails after this moved may have raced the drop, and is tried again.
    let drops = Atomic<Int>(0)
}

/// The open database files, at most `capacity` of them: beyond it the least
/// recently used idle ones are closed, and reopened on demand, so that ten
/// thousand users do not exhaust the process's file descriptors.
final class DatabaseRegistry: Sendable {
    let root: String
    let capacity: Int
    let configuration: DatabaseConfiguration

    /// A class, so that a release finds its entry without hashing the location
    /// again; its fields change only under `state`'s lock.
    private final class Entry: @unchecked Sendable {
        let database: OpenDatabase
        var leases = 1
        /// When it was last released: only idle entries are ever ordered by it.
        var lastUse: UInt64 = 0

        init(database: OpenDatabase) { self.database = database }
    }

    private struct State {
        var entries: [StorageLocation: Entry] = [:]
        var clock: UInt64 = 0
        var closed = false
        /// Scopes being reset: their databases may not open.
        var fences: [ResetScope] = []
    }

    private let state = Mutex(State())

    init(root: String, capacity: Int, configuration: DatabaseConfiguration) {
        self.root = root.hasSuffix("/") ? String(root.dropLast()) : root
        self.capacity = max(1, capacity)
        self.configuration = configuration
    }

    /// How a location's connections are opened: the size cap is for users' databases only.
    private func configuration(for location: StorageLocation) -> DatabaseConfiguration {
        guard case .user = location else {
            var shared = configuration
            shared.maximumDatabaseBytes = nil
            return shared
        }
        return configuration
    }

    /// The path of a location's file.
    func path(of location: StorageLocation) -> String { root + "/" + location.relativePath }

    /// Runs `body` with the location's database open, opening it (and
    /// creating its file) if needed.
    func withDatabase<T>(_ location: StorageLocation, _ body: (OpenDatabase) throws -> T) throws -> T {
        let entry = try acquire(location, creating: true)!
        defer { release(entry) }
        return try body(entry.database)
    }

    /// Runs `body` with the location's database open if it has a file; nil,
    /// creating nothing, if it has none.
    func withExistingDatabase<T>(_ location: StorageLocation, _ body: (OpenDatabase) throws -> T) throws -> T? {
        guard let entry = try acquire(location, creating: false) else { return nil }
        defer { release(entry) }
        return try body(entry.database)
    }

    /// The location's database, waiting (up to 5 s) while a reset of it runs;
    /// nil when it has no file and `creating` is false.
    /// Out of file descriptors, the idle databases and readers give theirs
    /// back and the open is tried once more; then it is `overloaded`.
    private func acquire(_ location: StorageLocation, creating: Bool) throws(EngineError) -> Entry? {
        var acquired: Acquired
        do {
            acquired = try acquireUnlessFenced(location, creating: creating)
        } catch where error.code == .overloaded && relieve() {
            acquired = try acquireUnlessFenced(location, creating: creating)
        }
        var deadline: ContinuousClock.Instant?
        while true {
            switch acquired {
            case .entry(let entry): return entry
            case .absent: return nil
            case .fenced: break
            }
            let now = ContinuousClock.now
            if deadline == nil { deadline = now + .seconds(5) }
            guard now < deadline! else {
                throw EngineError(.busy, "the storage of this call is being reset; try again")
            }
            Thread.sleep(forTimeInterval: 0.002)
            acquired = try acquireUnlessFenced(location, creating: creating)
        }
    }

    private enum Acquired { case entry(Entry), fenced, absent }

    private func acquireUnlessFenced(_ location: StorageLocation, creating: Bool) throws(EngineError) -> Acquired {
        var opened = false
        let result: Result<Acquired, EngineError> = state.withLock { state in
            if state.closed { return .failure(EngineError(.storageFailed, "the engine is shut down")) }
            if !state.fences.isEmpty, state.fences.contains(where: { $0.contains(location) }) { return .success(.fenced) }
            if let entry = state.entries[location] {
                entry.leases += 1
                return .success(.entry(entry))
            }
            if !creating && !FileManager.default.fileExists(atPath: path(of: location)) { return .success(.absent) }
            // Opened under the lock, so that one file never gets two pools (two writers).
            do throws(SQLiteError) {
                let pool = try DatabasePool(path: path(of: location), configuration: configuration(for: location))
                let entry = Entry(database: OpenDatabase(location: location, pool: pool))
                state.entries[location] = entry
                opened = true
                return .success(.entry(entry))
            } catch {
                return .failure(EngineError(storage: error, "cannot open the database (\(location)): \(error.message)"))
            }
        }
        let acquired = try result.get()
        if opened { trim() }
        return acquired
    }

    private func release(_ entry: Entry) {
        let crowded = state.withLock { state in
            state.clock &+= 1
            entry.leases -= 1
            entry.lastUse = state.clock
            return state.entries.count > capacity
        }
        // Databases that were busy when others opened may be closed now.
        if crowded { trim() }
    }

    /// Closes least recently used idle databases while more than `capacity` are open.
    private func trim() {
        let victims: [OpenDatabase] = state.withLock { state in
            guard state.entries.count > capacity else { return [] }
            let idle = state.entries.filter { $0.value.leases == 0 }.sorted { $0.value.lastUse < $1.value.lastUse }
            let excess = state.entries.count - capacity
            return idle.prefix(excess).map { location, entry in
                state.entries[location] = nil
                return entry.database
            }
        }
        for database in victims { database.pool.close() }
    }

    /// Gives file descriptors back after an open failed for want of them:
    /// closes the least recently used idle database and the idle readers of
    /// the others (they reopen on demand). Whether there was anything to close.
    func relieve() -> Bool {
        let (idle, others) = state.withLock { state -> (OpenDatabase?, [OpenDatabase]) in
            let idle = state.entries.filter { $0.value.leases == 0 }.min { $0.value.lastUse < $1.value.lastUse }
            if let idle { state.entries[idle.key] = nil }
            return (idle?.value.database, state.entries.values.map(\.database))
        }
        idle?.pool.close()
        for database in others { database.pool.closeIdleReaders() }
        return idle != nil || !others.isEmpty
    }

    /// The databases open right now.
    var openCount: Int { state.withLock { $0.entries.count } }

    /// Closes a location's database if it is open and idle (before its file is removed).
    func close(_ location: StorageLocation) -> Bool {
        let database: OpenDatabase? = state.withLock { state in
            guard let entry = state.entries[location], entry.leases == 0 else { return nil }
            state.entries[location] = nil
            return entry.database
        }
        database?.pool.close()
        return database != nil || state.withLock { $0.entries[location] == nil }
    }

    /// Runs `body` while no database of `scope` is open: new calls to them
    /// are refused (`busy`), those in flight are waited for (up to
    /// `timeout`, then `busy`), and their connections are closed. For resets,
    /// which remove the files.
    func exclusively<T>(_ scope: ResetScope, timeout: Duration, _ body: () throws -> T) throws -> T {
        state.withLock { $0.fences.append(scope) }
        defer { state.withLock { state in state.fences.remove(at: state.fences.firstIndex(of: scope)!) } }
        let deadline = ContinuousClock.now + timeout
        while true {
            let closing: [OpenDatabase]? = state.withLock { state in
                let inScope = state.entries.filter { scope.contains($0.key) }
                guard inScope.allSatisfy({ $0.value.leases == 0 }) else { return nil }
                for location in inScope.keys { state.entries[location] = nil }
                return inScope.values.map(\.database)
            }
            if let closing {
                for database in closing { database.pool.close() }
                break
            }
            guard ContinuousClock.now < deadline else {
                throw EngineError(.busy, "calls to the storage did not finish within \(timeout); nothing was reset")
            }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return try body()
    }

    /// Closes every database; later calls fail. In-flight work finishes first.
    func closeAll() {
        let databases = state.withLock { state in
            state.closed = true
            defer { state.entries.removeAll() }
            return state.entries.values.map(\.database)
        }
        for database in databases { database.pool.close() }
    }
}

/// The databases a reset removes: a storage's (the default one when
/// `storage` is nil), or one user's in it. Bound files (`.file`) are in none.
struct ResetScope: Sendable, Equatable {
    var storage: String?
    var user: UserID?

    func contains(_ location: StorageLocation) -> Bool { location.isIn(storage: storage, user: user) }
}
