import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Logging
import Synchronization

/// What the background sweep removes and when: the reference's
/// `APPurgeablePath` ages and `APUserCacheCleaner`, run by the server itself.
public struct PurgePolicy: Sendable {
    /// Seconds between two passes; nil: no sweep (`--purge-every 0`).
    public var every: Double?
    /// Purgeable key-value entries last written this many seconds ago or
    /// longer are removed (`--purge-older-than`).
    public var olderThan: Double
    /// The most database files one pass visits; the next pass goes on where
    /// this one stopped, so a walk over every file takes `files / filesPerPass` passes.
    public var filesPerPass: Int
    /// A file is vacuumed when its free pages are at least this fraction of its pages…
    public var vacuumFreeFraction: Double
    /// …and at least this many bytes.
    public var vacuumFreeBytes: Int64

    public static let defaultEvery: Double = 3600
    public static let defaultOlderThan: Double = 30 * 86_400
    public static let defaultFilesPerPass = 1000

    public init(every: Double? = defaultEvery, olderThan: Double = defaultOlderThan, filesPerPass: Int = defaultFilesPerPass,
                vacuumFreeFraction: Double = 0.25, vacuumFreeBytes: Int64 = 1 << 20) {
        self.every = every
        self.olderThan = olderThan
        self.filesPerPass = max(1, filesPerPass)
        self.vacuumFreeFraction = vacuumFreeFraction
        self.vacuumFreeBytes = vacuumFreeBytes
    }
}

/// What one pass of the sweep did.
struct SweepReport: Sendable {
    var files = 0
    var kvEntries = 0
    var diskEntries = 0
    var memoryEntries = 0
    /// Bytes the files shrank by when vacuumed.
    var bytesReturned: Int64 = 0
    var vacuums = 0
    var errors = 0
    var seconds: Double = 0
    var time = Date()

    var value: Value {
        ["time": .string(ISO8601DateFormatter().string(from: time)), "files": .integer(Int64(files)),
         "kvEntries": .integer(Int64(kvEntries)), "diskCacheEntries": .integer(Int64(diskEntries)),
         "memoryCacheEntries": .integer(Int64(memoryEntries)), "vacuums": .integer(Int64(vacuums)),
         "bytesReturned": .integer(bytesReturned), "errors": .integer(Int64(errors)), "seconds": .double(seconds)]
    }
}

/// The sweep's passes, counted for `GET /metrics` and kept for `GET /events`.
final class SweepLog: Sendable {
    private struct State {
        var passes = 0
        var total = SweepReport()
        /// The most recent passes that removed or gave back something, oldest first.
        var recent: [SweepReport] = []
        var last: SweepReport?
    }

    private let state = Mutex(State())
    static let kept = 20

    /// Adds one file's (or the memory caches') work to the totals, as the pass goes.
    func add(_ work: SweepReport) {
        state.withLock { state in
            state.total.files += work.files
            state.total.kvEntries += work.kvEntries
            state.total.diskEntries += work.diskEntries
            state.total.memoryEntries += work.memoryEntries
            state.total.bytesReturned += work.bytesReturned
            state.total.vacuums += work.vacuums
            state.total.errors += work.errors
        }
    }

    /// Records a finished pass (its work already added).
    func record(_ report: SweepReport) {
        state.withLock { state in
            state.passes += 1
            state.total.seconds += report.seconds
            state.last = report
            if report.kvEntries + report.diskEntries + report.memoryEntries + report.vacuums + report.errors > 0 {
                state.recent.append(report)
                if state.recent.count > Self.kept { state.recent.removeFirst() }
            }
        }
    }

    /// `{"passes", "last", "recent"}` (most recent first) for `GET /events`.
    func value() -> Value {
        let (passes, last, recent) = state.withLock { ($0.passes, $0.last, $0.recent) }
        return ["passes": .integer(Int64(passes)), "last": last?.value ?? .null, "recent": .array(recent.reversed().map(\.value))]
    }

    /// The Prometheus lines of the sweep's counters.
    func exposition() -> [String] {
        let (passes, total, last) = state.withLock { ($0.passes, $0.total, $0.last) }
        return [
            "# HELP daogate_purge_passes_total Passes of the background sweep.", "# TYPE daogate_purge_passes_total counter",
            "daogate_purge_passes_total \(passes)",
            "# HELP daogate_purge_files_total Database files the sweep visited.", "# TYPE daogate_purge_files_total counter",
            "daogate_purge_files_total \(total.files)",
            "# HELP daogate_purge_entries_total Entries the sweep removed, by layer.", "# TYPE daogate_purge_entries_total counter",
            #"daogate_purge_entries_total{layer="kv"} \#(total.kvEntries)"#,
            #"daogate_purge_entries_total{layer="disk_cache"} \#(total.diskEntries)"#,
            #"daogate_purge_entries_total{layer="memory_cache"} \#(total.memoryEntries)"#,
            "# HELP daogate_purge_vacuums_total Files the sweep vacuumed.", "# TYPE daogate_purge_vacuums_total counter",
            "daogate_purge_vacuums_total \(total.vacuums)",
            "# HELP daogate_purge_bytes_returned_total Bytes vacuumed files shrank by.", "# TYPE daogate_purge_bytes_returned_total counter",
            "daogate_purge_bytes_returned_total \(total.bytesReturned)",
            "# HELP daogate_purge_errors_total Files whose sweep failed (logged).", "# TYPE daogate_purge_errors_total counter",
            "daogate_purge_errors_total \(total.errors)",
            "# HELP daogate_purge_pass_seconds_total Seconds the sweep's passes took, all together.",
            "# TYPE daogate_purge_pass_seconds_total counter", "daogate_purge_pass_seconds_total \(total.seconds)",
            "# HELP daogate_purge_last_pass_seconds Seconds the last pass took.", "# TYPE daogate_purge_last_pass_seconds gauge",
            "daogate_purge_last_pass_seconds \(last?.seconds ?? 0)",
        ]
    }
}

/// The background sweep (`serve --purge-every`): on a thread of its own,
/// every `policy.every` seconds, a pass visits at most `policy.filesPerPass`
/// database files (the common ones, users', custom storages'), going on
/// where the previous pass stopped, and in each:
///
/// - removes the purgeable key-value entries last written `policy.olderThan`
///   seconds ago or longer, in transactions of at most 256 entries;
/// - removes the expired entries of its disk caches, in one transaction;
/// - vacuums it when its free pages pass `vacuumFreeFraction` of its pages
///   and `vacuumFreeBytes`, giving the space back to the file system.
///
/// Then the expired entries of the memory caches go. A file is opened
/// through the engine's registry like a call's, and closed again after the
/// visit if the sweep opened it (`Engine.visitExistingDatabase`): the walk
/// holds one file at a time, within the descriptor budget, and the calls'
/// open files stay. After each file the thread sleeps twice as long as the
/// visit took (at least half a millisecond): it keeps to about a third of
/// a core, and a call waiting for a file's writer waits for one small
/// transaction at most.
public final class PurgeSweep: Sendable {
    public let policy: PurgePolicy
    private let gateway: Gateway
    private let logger: Logger?
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private struct State {
        var stopping = false
        var running = false
        /// The files left to visit of the current walk, last first.
        var queue: [DatabaseLocation] = []
    }
    private let state = Mutex(State())

    /// The shortest pause between two files, seconds.
    static let pauseBetweenFiles = 0.0005
    /// After each file the sweep pauses this many times as long as the visit
    /// took: it keeps to about a third of one core, however loaded the
    /// machine is, and leaves the rest to the calls.
    static let pausePerVisit = 2.0

    public init(gateway: Gateway, policy: PurgePolicy, logger: Logger? = nil) {
        self.gateway = gateway
        self.policy = policy
        self.logger = logger
    }

    /// Starts the thread, unless the policy has no interval.
    public func start() {
        guard let every = policy.every, every > 0 else { return }
        state.withLock { $0.running = true }
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopping }) {
                if wake.wait(timeout: .now() + every) == .success { break }
                if state.withLock({ $0.stopping }) { break }
                pass()
            }
            finished.signal()
        }
    }

    /// Stops the thread after the file it is on.
    public func stop() {
        let running = state.withLock { state in
            state.stopping = true
            return state.running
        }
        guard running else { return }
        wake.signal()
        finished.wait()
    }

    /// One pass; what it did is recorded in the event log.
    @discardableResult
    func pass() -> SweepReport {
        let gateway = gateway.current
        let engine = gateway.engine
        let started = ContinuousClock.now
        var report = SweepReport()
        let batch: [DatabaseLocation] = state.withLock { state in
            if state.queue.isEmpty {
                state.queue = ([nil] + engine.customStorages()).flatMap { engine.existingLocations(storage: $0) }.reversed()
            }
            let count = min(policy.filesPerPass, state.queue.count)
            defer { state.queue.removeLast(count) }
            return Array(state.queue.suffix(count).reversed())
        }
        let log = gateway.events.sweeps
        for location in batch {
            if state.withLock({ $0.stopping }) { break }
            var work = SweepReport()
            let visitStarted = ContinuousClock.now
            visit(location, gateway, &work)
            let took = (ContinuousClock.now - visitStarted).seconds
            log.add(work)
            report.files += work.files
            report.kvEntries += work.kvEntries
            report.diskEntries += work.diskEntries
            report.vacuums += work.vacuums
            report.bytesReturned += work.bytesReturned
            report.errors += work.errors
            // A stop wakes it (and the loop in `start` then sees `stopping`).
            if wake.wait(timeout: .now() + max(Self.pauseBetweenFiles, took * Self.pausePerVisit)) == .success { break }
        }
        var memory = SweepReport()
        memory.memoryEntries = gateway.memoryCaches.purgeExpired(now: gateway.clock.now()).entries
        log.add(memory)
        report.memoryEntries = memory.memoryEntries
        report.seconds = (ContinuousClock.now - started).seconds
        log.record(report)
        if report.kvEntries + report.diskEntries + report.vacuums + report.errors > 0 {
            logger?.info("purge sweep: \(report.files) files, \(report.kvEntries) kv and \(report.diskEntries) disk-cache entries removed, \(report.vacuums) vacuumed (\(report.bytesReturned) bytes back), \(report.errors) errors")
        }
        return report
    }

    private func visit(_ location: DatabaseLocation, _ gateway: Gateway, _ report: inout SweepReport) {
        let engine = gateway.engine
        do {
            let cutoff = gateway.clock.now() - policy.olderThan
            let visited: Void? = try engine.visitExistingDatabase(location) { database in
                report.kvEntries += try gateway.kv.purgeAged(in: database, writtenBefore: cutoff).entries
                report.diskEntries += try gateway.diskCaches.purgeExpired(in: database, maxAge: policy.olderThan).entries
                let before = engine.databaseBytes(location)
                if try vacuumIfSparse(database) {
                    report.vacuums += 1
                    report.bytesReturned += max(0, before - engine.databaseBytes(location))
                }
            }
            if visited != nil { report.files += 1 }
        } catch {
            report.errors += 1
            logger?.warning("purge sweep: \(location): \(error)")
        }
    }

    /// Vacuums the file when its free pages pass the policy's thresholds; whether it did.
    private func vacuumIfSparse(_ database: OpenDatabase) throws -> Bool {
        try database.pool.write { db in
            func pragma(_ name: String) throws -> Int64 {
                let statement = try db.cachedStatement("PRAGMA \(name)")
                defer { statement.reset() }
                _ = try statement.step()
                return statement.int64(at: 0)
            }
            let pages = try pragma("page_count")
            let free = try pragma("freelist_count")
            let pageSize = try pragma("page_size")
            guard free * pageSize >= policy.vacuumFreeBytes, Double(free) >= Double(pages) * policy.vacuumFreeFraction else {
                return false
            }
            try db.execute("VACUUM")
            // A WAL file gives its pages back at the checkpoint; in rollback mode this does nothing.
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return true
        }
    }
}
