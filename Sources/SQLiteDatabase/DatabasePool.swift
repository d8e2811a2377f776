import CSQLite
import Dispatch
import Foundation
import Synchronization

/// One database file: a writer connection and, in WAL, a pool of read-only readers. Sendable: used from many threads.
///
/// The model is GRDB's `DatabasePool`, without its queues: callers are plain
/// OS threads that block. Writes are serialized on the one writer; reads run
/// in parallel, each on its own read-only connection and WAL snapshot, and
/// never wait for writes. The pool is for files: `":memory:"` has no WAL.
///
/// A reader, and in WAL the writer between its reads, keeps its read
/// transaction open between reads, as long as no write has committed since it
/// began and for at most `maximumSnapshotAge`: a read then costs no file
/// locking (two `fcntl` calls under SQLite's process-wide lock, which parallel
/// readers would otherwise contend for).
/// Every write ends the snapshots of idle readers and makes busy ones take a
/// fresh snapshot next time, so a read always sees every write this pool
/// committed before it began, and no idle reader holds back checkpoints.
///
/// Bodies should not nest calls on their pool: a `read` inside a read waits
/// for itself once every reader is taken, and a `read` inside a write waits
/// for readers whose bodies may be waiting for that write. A `write` inside a
/// write throws; `close()` inside a body is a programming error.
public final class DatabasePool: @unchecked Sendable {
    // @unchecked: the connections are not Sendable. Every piece of mutable state
    // is behind a Mutex or atomic, and each connection is used by one thread at
    // a time: the writer only while `writer` is locked, a reader only between
    // its checkout and its return.
    /// The database file.
    public let path: String
    public let configuration: DatabaseConfiguration

    /// Locked for the whole of each write body.
    private let writer: Mutex<PooledConnection?>
    /// The thread inside a write body, 0 when none: re-entrant writes throw instead of deadlocking.
    private let writerThread = Atomic<UInt>(0)
    private let writerIsOpen = Atomic<Bool>(true)
    /// True while a body runs on the writer (a write, or a read that found it free): a read that need not
    /// wait goes to a reader on seeing it, without trying the writer's lock, whose failed try is a system
    /// call (Linux's priority-inheritance futex) that threads reading one file at once would each make.
    private let writerInUse = Atomic<Bool>(false)
    /// Counts the write bodies that have finished: a reader whose snapshot began
    /// at an older count must take a new one.
    private let writeGeneration = Atomic<UInt64>(0)
    /// How long a reader may keep one snapshot when nothing is written (so
    /// that writes from another process are seen soon).
    static let maximumSnapshotAge = Duration.milliseconds(100)
    private static let maximumSnapshotMilliseconds = UInt64(maximumSnapshotAge.components.seconds * 1000
        + maximumSnapshotAge.components.attoseconds / 1_000_000_000_000_000)
    private let readers = Mutex(ReaderState())
    /// The readers idle, checked out and being opened: changed under `readers`' lock, read without it (the
    /// registry asks after every call, and the lock is the one every read of the file takes).
    private let openReaders = Atomic<Int>(0)
    /// One permit per reader the pool may have checked out: `read` waits here when all are busy.
    private let readerPermits: DispatchSemaphore
    /// The page caches of the open connections, as each last measured its own at the end of a body.
    private let pageCacheBytes = Atomic<Int>(0)
    /// Serializes `close()`; true once done.
    private let closed = Mutex(false)
    /// The cap this file shares with others (one user's files), nil when only `maximumDatabaseBytes` caps it.
    public let share: SizeShare?

    private struct ReaderState {
        /// Open readers nobody is using, the most recently returned last.
        var idle: [PooledConnection] = []
        var isClosed = false
    }

    /// Opens the writer, creating the file and its folder if needed.
    ///
    /// The writer gets the configuration's journal mode, `synchronous` and
    /// busy timeout, and `foreign_keys = ON`. In WAL readers are opened on
    /// demand, read-only, up to `maximumReaders`; with a rollback journal
    /// none is (reads wait for the writer).
    ///
    /// With `share`, each write's `max_page_count` is what the shared cap leaves this file (`SharedSizeCap`).
    public init(path: String, configuration: DatabaseConfiguration = .init(), share: SizeShare? = nil) throws(SQLiteError) {
        guard configuration.maximumReaders >= 1 else {
            throw .misuse("maximumReaders must be at least 1, not \(configuration.maximumReaders)")
        }
        guard configuration.usesFileLocks || configuration.journal == .rollback else {
            throw .misuse("a WAL file needs file locks (its -shm is shared through them)")
        }
        try Self.createFolder(containing: path)
        let database = try Self.openWriter(path: path, configuration: configuration)
        self.path = path
        self.configuration = configuration
        self.writer = Mutex(PooledConnection(database: database))
        self.readerPermits = DispatchSemaphore(value: configuration.maximumReaders)
        self.share = share
    }

    deinit {
        close()
    }

    private static func createFolder(containing path: String) throws(SQLiteError) {
        // Mostly the folder is there: one `access` instead of Foundation's walk of every component (a first call's open pays this).
        if let slash = path.lastIndex(of: "/"), access(String(path[..<slash]), F_OK) == 0 { return }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw SQLiteError(extendedCode: SQLITE_CANTOPEN, message: "cannot create the folder \(folder.path): \(error)")
        }
    }

    /// A writer connection in the configuration's journal mode. WAL is kept
    /// in the file; a rollback journal's mode is the connection's, so every
    /// writer sets it (and a file that was in WAL leaves it: SQLite
    /// checkpoints it and removes its `-wal`).
    private static func openWriter(path: String, configuration: DatabaseConfiguration) throws(SQLiteError) -> Database {
        if !configuration.usesFileLocks, FileHeader(path: path)?.isWAL == true {
            // `unix-none` has no shared memory to open a WAL file with: it leaves WAL through SQLite's own VFS first.
            var locking = configuration
            locking.usesFileLocks = true
            try openWriter(path: path, configuration: locking).close()
        }
        let database = try Database(path: path, readOnly: false, configuration: configuration)
        let wanted = configuration.journal == .wal ? "wal" : "delete"
        do throws(SQLiteError) {
            let statement = try database.makeStatement("PRAGMA journal_mode = \(wanted)")
            let mode = try statement.step() ? statement.string(at: 0) : ""
            statement.reset()
            guard mode.lowercased() == wanted else {
                throw SQLiteError(
                    extendedCode: SQLITE_ERROR, message: "could not set journal_mode \(wanted): the journal mode is \(mode)",
                    sql: statement.sql)
            }
        } catch {
            database.close()
            throw error
        }
        return database
    }

    /// Runs `body` with exclusive use of the writer; calls are serialized.
    ///
    /// A `write` from inside a write body on the same thread throws
    /// `SQLITE_MISUSE` rather than deadlock. When the body returns or throws,
    /// statements it left mid-run are rewound and a transaction it left open
    /// is rolled back; use `Database.inTransaction` to commit.
    @inlinable
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        // The generic shell is specialized where it is called; the pool's work is not generic (run unspecialized,
        // a body's Result and Optional cost a runtime metadata lookup on every call).
        var value: T?
        try writeBody { value = try body($0) }
        return value!
    }

    @usableFromInline
    func writeBody(_ body: (Database) throws -> Void) throws {
        let thread = currentThreadID()
        if writerThread.load(ordering: .acquiring) == thread {
            throw SQLiteError.misuse("DatabasePool.write called inside a write body on the same thread; use the Database that body was given")
        }
        var failure: (any Error)?
        writer.withLock { writer in
            guard let writer else {
                failure = SQLiteError.closed
                return
            }
            writerThread.store(thread, ordering: .releasing)
            writerInUse.store(true, ordering: .relaxed)
            defer { writerInUse.store(false, ordering: .relaxed) }
            // The read transaction kept from the writer's last read ends: the body begins its own.
            if writer.snapshot != nil { writer.endSnapshot() }
            if let share {
                share.cap.whileWriting(share.member) { allowance in
                    do {
                        try writer.limit(to: allowance)
                        try body(writer.database)
                    } catch {
                        failure = error
                    }
                    writer.database.endUse()
                    return try? writer.database.storedBytes()
                }
            } else {
                do { try body(writer.database) } catch { failure = error }
                writer.database.endUse()
            }
            // A rollback journal has no WAL hook: what the body committed is reported now.
            writer.database.publishCommittedChanges()
            writer.measureCache(into: pageCacheBytes)
            writerThread.store(0, ordering: .releasing)
            writeGeneration.add(1, ordering: .releasing)
        }
        endIdleSnapshots()
        if let failure { throw failure }
    }

    /// Ends the read transactions of idle readers, after a write.
    private func endIdleSnapshots() {
        readers.withLock { state in
            for reader in state.idle where reader.snapshot != nil { reader.endSnapshot() }
        }
    }

    /// Runs `body` on a read-only connection, waiting for one when `maximumReaders` are busy.
    ///
    /// Each statement in autocommit sees its own snapshot; a body that needs
    /// several statements to agree wraps them in
    /// `inTransaction(.deferred) { … }`. Writing through a reader fails with
    /// `SQLITE_READONLY`.
    @inlinable
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        var value: T?
        try readBody { value = try body($0) }
        return value!
    }

    @usableFromInline
    func readBody(_ body: (Database) throws -> Void) throws {
        if configuration.journal == .rollback {
            // A reader's shared lock would hold back the writer's commit: every call takes the one connection.
            if writerThread.load(ordering: .acquiring) == currentThreadID() {
                throw SQLiteError.misuse("DatabasePool.read called inside a write body of a rollback-journal pool; use the Database that body was given")
            }
            guard try readOnWriter(waiting: true, body) else { throw SQLiteError.closed }
            return
        }
        // An idle reader first: it keeps its snapshot from call to call while nothing is written, so its read
        // begins no transaction; on the writer each read is one (the WAL index's read lock, and the file's
        // size asked of the system when the WAL is empty). The writer reads while no reader is open and idle,
        // so a file read by one call at a time still needs one connection.
        let reader: PooledConnection
        if let idle = checkOutIdleReader() {
            reader = idle
        } else if try readOnWriter(waiting: false, body) {
            return
        } else {
            reader = try checkOutReader()
        }
        defer { checkIn(reader) }
        keepSnapshot(reader)
        try body(reader.database)
    }

    /// Before a read on a connection that keeps its read transaction between reads (a reader, or the writer
    /// in WAL): the one it keeps, if no write has committed since it began and it is younger than
    /// `maximumSnapshotAge`, else a new one.
    private func keepSnapshot(_ connection: PooledConnection) {
        let generation = writeGeneration.load(ordering: .acquiring)
        if let snapshot = connection.snapshot, snapshot.generation != generation || coarseMilliseconds() &- snapshot.began > Self.maximumSnapshotMilliseconds {
            connection.endSnapshot()
        }
        if connection.snapshot == nil { connection.beginSnapshot(generation: generation) }
    }

    /// After a read on such a connection: its statements rewound; its read transaction ended if the body
    /// ended it, closed the connection, or a write committed meanwhile.
    private func afterSnapshotRead(_ connection: PooledConnection) {
        connection.database.rewindStatements()
        if connection.snapshot != nil
            && (connection.database.isClosed || !connection.database.isInTransaction
                || connection.snapshot?.generation != writeGeneration.load(ordering: .acquiring)) {
            connection.endSnapshot()
        }
    }

    /// Runs a read on the writer when no one holds it, so that a file read
    /// by one call at a time needs one connection (its descriptors, its page
    /// cache), not two: readers open only once reads overlap. Such a read
    /// sees every write this pool committed before it began (a write ends the
    /// writer's kept snapshot before its body), and a write body holds the
    /// writer to its end, so it never sees half a transaction. `Database.isQueryOnly` makes it
    /// as read-only as a reader (`SQLITE_READONLY`). false when the writer is
    /// closed, or busy and `waiting` is false: the read then goes to a reader.
    private func readOnWriter(waiting: Bool, _ body: (Database) throws -> Void) throws -> Bool {
        var ran = false
        var failure: (any Error)?
        func run(_ writer: inout PooledConnection?) {
            guard let connection = writer else { return }
            ran = true
            writerInUse.store(true, ordering: .relaxed)
            defer { writerInUse.store(false, ordering: .relaxed) }
            let database = connection.database
            database.isQueryOnly = true
            // In WAL the writer keeps its read transaction from read to read, as a reader does, until a write
            // (its own, which ends it first, or one counted since) or its age ends it: a file read one call at a
            // time is then read without a transaction begun and ended each time (the WAL index's read lock, the
            // file's shared lock: two `fcntl`). A rollback journal's shared lock would hold back other
            // processes' writes for as long: there each read is its own transaction.
            let keeping = configuration.journal == .wal
            if keeping { keepSnapshot(connection) }
            do { try body(database) } catch { failure = error }
            if keeping { afterSnapshotRead(connection) }
            if database.isClosed {
                // The body closed it (as a reader's may be): the writer is opened again.
                connection.close(counting: pageCacheBytes)
                do {
                    writer = PooledConnection(database: try Self.openWriter(path: path, configuration: configuration))
                } catch {
                    writerIsOpen.store(false, ordering: .releasing)
                    writer = nil
                }
                return
            }
            database.isQueryOnly = false
            if !keeping { database.endUse() }
            connection.measureCache(into: pageCacheBytes)
        }
        if waiting {
            writer.withLock { run(&$0) }
        } else if writerInUse.load(ordering: .relaxed) {
            return false
        } else {
            _ = writer.withLockIfAvailable { run(&$0) }
        }
        if let failure { throw failure }
        return ran
    }

    /// An open reader nobody is using, without waiting; nil when there is none.
    private func checkOutIdleReader() -> PooledConnection? {
        // `DispatchTime(uptimeNanoseconds: 0)` is `DISPATCH_TIME_NOW`, a try that reads no clock (`.now()` reads one).
        guard readerPermits.wait(timeout: DispatchTime(uptimeNanoseconds: 0)) == .success else { return nil }
        if let reader = readers.withLock({ state in state.isClosed ? nil : state.idle.popLast() }) { return reader }
        readerPermits.signal()
        return nil
    }

    private func checkOutReader() throws(SQLiteError) -> PooledConnection {
        readerPermits.wait()
        enum Checkout { case idle(PooledConnection), open, closed }
        let checkout = readers.withLock { state -> Checkout in
            if state.isClosed { return .closed }
            if let reader = state.idle.popLast() { return .idle(reader) }
            openReaders.add(1, ordering: .relaxed)
            return .open
        }
        switch checkout {
        case .idle(let reader):
            return reader
        case .closed:
            readerPermits.signal()
            throw .closed
        case .open:
            do {
                return PooledConnection(database: try Database(path: path, readOnly: true, configuration: configuration))
            } catch {
                openReaders.subtract(1, ordering: .relaxed)
                readerPermits.signal()
                throw error
            }
        }
    }

    private func checkIn(_ reader: PooledConnection) {
        afterSnapshotRead(reader)
        let usable = !reader.database.isClosed
        reader.measureCache(into: pageCacheBytes)
        let keep = readers.withLock { state in
            if state.isClosed || !usable {
                openReaders.subtract(1, ordering: .relaxed)
                return false
            }
            state.idle.append(reader)
            return true
        }
        if !keep { reader.close(counting: pageCacheBytes) }
        readerPermits.signal()
    }

    /// Closes every connection, after the bodies in flight have finished; idempotent.
    ///
    /// Later `write` and `read` calls throw `SQLITE_MISUSE` "the database is
    /// closed". Must not be called from inside a body of this pool.
    public func close() {
        precondition(
            writerThread.load(ordering: .acquiring) != currentThreadID(),
            "DatabasePool.close() called inside a write body: it would wait for itself")
        closed.withLock { isDone in
            guard !isDone else { return }
            for reader in takeIdleReaders(closing: true) { reader.database.close() }
            // Holding every permit means every read in flight has returned its reader.
            for _ in 0..<configuration.maximumReaders { readerPermits.wait() }
            for _ in 0..<configuration.maximumReaders { readerPermits.signal() }
            writer.withLock { writer in
                writer?.endSnapshot()
                writer?.database.close()
                writer = nil
            }
            writerIsOpen.store(false, ordering: .releasing)
            pageCacheBytes.store(0, ordering: .releasing)
            isDone = true
        }
    }

    /// Connections open right now: the writer and the readers.
    public var openConnectionCount: Int {
        openReaders.load(ordering: .relaxed) + (writerIsOpen.load(ordering: .acquiring) ? 1 : 0)
    }

    /// Frees the writer's cached pages when no one holds it (and does nothing when someone does), for a file
    /// going idle while memory is short: it stays open, and its next call reads its pages again.
    public func releasePageCache() {
        _ = writer.withLockIfAvailable { writer in
            guard let writer else { return }
            writer.database.releasePageCache()
            writer.measureCache(into: pageCacheBytes)
        }
    }

    /// Closes the readers nobody is using, to give back file descriptors; they reopen on demand.
    public func closeIdleReaders() {
        for reader in takeIdleReaders(closing: false) { reader.close(counting: pageCacheBytes) }
    }

    /// What a connection holds besides its page cache, estimated: SQLite's
    /// own heap for it (lookaside, schema, prepared statements), daogate's
    /// objects for an open file, and in WAL the `-shm` mapping. Measured
    /// in `DescriptorBudgetTests` and by `bench/run users`: with a rollback journal, a server holding
    /// 10,000 open users' files, each written once and read once, grew 30.2 KB per file, of which its
    /// page cache (measured apart, `pageCacheBytes`) was 4.5–7 KB and its prepared statements 8 KB.
    public static func bytesPerConnection(_ journal: JournalMode) -> Int {
        switch journal {
        case .wal: 64 * 1024
        case .rollback: 24 * 1024
        }
    }

    /// What the pool holds now: in WAL two descriptors per open connection
    /// (the file and its `-wal`) and the `-shm` they share, with a rollback
    /// journal the file alone (its journal is open only while a write runs);
    /// `bytesPerConnection` per connection and the page caches as last measured.
    /// What the open connections hold besides their page caches (`bytesPerConnection` each).
    public var idleBytes: Int { openConnectionCount * Self.bytesPerConnection(configuration.journal) }

    public var resourceCost: ResourceCost {
        let connections = openConnectionCount
        guard connections > 0 else { return .zero }
        let journal = configuration.journal
        return ResourceCost(descriptors: journal == .wal ? 2 * connections + 1 : connections,
                            bytes: connections * Self.bytesPerConnection(journal) + pageCacheBytes.load(ordering: .relaxed))
    }

    private func takeIdleReaders(closing: Bool) -> [PooledConnection] {
        readers.withLock { state in
            if closing { state.isClosed = true }
            let idle = state.idle
            state.idle = []
            openReaders.subtract(idle.count, ordering: .relaxed)
            return idle
        }
    }
}

/// A connection handed between threads by the pool.
///
/// `Database` is not Sendable; the pool's locks give each connection to one
/// thread at a time, which makes the hand-over safe.
private final class PooledConnection: @unchecked Sendable {
    let database: Database
    /// A reader's open read transaction: the write count when it began, and
    /// when (`coarseMilliseconds()`).
    var snapshot: (generation: UInt64, began: UInt64)?

    /// Its page cache's bytes when last measured, counted in the pool's total.
    var cacheBytes = 0
    /// A writer's `max_page_count` as last set for a shared cap, and its page size.
    private var limitPages: Int?
    private var pageSize: Int?

    init(database: Database) {
        self.database = database
    }

    /// Measures the page cache again (a few loads inside SQLite), by the thread that holds the connection.
    func measureCache(into total: borrowing Atomic<Int>) {
        let now = database.pageCacheBytes
        guard now != cacheBytes else { return }
        total.add(now - cacheBytes, ordering: .relaxed)
        cacheBytes = now
    }

    /// Sets the writer's `max_page_count` to the pages that fit in `bytes`, unless it is so already.
    func limit(to bytes: Int) throws(SQLiteError) {
        let size: Int
        if let pageSize {
            size = pageSize
        } else {
            size = try database.pageSize()
            pageSize = size
        }
        let pages = max(1, bytes / size)
        guard pages != limitPages else { return }
        // A file larger than its share keeps its size for now: set again at each write, as it may shrink.
        limitPages = try database.limitPages(to: pages) == pages ? pages : nil
    }

    func close(counting total: borrowing Atomic<Int>) {
        total.subtract(cacheBytes, ordering: .relaxed)
        cacheBytes = 0
        database.close()
    }

    /// Opens a read transaction; SQLite takes the snapshot at its first read.
    func beginSnapshot(generation: UInt64) {
        guard (try? database.execute("BEGIN DEFERRED")) != nil else { return }
        snapshot = (generation, coarseMilliseconds())
    }

    func endSnapshot() {
        snapshot = nil
        guard !database.isClosed else { return }
        database.rewindStatements()
        if database.isInTransaction { try? database.execute("COMMIT") }
        if database.isInTransaction { try? database.execute("ROLLBACK") }
    }
}

/// A monotonic clock in milliseconds, from the kernel's coarse clock: a few
/// milliseconds of resolution, at a fraction of the cost of the precise one
/// (it is read on every read, to bound a snapshot's age).
private func coarseMilliseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
    return UInt64(now.tv_sec) &* 1000 &+ UInt64(now.tv_nsec) / 1_000_000
}

/// The calling thread's identity, to detect re-entrant writes.
private func currentThreadID() -> UInt {
    #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
    #else
    UInt(pthread_self())
    #endif
}
