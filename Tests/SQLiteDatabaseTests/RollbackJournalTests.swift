import CSQLite
import SQLiteDatabase
import DAOValue
import Dispatch
import Foundation
import Synchronization
import Testing

/// A pool over a rollback-journal file (users' files by default): one
/// connection, one descriptor, every call on it in turn.
@Suite struct RollbackJournalTests {
    let folder = TemporaryFolder()
    let rollback = DatabaseConfiguration(maximumReaders: 4, journal: .rollback)

    /// The descriptors of this process open on files of the test's folder.
    func descriptorsInFolder() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry))?.hasPrefix(folder.path) == true
        }.count
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test func anOpenFileHoldsOneDescriptorAndNoSharedMemory() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        try pool.write { try $0.execute("create table t (v integer); insert into t values (1)") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
        #expect(try pool.read { try $0.scalar("pragma journal_mode") } == "delete")
        #expect(pool.openConnectionCount == 1)
        #expect(descriptorsInFolder() == 1)
        #expect(pool.resourceCost == ResourceCost(descriptors: 1, bytes: DatabasePool.bytesPerConnection(.rollback)
                                                  + (try pool.read { $0.pageCacheBytes })))
        #expect(!exists(folder.file() + "-wal") && !exists(folder.file() + "-shm"))
        pool.close()
        #expect(descriptorsInFolder() == 0)
    }

    /// A read keeps no transaction open after it: a rollback journal's shared lock would hold back other
    /// processes' writes (in WAL the writer keeps its snapshot from read to read instead).
    @Test func aReadEndsItsTransaction() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        try pool.write { try $0.execute("create table t (v integer)") }
        for _ in 0..<2 {
            try pool.read { db in
                _ = try db.scalar("select count(*) from t")
                #expect(!db.isInTransaction)
            }
        }
        let other = try Database(path: folder.file(), readOnly: false, configuration: rollback)
        try other.execute("insert into t values (1)")  // no shared lock of the pool's in the way
        other.close()
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 1)
        pool.close()
    }

    /// One file on disk per database: the `-journal` lives only while a write
    /// runs, and a file an older daogate left with an empty one (in `TRUNCATE`
    /// mode) loses it at its next write.
    @Test func aWrittenFileLeavesNoJournalOnDisk() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        try pool.write { try $0.execute("create table t (v integer); insert into t values (1)") }
        try pool.write { database in
            try database.execute("begin; insert into t values (2)")
            #expect(exists(folder.file() + "-journal"))  // the write's own, while it runs
            try database.execute("commit")
        }
        #expect(!exists(folder.file() + "-journal"))
        pool.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [(folder.file() as NSString).lastPathComponent])

        var database: OpaquePointer?
        #expect(sqlite3_open(folder.file("old.db"), &database) == SQLITE_OK)
        #expect(sqlite3_exec(database, "pragma journal_mode = truncate; create table t (v integer); insert into t values (1)", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(database)
        #expect(exists(folder.file("old.db") + "-journal"))
        let old = try DatabasePool(path: folder.file("old.db"), configuration: rollback)
        try old.write { try $0.execute("insert into t values (2)") }
        #expect(!exists(folder.file("old.db") + "-journal"))
        #expect(try old.read { try $0.scalar("select sum(v) from t") } == 3)
        old.close()
    }

    /// A file written in WAL before (a user's file from an older daogate, or
    /// one served with `--user-journal wal`) keeps its rows and leaves WAL.
    @Test func aWALFileBecomesARollbackFileWithItsRows() throws {
        let wal = try DatabasePool(path: folder.file(), configuration: .init(journal: .wal))
        try wal.write { try $0.execute("create table t (v integer); insert into t values (1), (2)") }
        #expect(exists(folder.file() + "-wal"))
        wal.close()
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        #expect(try pool.read { try $0.scalar("select sum(v) from t") } == 3)
        #expect(!exists(folder.file() + "-wal"))
        try pool.write { try $0.execute("insert into t values (3)") }
        pool.close()
        // And back: the rows are still all there.
        let again = try DatabasePool(path: folder.file(), configuration: .init(journal: .wal))
        #expect(try again.read { try $0.scalar("select sum(v) from t") } == 6)
        #expect(try again.read { try $0.scalar("pragma journal_mode") } == "wal")
    }

    /// Reads wait for the write in flight on the one connection: no reader
    /// opens, and no read sees half a transaction, even one whose
    /// statements run outside any transaction of its own.
    @Test func readsTakeTheOneConnectionInTurnAndNeverSeeHalfATransaction() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        try pool.write { db in
            try db.execute("""
                create table a(id integer primary key, v integer not null);
                create table b(id integer primary key, v integer not null);
                insert into a values (1, 0); insert into b values (1, 0);
                """)
        }
        let failures = Mutex<[String]>([])
        let peakConnections = Atomic<Int>(0)
        let group = DispatchGroup()
        for index in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    for step in 0..<200 {
                        if index < 2 {
                            try pool.write { db in
                                try db.inTransaction {
                                    try db.run("update a set v = v + ?", [.integer(Int64(step % 5 + 1))])
                                    try db.run("update b set v = v + ?", [.integer(Int64(step % 5 + 1))])
                                }
                            }
                        } else {
                            try pool.read { db in
                                peakConnections.max(pool.openConnectionCount, ordering: .relaxed)
                                let a = try db.scalar("select v from a")
                                let b = try db.scalar("select v from b")
                                if a != b { failures.withLock { $0.append("a \(a), b \(b)") } }
                            }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(index): \(error)") }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "deadlock?")
        #expect(failures.withLock { $0 } == [])
        #expect(peakConnections.load(ordering: .relaxed) == 1)
        let expected = Int64(2 * (0..<200).reduce(0) { $0 + $1 % 5 + 1 })
        #expect(try pool.read { try $0.scalar("select v from a") } == .integer(expected))
    }

    @Test func aReadInsideAWriteBodyThrowsInsteadOfWaitingForItself() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        let error = try pool.write { _ in sqliteError { _ = try pool.read { try $0.scalar("select 1") } } }
        #expect(error?.resultCode == .misuse)
    }

    /// With no WAL hook, what a write body committed is reported when it ends; a rolled-back transaction never.
    @Test func committedChangesAreReportedWhenTheWriteEnds() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: rollback)
        let reported = Mutex<[[RowChange]]>([])
        let listening = Atomic<Bool>(true)
        try pool.write { db in
            try db.execute("create table t (id integer primary key, v text)")
            db.observeChanges(ChangeHooks(isWatched: { listening.load(ordering: .relaxed) },
                                          committed: { rows, _ in reported.withLock { $0.append(rows) } }))
        }
        struct Refused: Error {}
        try pool.write { db in
            try db.inTransaction { try db.execute("insert into t (v) values ('a'), ('b')") }
            #expect(reported.withLock { $0 }.isEmpty, "reported before the write ended")
        }
        #expect(throws: Refused.self) {
            try pool.write { db in
                try db.inTransaction {
                    try db.execute("insert into t (v) values ('rolled back')")
                    throw Refused()
                }
            }
        }
        // Nobody listening: nothing recorded, and listening again is seen by the next transaction.
        listening.store(false, ordering: .relaxed)
        try pool.write { try $0.execute("update t set v = 'unseen' where id = 1") }
        listening.store(true, ordering: .relaxed)
        try pool.write { try $0.execute("delete from t where id = 2") }
        #expect(reported.withLock { $0 } == [
            [RowChange(table: "t", operation: .insert, rowid: 1), RowChange(table: "t", operation: .insert, rowid: 2)],
            [RowChange(table: "t", operation: .delete, rowid: 2)],
        ])
    }
}

/// A users' file opened without SQLite's file locks (`unix-none`): the open
/// costs no search through every file open, and the file is still read and
/// written whole.
@Suite struct UnlockedFileTests {
    let folder = TemporaryFolder()
    let unlocked = DatabaseConfiguration(journal: .rollback, usesFileLocks: false)

    func vfsName(_ pool: DatabasePool) throws -> String {
        try pool.write { db in
            var name: UnsafeMutablePointer<CChar>?
            #expect(sqlite3_file_control(db.handle, "main", SQLITE_FCNTL_VFSNAME, &name) == SQLITE_OK)
            defer { sqlite3_free(name) }
            return name.map { String(cString: $0) } ?? ""
        }
    }

    @Test func itOpensThroughUnixNoneAndKeepsItsRowsAcrossAReopen() throws {
        let pool = try DatabasePool(path: folder.file(), configuration: unlocked)
        #expect(try vfsName(pool) == "unix-none")
        try pool.write { try $0.execute("create table t (v integer); insert into t values (1), (2)") }
        pool.close()
        let again = try DatabasePool(path: folder.file(), configuration: unlocked)
        #expect(try again.read { try $0.scalar("select sum(v) from t") } == 3)
        #expect(try vfsName(DatabasePool(path: folder.file("locked.sqlite"), configuration: .init(journal: .rollback))) == "unix")
    }

    /// `unix-none` has no shared memory for a WAL file: one from before (an
    /// older daogate's, or `--user-journal wal`'s) leaves WAL through SQLite's own VFS first.
    @Test func aWALFileIsTurnedIntoARollbackOneFirst() throws {
        let wal = try DatabasePool(path: folder.file(), configuration: .init(journal: .wal))
        try wal.write { try $0.execute("create table t (v integer); insert into t values (5)") }
        wal.close()
        let pool = try DatabasePool(path: folder.file(), configuration: unlocked)
        #expect(try pool.read { try $0.scalar("select v from t") } == 5)
        #expect(try pool.read { try $0.scalar("pragma journal_mode") } == "delete")
        #expect(try vfsName(pool) == "unix-none")
    }

    @Test func aWALPoolWithoutFileLocksIsRefused() {
        let error = sqliteError { _ = try DatabasePool(path: folder.file(), configuration: .init(journal: .wal, usesFileLocks: false)) }
        #expect(error?.resultCode == .misuse)
    }
}

/// A read on the writer is query-only without `PRAGMA query_only`, which
/// expires every prepared statement of the connection each time it runs.
@Suite struct QueryOnlyReadTests {
    let folder = TemporaryFolder()

    @Test(arguments: [JournalMode.wal, .rollback])
    func readsOnTheWriterKeepTheirStatementsPreparedAndCannotWrite(_ journal: JournalMode) throws {
        let pool = try DatabasePool(path: folder.file(), configuration: .init(journal: journal))
        try pool.write { try $0.execute("create table t (id integer primary key, v text); insert into t values (1, 'a')") }
        let select = "select v from t where id = ?"
        for _ in 0..<3 {
            #expect(try pool.read { try $0.scalar(select, [.integer(1)]) } == "a")
        }
        let reprepares = try pool.read { db in sqlite3_stmt_status(try db.cachedStatement(select).handle, SQLITE_STMTSTATUS_REPREPARE, 0) }
        #expect(reprepares == 0)
        try pool.read { db in
            #expect(sqliteError { try db.run("insert into t values (2, 'b')") }?.code == SQLITE_READONLY)
            #expect(sqliteError { _ = try db.makeStatement("delete from t") }?.code == SQLITE_READONLY)
            #expect(sqliteError { try db.execute("select 1; update t set v = 'c'") }?.code == SQLITE_READONLY)
            try db.execute("select 1; select v from t")  // reads pass
            #expect(try db.inTransaction(.deferred) { try db.scalar("select count(*) from t") } == 1)
        }
        // The writer writes again once the read is over.
        try pool.write { try $0.run("insert into t values (3, 'c')") }
        #expect(try pool.read { try $0.scalar("select count(*) from t") } == 2)
    }
}
