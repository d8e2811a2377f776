import SQLiteDatabase
import DAOValue
import Foundation
import Testing

/// `Database.observeChanges` on a real WAL file: only committed rows are reported, once per transaction.
@Suite struct SQLiteChangeHookTests {
    final class Recorder {
        var watched = true
        var transactions: [[RowChange]] = []
        var overflowed: [Bool] = []

        func hooks() -> ChangeHooks {
            ChangeHooks(isWatched: { self.watched }, committed: { rows, overflowed in
                self.transactions.append(rows)
                self.overflowed.append(overflowed)
            })
        }
    }

    /// A pool on a new file with a table `t`, whose writer reports to `recorder`.
    static func pool(_ folder: TemporaryFolder, _ recorder: Recorder) throws -> DatabasePool {
        let pool = try DatabasePool(path: folder.file())
        try pool.write { db in
            try db.execute("create table t (id integer primary key, v text)")
            db.observeChanges(recorder.hooks())
        }
        return pool
    }

    @Test func aCommittedTransactionIsReportedOnceAndARolledBackOneNever() throws {
        let folder = TemporaryFolder()
        let recorder = Recorder()
        let pool = try Self.pool(folder, recorder)
        try pool.write { db in
            try db.inTransaction {
                try db.execute("insert into t (v) values ('a'), ('b')")
                try db.execute("update t set v = 'c' where id = 1")
            }
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try db.inTransaction {
                    try db.execute("insert into t (v) values ('rolled back')")
                    throw Refused()
                }
            }
            try db.execute("delete from t where id = 2")
        }
        #expect(recorder.transactions == [
            [RowChange(table: "t", operation: .insert, rowid: 1), RowChange(table: "t", operation: .insert, rowid: 2),
             RowChange(table: "t", operation: .update, rowid: 1)],
            [RowChange(table: "t", operation: .delete, rowid: 2)],
        ])
    }

    @Test func deletingEveryRowIsReportedRowByRow() throws {
        let folder = TemporaryFolder()
        let recorder = Recorder()
        let pool = try Self.pool(folder, recorder)
        try pool.write { db in
            try db.execute("insert into t (v) values ('a'), ('b'), ('c')")
            // Without WHERE: SQLite's truncate optimization would clear the table without calling the update hook.
            try db.execute("delete from t")
        }
        #expect(recorder.transactions.last?.map(\.operation) == [.delete, .delete, .delete])
        #expect(recorder.transactions.last?.map(\.rowid) == [1, 2, 3])
    }

    struct Undo: Error {}

    @Test func aRolledBackSavepointsRowsAreForgotten() throws {
        let folder = TemporaryFolder()
        let recorder = Recorder()
        let pool = try Self.pool(folder, recorder)
        try pool.write { db in
            try db.inTransaction {
                try db.execute("insert into t (v) values ('kept')")
                _ = try? db.inSavepoint {
                    try db.execute("insert into t (v) values ('undone')")
                    throw Undo()
                }
                try db.execute("insert into t (v) values ('kept too')")
            }
        }
        #expect(recorder.transactions.map { $0.map(\.rowid) } == [[1, 2]])
        #expect(try pool.read { db in try db.rows("select v from t order by id") } == [[.string("kept")], [.string("kept too")]])
    }

    @Test func nothingIsRecordedUnwatchedAndCheckpointsStillHappen() throws {
        let folder = TemporaryFolder()
        let recorder = Recorder()
        recorder.watched = false
        let pool = try Self.pool(folder, recorder)
        // 1,500 transactions of a 4 KB row: more pages than SQLite's automatic checkpoint lets the log hold.
        try pool.write { db in
            for _ in 0..<1500 { try db.execute("insert into t (v) values (hex(randomblob(2000)))") }
        }
        #expect(recorder.transactions.isEmpty)
        let wal = try FileManager.default.attributesOfItem(atPath: folder.file() + "-wal")[.size] as? Int ?? 0
        // Checkpointed every 1,000 pages, the log is reused rather than grown to 1,500 transactions' pages.
        #expect(wal < 1300 * 4096, "the WAL grew to \(wal) bytes: no checkpoint ran")
    }
}
