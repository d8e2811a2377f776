import CSQLite
import SQLiteDatabase
import DAOEngine
import DAOValue
import Dispatch
import Foundation
import Synchronization
import Testing

/// One writer and on-demand read-only readers over a WAL file, used from plain threads.
@Suite struct SQLiteDatabasePoolTests {
    let folder = TemporaryFolder()

    func makePool(_ configuration: DatabaseConfiguration = .init()) throws -> DatabasePool {
        let pool = try DatabasePool(path: folder.file(), configuration: configuration)
        try pool.write { try $0.execute("create table t(v integer)") }
        return pool
    }

    /// Runs `body(i)` for i in 0..<count, each on its own thread; false if they did not all finish within `timeout` seconds.
    func onThreads(_ count: Int, timeout: Double = 60, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                body(index)
                group.leave()
            }.start()
        }
        return group.wait(timeout: .now() + timeout) == .success
    }

    @Test func writerIsInWALModeWithForeignKeys() throws {
        let pool = try makePool()
        #expect(try pool.write { try $0.scalar("pragma journal_mode") } == "wal")
        #expect(try pool.read { try $0.scalar("pragma journal_mode") } == "wal")
        #expect(try pool.write { try $0.scalar("pragma foreign_keys") } == 1)
        #expect(try pool.write { try $0.scalar("pragma busy_timeout") } == 5000)
        #expect(try pool.read { try $0.scalar("pragma busy_timeout") } == 5000)
    }

    @Test(arguments: [(Synchronous.normal, Value.integer(1)), (.full, 2)])
    func synchronousFollowsTheConfiguration(_ synchronous: Synchronous, _ expected: Value) throws {
        let pool = try makePool(.init(synchronous: synchronous, busyTimeoutMilliseconds: 1234))
        #expect(try pool.write { try $0.scalar("pragma synchronous") } == expected)
        #expect(try pool.write { try $0.scalar("pragma busy_timeout") } == 1234)
    }

    @Test func createsTheFileAndItsFolders() throws {
        let path = folder.file("a/b/c/data.sqlite")
        let pool = try DatabasePool(path: path)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(pool.path == path)
        #expect(pool.openConnectionCount == 1)
    }

    @Test func atLeastOneReaderIsRequired() {
        let error = sqliteError { _ = try DatabasePool(path: folder.file(), configuration: .init(maximumReaders: 0)) }
        #expect(error?.code == SQLITE_MISUSE)
    }

    @Test func readersAreReadOnly() throws {
        let pool = try makePool()
        try pool.holdingWriter {
            try pool.read { db in
                #expect(db.isReadOnly)
                let error = sqliteError { try db.execute("insert into t values (1)") }
                #expect(error?.code == SQLITE_READONLY)
            }
        }
        #expect(try pool.write { try $0.scalar("select count(*) from t") } == 0)
    }

    /// One call at a time needs one connection: a read runs on the writer
    /// when it is free, as read-only as a reader, and leaves it writable.
    @Test func aReadAloneRunsOnTheWriterAndCannotWrite() throws {
        let pool = try makePool()
        try pool.read { db in
            #expect(!db.isReadOnly)
            let error = sqliteError { try db.execute("insert into t values (1)") }
            #expect(error?.code == SQLITE_READONLY)
        }
        #expect(pool.openConnectionCount == 1)
        try pool.write { try $0.execute("insert into t values (2)") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
        #expect(pool.openConnectionCount == 1)
    }

    /// A read that finds the writer busy opens a reader: readers open only once calls overlap.
    @Test func aReaderOpensOnlyWhenTheWriterIsBusy() throws {
        let pool = try makePool()
        let count = try pool.holdingWriter { try pool.read { try $0.scalar("select count(*) from t") } }
        #expect(count == 0)
        #expect(pool.openConnectionCount == 2)
    }

    /// Once a reader is open, reads go to it while it is idle, not to the free writer: it keeps its snapshot
    /// from read to read (no read transaction each, as the writer's autocommit would begin), and takes a new
    /// one after a write.
    @Test func anOpenIdleReaderServesReadsBeforeTheWriter() throws {
        let pool = try makePool()
        _ = try pool.holdingWriter { try pool.read { try $0.scalar("select count(*) from t") } }
        for _ in 0..<3 {
            try pool.read { db in
                #expect(db.isReadOnly)
                #expect(db.isInTransaction)
            }
        }
        try pool.write { try $0.execute("insert into t values (1)") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
        #expect(pool.openConnectionCount == 2)
    }

    /// In WAL a read on the writer keeps its read transaction for the next read, as a reader does: a file read
    /// one call at a time begins and ends no transaction on each (the file's shared lock and the WAL index's
    /// read lock, two `fcntl`). A write ends it before its body, and the next read sees the write; a body's own
    /// deferred transaction nests in it as a savepoint; another connection's write is seen once the snapshot is
    /// `maximumSnapshotAge` (100 ms) old.
    @Test func aReadOnTheWriterKeepsItsSnapshotUntilAWrite() throws {
        let pool = try makePool()
        for _ in 0..<3 {
            try pool.read { db in
                #expect(!db.isReadOnly)  // the writer
                #expect(db.isInTransaction)
            }
        }
        #expect(pool.openConnectionCount == 1)
        try pool.write { db in
            #expect(!db.isInTransaction)
            try db.execute("insert into t values (1)")
        }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
        #expect(try pool.read { db in try db.inTransaction(.deferred) { try db.scalar("select count(*) from t") } } == 1)
        try pool.read { db in #expect(db.isInTransaction) }
        let other = try folder.database()
        try other.execute("insert into t values (2)")
        other.close()
        Thread.sleep(forTimeInterval: 0.15)
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 2)
        #expect(pool.openConnectionCount == 1)
    }

    @Test func readsSeeCommittedWritesOnly() throws {
        let pool = try makePool()
        try pool.write { db in
            try db.inTransaction {
                try db.run("insert into t values (?)", [1])
                #expect(try pool.read { try $0.scalar("select count(*) from t") } == 0)
            }
        }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
    }

    @Test func writeInsideAWriteThrowsInsteadOfDeadlocking() throws {
        let pool = try makePool()
        try pool.write { _ in
            let error = sqliteError { try pool.write { _ in } }
            #expect(error?.code == SQLITE_MISUSE)
        }
        try pool.write { try $0.execute("insert into t values (1)") }
    }

    @Test func writeBodyLeavingATransactionOpenIsRolledBack() throws {
        let pool = try makePool()
        try pool.write { db in
            try db.execute("begin immediate; insert into t values (1)")
        }
        try pool.write { (db) throws in
            #expect(!db.isInTransaction)
            #expect(try db.scalar("select count(*) from t") == 0)
        }
    }

    @Test func readBodyLeavingAStatementMidRunDoesNotPinItsSnapshot() throws {
        let pool = try makePool(.init(maximumReaders: 1))
        try pool.write { try $0.execute("insert into t values (1), (2)") }
        try pool.read { db in
            let statement = try db.cachedStatement("select v from t")
            #expect(try statement.step())
        }
        try pool.write { try $0.execute("insert into t values (3)") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 3)
        #expect(try pool.read { try $0.rows("select v from t").count } == 3)
    }

    @Test func aReadBodyNestsItsTransactionInThePoolsSnapshot() throws {
        let pool = try makePool(.init(maximumReaders: 1))
        try pool.write { try $0.execute("insert into t values (1)") }
        let counts = try pool.read { db in
            try db.inTransaction(.deferred) { [try db.scalar("select count(*) from t"), try db.scalar("select count(*) from t")] }
        }
        #expect(counts == [1, 1])
        try pool.write { try $0.execute("insert into t values (2)") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 2)
    }

    @Test func everyReadSeesTheWritesCommittedBeforeIt() throws {
        let pool = try makePool(.init(maximumReaders: 2))
        for value in 1...50 {
            try pool.write { try $0.execute("insert into t values (\(value))") }
            #expect(try pool.read { try $0.scalar("select count(*) from t") } == .integer(Int64(value)))
        }
    }

    @Test func aWriteFromAnotherConnectionIsSeenOnceTheSnapshotAgesOut() throws {
        let path = folder.file()
        let pool = try DatabasePool(path: path)
        try pool.write { try $0.execute("create table t(v integer)") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 0)
        let outsider = try Database(path: path, readOnly: false, configuration: .init())
        try outsider.execute("insert into t values (1)")
        outsider.close()
        Thread.sleep(forTimeInterval: 0.15)
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
    }

    @Test func concurrentReadsSeeConsistentSnapshotsWhileTwoThreadsWrite() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: .init(maximumReaders: 4))
        try pool.write { db in
            try db.execute("""
                create table a(id integer primary key, v integer not null);
                create table b(id integer primary key, v integer not null);
                with recursive n(i) as (select 1 union all select i + 1 from n where i < 20)
                insert into a select i, 0 from n;
                insert into b select id, 0 from a;
                """)
        }
        let failures = Mutex<[String]>([])
        let readsDone = Atomic<Int>(0)
        let busyReaders = Atomic<Int>(0)
        let peakReaders = Atomic<Int>(0)
        let peakConnections = Atomic<Int>(0)
        let finished = onThreads(10) { index in
            do {
                if index < 2 {
                    for step in 0..<300 {
                        let amount = Int64(step % 7 + 1)
                        try pool.write { db in
                            try db.inTransaction {
                                try db.run("update a set v = v + ? where id = ?", [.integer(amount), .integer(Int64(step % 20 + 1))])
                                try db.run("update b set v = v + ? where id = ?", [.integer(amount), .integer(Int64((step * 7 + index) % 20 + 1))])
                            }
                        }
                    }
                } else {
                    for _ in 0..<300 {
                        try pool.read { db in
                            let busy = busyReaders.add(1, ordering: .relaxed).newValue
                            peakReaders.max(busy, ordering: .relaxed)
                            peakConnections.max(pool.openConnectionCount, ordering: .relaxed)
                            defer { busyReaders.subtract(1, ordering: .relaxed) }
                            let sums = try db.inTransaction(.deferred) {
                                (try db.scalar("select sum(v) from a"), try db.scalar("select sum(v) from b"))
                            }
                            if sums.0 != sums.1 {
                                failures.withLock { $0.append("inconsistent snapshot: \(sums)") }
                            }
                        }
                        readsDone.add(1, ordering: .relaxed)
                    }
                }
            } catch {
                failures.withLock { $0.append("thread \(index): \(error)") }
            }
        }
        #expect(finished, "threads did not finish: deadlock?")
        #expect(failures.withLock { $0 } == [])
        #expect(readsDone.load(ordering: .relaxed) == 8 * 300)
        // Read bodies at once: the four readers, and one on the writer while no write holds it.
        #expect(peakReaders.load(ordering: .relaxed) <= 4 + 1)
        #expect(peakConnections.load(ordering: .relaxed) <= 5)
        let total = try pool.read { db in
            try db.inTransaction(.deferred) { (try db.scalar("select sum(v) from a"), try db.scalar("select sum(v) from b")) }
        }
        let expected = Int64(2 * (0..<300).reduce(0) { $0 + $1 % 7 + 1 })
        #expect(total.0 == .integer(expected))
        #expect(total.1 == .integer(expected))
    }

    @Test func readersNeverExceedTheMaximumAndWaitersGetOne() throws {
        let pool = try makePool(.init(maximumReaders: 2))
        let busyReaders = Atomic<Int>(0)
        let peakReaders = Atomic<Int>(0)
        let peakConnections = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        let finished = onThreads(8) { _ in
            for _ in 0..<20 {
                _ = try? pool.read { db in
                    let busy = busyReaders.add(1, ordering: .relaxed).newValue
                    peakReaders.max(busy, ordering: .relaxed)
                    peakConnections.max(pool.openConnectionCount, ordering: .relaxed)
                    usleep(200)
                    busyReaders.subtract(1, ordering: .relaxed)
                    _ = try db.scalar("select count(*) from t")
                    reads.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(finished)
        #expect(reads.load(ordering: .relaxed) == 160)
        // Two readers and the writer, when it is free.
        #expect(peakReaders.load(ordering: .relaxed) <= 3)
        #expect(peakConnections.load(ordering: .relaxed) <= 3)
        #expect(pool.openConnectionCount <= 3)
    }

    /// Holds `count` readers at once, so that many are open afterwards.
    func holdReaders(_ pool: DatabasePool, count: Int) -> Bool {
        pool.holdingReaders(count) {}
    }

    @Test func closeIdleReadersLowersTheOpenConnectionCount() throws {
        let pool = try makePool()
        #expect(pool.openConnectionCount == 1)
        #expect(holdReaders(pool, count: 3))
        #expect(pool.openConnectionCount == 4)
        pool.closeIdleReaders()
        #expect(pool.openConnectionCount == 1)
        let count = try pool.holdingWriter { try pool.read { try $0.scalar("select count(*) from t") } }
        #expect(count == 0)
        #expect(pool.openConnectionCount == 2)
    }

    @Test func readerClosedByItsBodyIsReplaced() throws {
        let pool = try makePool(.init(maximumReaders: 1))
        try pool.read { $0.close() }
        #expect(pool.openConnectionCount == 1)
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 0)
    }

    @Test func closeWaitsForInFlightReadsAndWrites() throws {
        let pool = try makePool()
        let entered = DispatchSemaphore(value: 0)
        let finishedBodies = Atomic<Int>(0)
        let group = DispatchGroup()
        for index in 0..<2 {
            group.enter()
            Thread {
                let body: (Database) throws -> Void = { _ in
                    entered.signal()
                    usleep(200_000)
                    finishedBodies.add(1, ordering: .relaxed)
                }
                _ = try? (index == 0 ? pool.read(body) : pool.write(body))
                group.leave()
            }.start()
        }
        entered.wait()
        entered.wait()
        pool.close()
        #expect(finishedBodies.load(ordering: .relaxed) == 2)
        #expect(pool.openConnectionCount == 0)
        #expect(group.wait(timeout: .now() + 10) == .success)
    }

    @Test func callsAfterCloseFail() throws {
        let pool = try makePool()
        _ = try pool.read { try $0.scalar("select 1") }
        pool.close()
        pool.close()
        #expect(pool.openConnectionCount == 0)
        let readError = sqliteError { try pool.read { _ in } }
        #expect(readError?.code == SQLITE_MISUSE)
        #expect(readError?.message == "the database is closed")
        #expect(sqliteError { try pool.write { _ in } }?.message == "the database is closed")
        pool.closeIdleReaders()
    }

    @Test func closedPoolLeavesAFileOthersCanOpen() throws {
        let pool = try makePool()
        try pool.write { try $0.execute("insert into t values (42)") }
        pool.close()
        let reopened = try DatabasePool(path: pool.path)
        #expect(try reopened.read { try $0.scalar("select v from t") } == 42)
    }
}
