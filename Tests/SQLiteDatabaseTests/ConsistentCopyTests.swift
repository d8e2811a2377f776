import DAOEngine
import Foundation
@testable import SQLiteDatabase
import Synchronization
import Testing

/// `Database.consistentCopy` (bucket moves, `daogate backup`) of a users'
/// file that its server writes without file locks: every copy is a commit's
/// state, never half of one.
@Suite struct ConsistentCopyTests {
    @Test func copiesTakenWhileAnUnlockedWriterCommitsAreEachWhole() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-copy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/users/p-ann.db"
        let pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(journal: .rollback, usesFileLocks: false))
        // Two tables that every commit changes together, with enough rows that a commit writes several pages.
        try pool.write { db in
            try db.execute("""
                create table a (id integer primary key, v integer not null, pad text);
                create table b (id integer primary key, v integer not null, pad text);
                with recursive n(i) as (select 1 union all select i + 1 from n where i < 60)
                insert into a select i, 0, hex(randomblob(100)) from n;
                insert into b select id, 0, pad from a;
                """)
        }
        let stop = Atomic<Bool>(false)
        let commits = Atomic<Int>(0)
        let writer = Thread {
            while !stop.load(ordering: .relaxed) {
                try? pool.write { db in
                    try db.inTransaction {
                        try db.execute("update a set v = v + 1, pad = hex(randomblob(100)); update b set v = v + 1, pad = hex(randomblob(100))")
                    }
                }
                commits.add(1, ordering: .relaxed)
                // A user's writes come and go; one writing without a pause for `patience` would leave no moment
                // to copy. Pauses of a few milliseconds leave room for a copy on a loaded machine, while commits
                // still cross copies (the copies below see several states).
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        let configuration = DatabaseConfiguration()
        var sums: Set<Int64> = []
        // Copies until the writer has committed 30 times over them (at least 12 copies; at most 2,000).
        var round = 0
        while round < 12 || (commits.load(ordering: .relaxed) < 30 && round < 2_000) {
            round += 1
            let copy = folder + "/copies/\(round).db"
            try Database.consistentCopy(of: path, to: copy, configuration: configuration)
            #expect(try Database.integrityProblem(of: copy, configuration: configuration) == nil)
            let database = try Database(path: copy, readOnly: true, configuration: configuration)
            defer { database.close() }
            let statement = try database.makeStatement("select (select sum(v) from a), (select sum(v) from b), (select count(*) from a)")
            #expect(try statement.step())
            let (a, b, rows) = (statement.int64(at: 0), statement.int64(at: 1), statement.int64(at: 2))
            #expect(a == b && rows == 60 && a % 60 == 0, "copy \(round): a \(a), b \(b), rows \(rows)")
            sums.insert(a)
        }
        stop.store(true, ordering: .relaxed)
        #expect(commits.load(ordering: .relaxed) >= 30, "the writer hardly ran")
        #expect(sums.count > 1, "every copy saw the same commit: the writes never crossed them")
    }

    /// The check itself, without relying on timing: a commit made after `VACUUM INTO` has read the file and before
    /// the copy is checked (where, unlocked, it could have torn the copy) makes the copy go again, and the copy
    /// kept is the one after the commit; a copy that nothing crossed is kept at once.
    @Test func aCommitCrossingACopyMakesItGoAgain() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-copy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/users/p-bob.db"
        let pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(journal: .rollback, usesFileLocks: false))
        try pool.write { db in try db.execute("create table t (id integer primary key, v integer not null); insert into t values (1, 0)") }
        let configuration = DatabaseConfiguration()
        func copied(_ copy: String) throws -> Int64 {
            let database = try Database(path: copy, readOnly: true, configuration: configuration)
            defer { database.close() }
            let statement = try database.makeStatement("select v from t where id = 1")
            #expect(try statement.step())
            return statement.int64(at: 0)
        }

        var copies = 0
        try Database.consistentCopy(of: path, to: folder + "/crossed.db", configuration: configuration, patience: .seconds(10)) {
            copies += 1
            if copies == 1 { try pool.write { db in try db.execute("update t set v = 1 where id = 1") } }
        }
        #expect(copies == 2, "a commit crossed the first copy, which was kept anyway")
        #expect(try copied(folder + "/crossed.db") == 1)

        copies = 0
        try Database.consistentCopy(of: path, to: folder + "/quiet.db", configuration: configuration, patience: .seconds(10)) {
            copies += 1
        }
        #expect(copies == 1)
        #expect(try copied(folder + "/quiet.db") == 1)

        // A writer that never stops crossing copies: no copy is kept, and the error says why.
        #expect(throws: DatabaseFileError.self) {
            try Database.consistentCopy(of: path, to: folder + "/busy.db", configuration: configuration, patience: .milliseconds(200)) {
                try pool.write { db in try db.execute("update t set v = v + 1 where id = 1") }
            }
        }
    }
}
