import CSQLite
import DAOEngine
import DAOValue
import Foundation
import Testing

/// The wrapper's cost on the hot path, next to the raw C API: a one-row primary-key lookup.
///
/// Prints figures and asserts nothing about time. Run it on a release build:
/// `DAOGATE_SQLITE_SPEED=1 swift test -c release --filter SQLiteSpeedTests`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["DAOGATE_SQLITE_SPEED"] != nil))
struct SQLiteSpeedTests {
    let folder = TemporaryFolder()
    let sql = "select id, name, score from person where id = ?"
    let rows: Int64 = 1000
    let iterations = 200_000

    /// A WAL file of `rows` people, as the pool makes it.
    func makePool() throws -> DatabasePool {
        let pool = try DatabasePool(path: folder.file())
        try pool.write { db in
            try db.execute("""
                create table person(id integer primary key, name text not null, score real);
                with recursive n(i) as (select 1 union all select i + 1 from n where i < \(rows))
                insert into person select i, 'person number ' || i, i * 0.5 from n;
                """)
        }
        return pool
    }

    /// Nanoseconds per call of `body`, the median of 5 rounds.
    func nanoseconds(_ body: (Int64) throws -> Void) rethrows -> Double {
        var rounds: [Double] = []
        for _ in 0..<5 {
            let start = ContinuousClock.now
            for i in 0..<iterations { try body(Int64(i) % rows + 1) }
            let elapsed = ContinuousClock.now - start
            rounds.append((Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(iterations))
        }
        return rounds.sorted()[2]
    }

    @Test func primaryKeyLookupAgainstRawSQLite() throws {
        let pool = try makePool()
        try pool.read { db in try compare(on: db, "autocommit, one snapshot per lookup") }
        try pool.read { db in try db.inTransaction(.deferred) { try compare(on: db, "inside one read transaction") } }
        let pooledTime = try nanoseconds { id in
            try pool.read { db in
                let statement = try db.cachedStatement(sql)
                try statement.bind([.integer(id)])
                guard try statement.step() else { return }
                _ = (statement.value(at: 0), statement.value(at: 1), statement.value(at: 2))
                statement.reset()
            }
        }
        print("SQLite primary-key lookup, each in its own pool.read: \(Int(pooledTime)) ns")
    }

    func compare(on db: Database, _ label: String) throws {
        var checksum = 0

        var raw: SQLiteStatement?
        #expect(sqlite3_prepare_v3(db.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil) == SQLITE_OK)
        let statement = try #require(raw)
        defer { sqlite3_finalize(statement) }
        let rawTime = nanoseconds { id in
            sqlite3_bind_int64(statement, 1, id)
            guard sqlite3_step(statement) == SQLITE_ROW else { return }
            let rowID = sqlite3_column_int64(statement, 0)
            let text = sqlite3_column_text(statement, 1)!
            let name = String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, 1))), as: UTF8.self)
            let score = sqlite3_column_double(statement, 2)
            checksum &+= Int(rowID) &+ name.utf8.count &+ Int(score)
            sqlite3_reset(statement)
        }

        let wrapperTime = try nanoseconds { id in
            let statement = try db.cachedStatement(sql)
            try statement.bind([.integer(id)])
            guard try statement.step() else { return }
            for column in 0..<3 {
                if case .string(let name) = statement.value(at: column) { checksum &+= name.utf8.count }
            }
            statement.reset()
        }

        print("SQLite primary-key lookup, \(label): raw \(Int(rawTime)) ns, wrapper \(Int(wrapperTime)) ns, ratio \((wrapperTime / rawTime * 100).rounded() / 100) (checksum \(checksum))")
    }
}
