import SQLiteDatabase
import DAOEngine
import Foundation
import Testing

/// What one open database costs in file descriptors, measured on SQLite
/// itself: the budget the server checks its settings with must not be short.
@Suite struct DescriptorBudgetTests {
    let folder = TemporaryFolder()

    /// The descriptors of this process open on files of the test's folder
    /// (other tests running in parallel open their own elsewhere).
    func descriptorsInFolder() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry))?.hasPrefix(folder.path) == true
        }.count
    }

    @Test(arguments: [1, 2, 4])
    func aDatabaseWithEveryReaderOpenHoldsItsBudget(_ readers: Int) throws {
        let configuration = Engine.Configuration(dataDirectory: folder.path, database: .init(maximumReaders: readers))
        let pool = try DatabasePool(path: folder.file(), configuration: configuration.database)
        try pool.write { try $0.execute("create table t (v integer); insert into t values (1)") }
        // Every reader busy at once, each having read (so each has its -wal open).
        let held = pool.holdingReaders(readers, read: { try $0.execute("select * from t") }) {
            #expect(pool.openConnectionCount == 1 + readers)
            #expect(descriptorsInFolder() == configuration.descriptorsPerDatabase)
        }
        #expect(held)
        pool.close()
        #expect(descriptorsInFolder() == 0)
    }

    @Test func theEngineBudgetCountsEveryDatabaseAThreadMayHoldOpen() {
        let configuration = Engine.Configuration(dataDirectory: "", database: .init(maximumReaders: 2), maximumOpenDescriptors: 900)
        #expect(configuration.descriptorsPerDatabase == 7)
        // The budget, and for each thread one database at its most past it and a temporary file.
        #expect(configuration.maximumDescriptors(threads: 2) == 900 + 2 * (7 + 1))
    }

    /// A file read and written by one call at a time holds one connection:
    /// its file, its -wal and its -shm, as the pool says it does.
    @Test func aFileUsedByOneCallAtATimeHoldsThreeDescriptors() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: .init(maximumReaders: 4))
        try pool.write { try $0.execute("create table t (v integer); insert into t values (1)") }
        _ = try pool.read { try $0.scalar("select count(*) from t") }
        #expect(pool.openConnectionCount == 1)
        #expect(descriptorsInFolder() == 3)
        #expect(pool.resourceCost.descriptors == 3)
        #expect(pool.resourceCost.bytes >= DatabasePool.bytesPerConnection(.wal))
        pool.close()
        #expect(pool.resourceCost == .zero)
    }
}

/// The registry's mechanism: leases by key, idle entries in LRU order, the
/// budget of descriptors and bytes (the 100,000-user run itself is `bench/run users`).
@Suite struct LeasedLRUTests {
    /// What a user's file holds in these tests: one connection.
    static let file = ResourceCost(descriptors: 3, bytes: 100_000)

    /// A user's file with a rollback journal (the default), as `bench/run users` measures it: one descriptor,
    /// the estimate per connection and about 19 kB of pages.
    static let rollbackFile = ResourceCost(descriptors: 1, bytes: DatabasePool.bytesPerConnection(.rollback) + 19_000)

    /// 100,000 users touched in turn, 8 calls in flight at once, under the
    /// default budgets (13,976 descriptors under a hard limit of 20,000; 400 MiB):
    /// never past the budget by more than the calls in flight, and at the end
    /// exactly as many files open as the binding budget admits.
    @Test(arguments: [
        (file: Self.file, descriptors: 12_000, bytes: 384 << 20, open: 4_000),  // WAL: the descriptors bind (3 each)
        (file: Self.rollbackFile, descriptors: 13_976, bytes: 400 << 20, open: (400 << 20) / Self.rollbackFile.bytes),  // the bytes bind
    ])
    func oneHundredThousandUsersStayWithinTheBudget(_ file: ResourceCost, descriptors: Int, bytes: Int, open: Int) {
        let budget = ResourceBudget(descriptors: descriptors, bytes: bytes)
        var files = LeasedLRU<Int, Int>(budget: budget)
        var closed = 0
        var peak = ResourceCost.zero
        // Calls in flight: up to 8 users leased at once, as 8 threads would.
        var inFlight: [LeasedLRU<Int, Int>.Entry] = []
        for user in 0..<100_000 {
            let entry = files.lease(user) ?? files.insert(user, user, cost: file)
            inFlight.append(entry)
            if inFlight.count == 8 {
                for entry in inFlight { files.release(entry, cost: file) }
                inFlight.removeAll()
            }
            closed += files.evictions().count
            peak = ResourceCost(descriptors: max(peak.descriptors, files.total.descriptors), bytes: max(peak.bytes, files.total.bytes))
            // Over the budget by at most the calls in flight.
            #expect(files.total.descriptors <= budget.descriptors + 8 * file.descriptors)
        }
        for entry in inFlight { files.release(entry, cost: file) }
        closed += files.evictions().count
        #expect(files.isWithinBudget)
        #expect(files.count == open)
        #expect(closed == 100_000 - open)
        #expect(peak.descriptors <= descriptors + 8 * file.descriptors)
        #expect(peak.bytes <= bytes + 8 * file.bytes)
    }

    @Test func theLeastRecentlyUsedIdleFileClosesFirstAndBusyOnesNever() {
        var files = LeasedLRU<String, String>(budget: ResourceBudget(descriptors: 9, bytes: .max))
        for name in ["a", "b", "c"] { files.release(files.insert(name, name, cost: Self.file), cost: Self.file) }
        #expect(files.isWithinBudget)
        // "a" used again: "b" is now the least recently used.
        files.release(files.lease("a")!, cost: Self.file)
        let busy = files.lease("b")!
        files.insert("d", "d", cost: Self.file)
        #expect(files.evictions() == ["c"])  // "b" is busy
        files.release(busy, cost: Self.file)
        #expect(files.evictions().isEmpty)
        #expect(files.entries.keys.sorted() == ["a", "b", "d"])
    }

    /// The idle list is kept lazily: a file leased while in it keeps its place, and the walk of the evictions
    /// passes it over (busy) and takes it out; its release puts it behind the newest. A file used and released
    /// since it went idle gets its second chance behind the newest when the walk meets it.
    @Test func aFileLeasedWhileInTheListIsPassedOverAndComesBackAsTheNewest() {
        var files = LeasedLRU<String, String>(budget: ResourceBudget(descriptors: 9, bytes: .max))
        for name in ["a", "b", "c"] { files.release(files.insert(name, name, cost: Self.file), cost: Self.file) }
        let a = files.lease("a")!  // busy, still first in the list
        let d = files.insert("d", "d", cost: Self.file)
        #expect(files.evictions() == ["b"])  // a is busy: passed over
        files.release(a, cost: Self.file)  // a: the newest idle file
        files.release(d, cost: Self.file)  // then d
        files.insert("e", "e", cost: Self.file)
        #expect(files.evictions() == ["c"])
        files.release(files.lease("a")!, cost: Self.file)  // a used again: d is now the least recently used
        files.insert("f", "f", cost: Self.file)
        #expect(files.evictions() == ["d"])
        #expect(files.entries.keys.sorted() == ["a", "e", "f"])
        // The walk over the idle files sees idle ones only (e and f are leased: inserted, never released).
        var idle: [String] = []
        files.forEachIdle { idle.append($0.key); return true }
        #expect(idle == ["a"])
        #expect(files.removeOldestIdle() == "a")
        #expect(files.removeOldestIdle() == nil)
        #expect(files.total == ResourceCost(descriptors: 6, bytes: 200_000))
    }

    @Test func aFileThatGrewIsChargedWhatItHoldsNow() {
        var files = LeasedLRU<String, String>(budget: ResourceBudget(descriptors: 10, bytes: .max))
        let a = files.insert("a", "a", cost: Self.file)
        files.release(a, cost: Self.file)
        let b = files.insert("b", "b", cost: Self.file)
        // b opened two readers meanwhile: 3 + 2 × 2 descriptors.
        files.release(b, cost: ResourceCost(descriptors: 7, bytes: 300_000))
        #expect(files.total.descriptors == 10)
        #expect(files.evictions().isEmpty)
        files.insert("c", "c", cost: Self.file)
        #expect(files.evictions() == ["a"])
        #expect(files.evictions() == [])  // 10: b and c, c leased
        #expect(files.remove("b") != nil)
        #expect(files.total == Self.file)
    }

    @Test func theOldCountOfFilesStillCaps() {
        var files = LeasedLRU<Int, Int>(budget: ResourceBudget(descriptors: .max, bytes: .max, files: 2))
        for key in 0..<5 { files.release(files.insert(key, key, cost: Self.file), cost: Self.file) }
        _ = files.evictions()
        #expect(files.entries.keys.sorted() == [3, 4])
    }
}
