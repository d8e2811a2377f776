import ASCIIBytes
import DAODialect
import SQLiteDatabase
import Foundation
import Synchronization

/// A database file in use by the engine: its connections, and the tables
/// whose initializer and upgrades have been seen to this process.
public final class OpenDatabase: Sendable {
    public let location: DatabaseLocation
    public let pool: DatabasePool
    /// What this process has seen set up in the file: kept by the registry
    /// across a close and a re-open, so a re-open does not check it again.
    let readiness: TableReadiness

    init(location: DatabaseLocation, pool: DatabasePool, readiness: TableReadiness = TableReadiness()) {
        self.location = location
        self.pool = pool
        self.readiness = readiness
    }

    /// Runs `setUp` (an idempotent `create table if not exists`, say) the
    /// first time `name` is asked for while this file is open, then never
    /// again; two threads may both run it once.
    public func ensure(_ name: String, _ setUp: () throws -> Void) rethrows {
        if isReady(name) { return }
        try setUp()
        markReady(name)
    }

    func isReady(_ table: String) -> Bool { readiness.readyTables.withLock { $0.contains(table) } }
    func markReady(_ table: String) { _ = readiness.readyTables.withLock { $0.insert(table) } }

    /// Whether a module's table was brought to the module's version here: after a reload changes a module's
    /// version, its tables are ready for that version no more. Every call asks: a module's own table (not one
    /// a caller named) that was found ready is remembered by the module object's number (`Module.serial`),
    /// read without a lock or a hash of the names.
    func isReady(_ module: Module, _ table: TableChoice) -> Bool {
        let own = !table.chosenByCaller
        if own, readiness.remembers(module.serial) { return true }
        return readiness.readyModuleTables.withLock { tables in
            guard tables[TableReadiness.ModuleTable(module: module.name, table: table.name)] == module.version else { return false }
            // Under the lock a drop takes to forget it (`forget`), so a table dropped meanwhile is not remembered.
            if own { readiness.remember(module.serial) }
            return true
        }
    }

    /// Records a module's table as brought to `version`, unless a table was
    /// dropped since `drops` was read (`TableReadiness.drops`): it is recorded
    /// after the writer that readied it is released, and a drop in between
    /// may have been this one.
    func markReady(module: String, table: String, version: Version, unlessDroppedSince drops: Int) {
        readiness.readyModuleTables.withLock { tables in
            guard readiness.drops.load(ordering: .sequentiallyConsistent) == drops else { return }
            tables[TableReadiness.ModuleTable(module: module, table: table)] = version
        }
    }

    /// Forgets that a module's table is ready: called under the writer by
    /// whatever drops it, so that the next call, which checks under the
    /// writer or after a failed read, creates it again. The count of drops
    /// moves under the same lock as the tables, so that a `markReady` after
    /// it sees it.
    func forget(module: String, table: String) {
        _ = readiness.owners.withLock { $0.removeValue(forKey: table.lowercased()) }
        readiness.readyModuleTables.withLock { tables in
            tables.removeValue(forKey: TableReadiness.ModuleTable(module: module, table: table))
            readiness.forgetRemembered()
            readiness.drops.add(1, ordering: .sequentiallyConsistent)
        }
    }

}

/// The tables whose initializer and upgrades this process has seen done in
/// one file (the version check): the storage layers' tables, and modules'.
/// The registry keeps it while the file is closed, so that a re-open costs
/// no version check; a reset, which removes the file, forgets it.
final class TableReadiness: Sendable {
    /// The storage layers' tables set up in this file (`ensure`).
    let readyTables = Mutex<Set<String>>([])
    /// The version each module's table was brought to.
    let readyModuleTables = Mutex<[ModuleTable: Version]>([:])
    /// The module each module table of this file belongs to, recorded when a call claims it under the writer
    /// (`readyTable`), before it is recorded as ready: the change feed names a table's module in the commit of
    /// the write that created it, before that write's writer is released.
    let owners = Mutex<[String: String]>([:])
    /// How many times a module's table was forgotten (dropped): a read that
    /// fails after this moved may have raced the drop, and is tried again.
    let drops = Atomic<Int>(0)
    /// The numbers (`Module.serial`) of modules whose own table was found ready in `readyModuleTables`: a
    /// direct-mapped set of four slots, a number in the slot its low bits choose (0: none). Filled and emptied
    /// under `readyModuleTables`'s lock; read without it.
    private let remembered0 = Atomic<UInt64>(0), remembered1 = Atomic<UInt64>(0)
    private let remembered2 = Atomic<UInt64>(0), remembered3 = Atomic<UInt64>(0)

    func remembers(_ serial: UInt64) -> Bool {
        let slot: UInt64 = switch serial & 3 {
        case 0: remembered0.load(ordering: .acquiring)
        case 1: remembered1.load(ordering: .acquiring)
        case 2: remembered2.load(ordering: .acquiring)
        default: remembered3.load(ordering: .acquiring)
        }
        return slot == serial
    }

    /// Under `readyModuleTables`'s lock.
    func remember(_ serial: UInt64) {
        switch serial & 3 {
        case 0: remembered0.store(serial, ordering: .releasing)
        case 1: remembered1.store(serial, ordering: .releasing)
        case 2: remembered2.store(serial, ordering: .releasing)
        default: remembered3.store(serial, ordering: .releasing)
        }
    }

    /// Under `readyModuleTables`'s lock: a table was dropped.
    func forgetRemembered() {
        remembered0.store(0, ordering: .releasing)
        remembered1.store(0, ordering: .releasing)
        remembered2.store(0, ordering: .releasing)
        remembered3.store(0, ordering: .releasing)
    }

    /// A module's table is ready per module (a caller-named table is checked
    /// to be the module's own before it is) and without regard to ASCII case,
    /// as SQLite names tables; kept apart from the storage layers' names.
    /// Every call asks, so the key compares and hashes the names as they
    /// are, building no string: it folds their bytes into one word (FNV-1a,
    /// the table's in lower case) as it is made, and the hasher is fed that
    /// word, not a call per byte.
    struct ModuleTable: Hashable {
        let module: String
        let table: String
        private let folded: UInt64

        init(module: String, table: String) {
            self.module = module
            self.table = table
            var folded = FNV1a.offsetBasis
            Self.fold(module, into: &folded, lowercasing: false)
            FNV1a.fold(0xff, into: &folded)  // between the names: ("ab", "c") is not ("a", "bc")
            Self.fold(table, into: &folded, lowercasing: true)
            self.folded = folded
        }

        /// Folds the name's bytes in, read from its contiguous UTF-8 (a small string's spilled once), not one
        /// index step of the UTF-8 view per byte.
        private static func fold(_ name: String, into folded: inout UInt64, lowercasing: Bool) {
            withUTF8Bytes(of: name) { bytes in
                for byte in bytes {
                    FNV1a.fold(lowercasing && byte >= 65 && byte <= 90 ? byte + 32 : byte, into: &folded)
                }
            }
        }

        static func == (a: Self, b: Self) -> Bool {
            a.folded == b.folded && a.module == b.module && sameTable(a.table, b.table)
        }

        func hash(into hasher: inout Hasher) { hasher.combine(folded) }
    }
}

/// The open database files, held to a budget of descriptors and bytes
/// (`ResourceBudget`): beyond it the least recently used idle ones are
/// closed, and reopened on demand, so that ten thousand users neither exhaust
/// the process's file descriptors nor its memory. What each file holds is
/// measured when its call ends (`DatabasePool.resourceCost`).
final class DatabaseRegistry: Sendable {
    let root: String
    let budget: ResourceBudget
    let configuration: DatabaseConfiguration
    /// `configuration` with the users' journal.
    private let userConfiguration: DatabaseConfiguration
    /// The caps on what users and the common space store, and on users' storages.
    let quotas: DiskQuotas

    fileprivate typealias Entry = LeasedLRU<DatabaseLocation, OpenDatabase>.Entry

    private struct State: ~Copyable {
        var files: LeasedLRU<DatabaseLocation, OpenDatabase>
        /// What was seen set up in files opened before, closed or not: a
        /// re-open does not check it again. Forgotten by a reset, and all at
        /// once past `rememberedLimit` files.
        var readiness: [DatabaseLocation: TableReadiness] = [:]
        var closed = false
        /// Scopes being reset: their databases may not open.
        var fences: [ResetScope] = []
        /// Files being opened outside the lock: another call to one waits for it instead of opening a second pool.
        var opening: Set<DatabaseLocation> = []
    }

    /// Files whose readiness is remembered at most (some hundred bytes each:
    /// 30,000 hold about 15 MB, three times the users the default budgets keep open).
    static let rememberedLimit = 30_000

    /// The page size of a users' file created by this server (one made before keeps its own).
    static let userPageSize = 1024

    private let state: Mutex<State>

    init(root: String, budget: ResourceBudget, configuration: DatabaseConfiguration, userJournal: JournalMode,
         maximumCommonBytes: Int? = nil, maximumStoragesPerUser: Int? = nil) {
        self.root = root.hasSuffix("/") ? String(root.dropLast()) : root
        self.quotas = DiskQuotas(root: self.root, userBytes: configuration.maximumDatabaseBytes,
                                    commonBytes: maximumCommonBytes, storagesPerUser: maximumStoragesPerUser)
        self.budget = budget
        self.configuration = configuration
        var users = configuration
        users.journal = userJournal
        // A users' rollback file has one connection, this process's (a server holds its data folder alone).
        users.usesFileLocks = userJournal == .wal
        // Ten thousand open users' files each cache the few pages their rows are read through: with
        // 1024-byte pages, a third of the memory of 4096-byte ones (`DatabaseConfiguration.newFilePageSize`).
        users.newFilePageSize = Self.userPageSize
        self.userConfiguration = users
        self.state = Mutex(State(files: LeasedLRU(budget: budget)))
    }

    /// How a location's connections are opened: the users' journal is for
    /// users' databases only, shared files keep WAL; a file is never larger
    /// than its group's cap (`DiskQuotas`), a bound file has none.
    private func configuration(for location: DatabaseLocation) -> DatabaseConfiguration {
        guard case .user = location else {
            var shared = configuration
            shared.maximumDatabaseBytes = if case .common = location { quotas.commonBytes } else { nil }
            shared.journal = .wal
            return shared
        }
        return userConfiguration
    }

    /// The path of a location's file.
    func path(of location: DatabaseLocation) -> String { root + "/" + location.relativePath }

    /// Runs `body` with the location's database open, opening it (and
    /// creating its file) if needed.
    func withDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws -> T) throws -> T {
        let lease = try lease(location)
        defer { release(lease) }
        return try body(lease.database)
    }

    /// A location's database held open for a call, until `release(_:)` gives it back (exactly once).
    struct Lease {
        fileprivate let entry: Entry
        var database: OpenDatabase { entry.value }
    }

    /// The location's database, opened (its file created) if needed, and held open until `release(_:)`: for a
    /// call whose body would otherwise be a closure, each of whose captures (a call's statement, target and
    /// result type) is copied into its context.
    func lease(_ location: DatabaseLocation) throws(EngineError) -> Lease {
        Lease(entry: try acquire(location, creating: true)!)
    }

    /// Gives back a `lease(_:)`.
    func release(_ lease: Lease) {
        release(lease.entry)
    }

    /// Runs `body` with the location's database open if it has a file; nil,
    /// creating nothing, if it has none.
    func withExistingDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws -> T) throws -> T? {
        guard let entry = try acquire(location, creating: false) else { return nil }
        defer { release(entry) }
        return try body(entry.value)
    }

    /// As `withExistingDatabase`, for a visit (the background sweep): a file
    /// this call had to open is closed again when `body` ends, unless a call
    /// leased it meanwhile, so that a walk over every file keeps no more of
    /// them open than the calls do, and evicts none of theirs for long.
    func visitExistingDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws -> T) throws -> T? {
        var opened = false
        guard let entry = try acquire(location, creating: false, opened: &opened) else { return nil }
        defer {
            release(entry)
            if opened { closeIfIdle(location) }
        }
        return try body(entry.value)
    }

    /// Closes a location's database if it is open and idle, remembering what was seen set up in it.
    private func closeIfIdle(_ location: DatabaseLocation) {
        let database: OpenDatabase? = state.withLock { state in
            guard let entry = state.files.entries[location], entry.leases == 0 else { return nil }
            state.files.remove(location)
            return entry.value
        }
        database?.pool.close()
    }

    /// The location's database, waiting (up to 5 s) while a reset of it runs;
    /// nil when it has no file and `creating` is false.
    /// Out of file descriptors, the idle databases and readers give theirs
    /// back and the open is tried once more; then it is `overloaded`.
    /// A user's file in a custom storage is created only when the user may have one more (`DiskQuotas.admitting`).
    private func acquire(_ location: DatabaseLocation, creating: Bool) throws(EngineError) -> Entry? {
        var opened = false
        return try acquire(location, creating: creating, opened: &opened)
    }

    /// As `acquire(_:creating:)`; `opened` tells whether this call opened the file.
    private func acquire(_ location: DatabaseLocation, creating: Bool, opened: inout Bool) throws(EngineError) -> Entry? {
        if creating, quotas.storagesPerUser != nil, case .user(_, _?) = location {
            if let entry = try acquireAdmitted(location, creating: false, opened: &opened) { return entry }
            do {
                return try quotas.admitting(location) { () throws(EngineError) in
                    try acquireAdmitted(location, creating: true, opened: &opened)
                }
            } catch {
                throw EngineError(adapting: error)
            }
        }
        return try acquireAdmitted(location, creating: creating, opened: &opened)
    }

    private func acquireAdmitted(_ location: DatabaseLocation, creating: Bool, opened: inout Bool) throws(EngineError) -> Entry? {
        var acquired: Acquired
        do {
            acquired = try acquireUnlessFenced(location, creating: creating, opened: &opened)
        } catch where error.code == .overloaded && relieve() {
            acquired = try acquireUnlessFenced(location, creating: creating, opened: &opened)
        }
        // Nearly every call: its file is open. Only a wait reads the clock (whose optional instant costs a look-up
        // of its type's metadata on each call that has it).
        if case .entry(let entry) = acquired { return entry }
        return try awaitAcquired(acquired, location, creating: creating, opened: &opened)
    }

    /// `acquireAdmitted` once the first try found no open file: the file is absent, being opened by another call
    /// (tried again shortly), or fenced (tried again until the fence is lifted, for at most five seconds).
    private func awaitAcquired(_ first: Acquired, _ location: DatabaseLocation, creating: Bool,
                               opened: inout Bool) throws(EngineError) -> Entry? {
        var acquired = first
        var deadline: ContinuousClock.Instant?
        while true {
            switch acquired {
            case .entry(let entry): return entry
            case .absent: return nil
            case .opening:
                // Another call is opening this file (a fraction of a millisecond): its entry is there next time.
                usleep(50)
                acquired = try acquireUnlessFenced(location, creating: creating, opened: &opened)
                continue
            case .fenced: break
            }
            let now = ContinuousClock.now
            if deadline == nil { deadline = now + .seconds(5) }
            guard now < deadline! else {
                throw EngineError(.busy, "the storage of this call is being reset; try again")
            }
            Thread.sleep(forTimeInterval: 0.002)
            acquired = try acquireUnlessFenced(location, creating: creating, opened: &opened)
        }
    }

    private enum Acquired { case entry(Entry), fenced, absent, opening }

    /// A lease of the location's open file; else the file opened, outside the registry's lock (an open costs
    /// some hundred microseconds, which every other call would wait out under it), the location marked as
    /// being opened meanwhile so that a second call waits for this one's pool instead of making another.
    private func acquireUnlessFenced(_ location: DatabaseLocation, creating: Bool, opened: inout Bool) throws(EngineError) -> Acquired {
        let claim: Result<Acquired?, EngineError> = state.withLock { state in
            if state.closed { return .failure(EngineError(.storageFailed, "the engine is shut down")) }
            if !state.fences.isEmpty, state.fences.contains(where: { $0.contains(location) }) { return .success(.fenced) }
            if let entry = state.files.lease(location) { return .success(.entry(entry)) }
            if state.opening.contains(location) { return .success(.opening) }
            state.opening.insert(location)
            return .success(nil)
        }
        if let acquired = try claim.get() { return acquired }

        var pool: DatabasePool?
        var failure: EngineError?
        if creating || FileManager.default.fileExists(atPath: path(of: location)) {
            do throws(SQLiteError) {
                pool = try DatabasePool(path: path(of: location), configuration: configuration(for: location),
                                        share: quotas.share(for: location))
            } catch {
                failure = EngineError(storage: error, "cannot open the database (\(location)): \(error.message)")
            }
        }
        var evicted: [OpenDatabase] = []
        var unused: DatabasePool?
        let result: Result<Acquired, EngineError> = state.withLock { state in
            state.opening.remove(location)
            if let failure { return .failure(failure) }
            guard let pool else { return .success(.absent) }
            if state.closed {
                unused = pool
                return .failure(EngineError(.storageFailed, "the engine is shut down"))
            }
            // A reset that began meanwhile waited for this open (`exclusively`); its files are not to be opened.
            if !state.fences.isEmpty, state.fences.contains(where: { $0.contains(location) }) {
                unused = pool
                return .success(.fenced)
            }
            let readiness = state.readiness[location] ?? {
                if state.readiness.count >= Self.rememberedLimit { state.readiness.removeAll() }
                let made = TableReadiness()
                state.readiness[location] = made
                return made
            }()
            let entry = state.files.insert(location, OpenDatabase(location: location, pool: pool, readiness: readiness),
                                           cost: pool.resourceCost)
            evicted = Self.makeRoom(&state.files)
            return .success(.entry(entry))
        }
        unused?.close()
        for database in evicted { database.pool.close() }
        if case .success(.entry) = result { opened = true }
        return try result.get()
    }

    /// Gives a lease back with what the file holds now; closes the least
    /// recently used idle files while the budget is exceeded.
    /// Past seven eighths of the byte budget, a file used now and then
    /// (not used by any of the last calls, as many as half the open files)
    /// frees its cached pages (a few KiB each) as it goes idle, before files
    /// are closed for want of room: it stays open, and its next call reads
    /// its pages again (a few microseconds, from the operating system's
    /// cache) instead of opening it. A busy file keeps its pages.
    private func release(_ entry: Entry) {
        let pool = entry.value.pool
        let cost = pool.resourceCost
        let (evicted, short) = state.withLock { state in
            state.files.release(entry, cost: cost)
            let seldom = state.files.leaseClock &- entry.previouslyLeasedAt > UInt64(state.files.count / 2)
            return (Self.makeRoom(&state.files), seldom && state.files.total.bytes > budget.bytes / 8 * 7)
        }
        for database in evicted { database.pool.close() }
        guard short, cost.bytes > pool.idleBytes else { return }
        pool.releasePageCache()
        let trimmed = pool.resourceCost
        guard trimmed != cost else { return }
        state.withLock { state in
            // Unless it was leased again meanwhile (that lease's release charges it).
            if entry.leases == 0 { state.files.recharge(entry, cost: trimmed) }
        }
    }

    /// Brings the open files within the budget: first the least recently
    /// used idle files (of the 64 oldest) free their cached pages (staying
    /// open), while bytes are what is short; then the least recently used idle files are removed,
    /// and returned for the caller to close outside the lock. (A file's pages
    /// are freed only when no one holds its connection: the try-lock never
    /// waits under the registry's lock.)
    private static func makeRoom(_ files: inout LeasedLRU<DatabaseLocation, OpenDatabase>) -> [OpenDatabase] {
        if files.total.bytes > files.budget.bytes {
            var trimmed: [(Entry, ResourceCost)] = []
            var excess = files.total.bytes - files.budget.bytes
            // The oldest few: a walk over every idle file would cost each open as many steps.
            files.forEachIdle(limit: 64) { entry in
                let pool = entry.value.pool
                if entry.cost.bytes > pool.idleBytes {
                    pool.releasePageCache()
                    let now = pool.resourceCost
                    excess -= entry.cost.bytes - now.bytes
                    trimmed.append((entry, now))
                }
                return excess > 0
            }
            for (entry, cost) in trimmed { files.recharge(entry, cost: cost) }
        }
        return files.evictions()
    }

    /// Gives file descriptors back after an open failed for want of them:
    /// closes the least recently used idle database and the idle readers of
    /// the others (they reopen on demand). Whether there was anything to close.
    func relieve() -> Bool {
        let (idle, others) = state.withLock { state -> (OpenDatabase?, [OpenDatabase]) in
            let idle = state.files.removeOldestIdle()
            return (idle, state.files.entries.values.map(\.value))
        }
        idle?.pool.close()
        for database in others { database.pool.closeIdleReaders() }
        return idle != nil || !others.isEmpty
    }

    /// The databases open right now.
    var openCount: Int { state.withLock { $0.files.count } }

    /// What the open databases hold, as last measured.
    var openCost: ResourceCost { state.withLock { $0.files.total } }

    /// Closes a location's database if it is open and idle (before its file is removed).
    func close(_ location: DatabaseLocation) -> Bool {
        let result: (database: OpenDatabase?, closed: Bool) = state.withLock { state in
            guard let entry = state.files.entries[location] else {
                state.readiness[location] = nil
                return (nil, true)
            }
            guard entry.leases == 0 else { return (nil, false) }
            state.files.remove(location)
            state.readiness[location] = nil
            return (entry.value, true)
        }
        result.database?.pool.close()
        return result.closed
    }

    /// Runs `body` while no database of `scope` is open: new calls to them
    /// are refused (`busy`), those in flight are waited for (up to
    /// `timeout`, then `busy`), and their connections are closed. For resets,
    /// which remove the files: what was seen set up in them is forgotten.
    func exclusively<T>(_ scope: ResetScope, timeout: Duration, _ body: () throws -> T) throws -> T {
        state.withLock { $0.fences.append(scope) }
        defer {
            // Before the fence goes: the files' next writer sees them as they are now.
            quotas.forget(scope)
            _ = state.withLock { state in state.fences.remove(at: state.fences.firstIndex(of: scope)!) }
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let closing: [OpenDatabase]? = state.withLock { state in
                let inScope = state.files.entries.filter { scope.contains($0.key) }
                guard inScope.allSatisfy({ $0.value.leases == 0 }),
                      !state.opening.contains(where: { scope.contains($0) }) else { return nil }
                for location in inScope.keys { state.files.remove(location) }
                state.readiness = state.readiness.filter { !scope.contains($0.key) }
                return inScope.values.map(\.value)
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
            return state.files.removeAll().map(\.value)
        }
        for database in databases { database.pool.close() }
    }
}

/// The databases a reset removes: a storage's (the default one when
/// `storage` is nil), or one user's in it. Bound files (`.file`) are in none.
struct ResetScope: Sendable, Equatable {
    var storage: String?
    var user: UserID?
    /// The user's databases in every storage, `storage` aside.
    var everyStorage = false

    func contains(_ location: DatabaseLocation) -> Bool {
        guard everyStorage else { return location.isIn(storage: storage, user: user) }
        guard case .user(let owner, _) = location else { return false }
        return owner == user
    }
}
