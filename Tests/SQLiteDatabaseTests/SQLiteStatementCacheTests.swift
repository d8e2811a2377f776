import SQLiteDatabase
import DAOEngine
import DAOValue
import Testing

/// Each connection prepares an SQL text once and keeps the statement, up to its capacity.
@Suite struct SQLiteStatementCacheTests {
    let folder = TemporaryFolder()

    @Test func sameSQLGivesTheSameStatement() throws {
        let db = try folder.database()
        let first = try db.cachedStatement("select 1")
        #expect(try db.cachedStatement("select 1") === first)
        #expect(try db.cachedStatement("select 2") !== first)
        #expect(try db.makeStatement("select 1") !== first)
    }

    @Test func leastRecentlyUsedIsEvictedAtCapacity() throws {
        let db = try folder.database(configuration: .init(statementCacheCapacity: 3))
        let a = try db.cachedStatement("select 'a'")
        let b = try db.cachedStatement("select 'b'")
        let c = try db.cachedStatement("select 'c'")
        #expect(try db.cachedStatement("select 'a'") === a)
        let d = try db.cachedStatement("select 'd'")
        // b was the least recently used: gone. a, c, d stay.
        #expect(try db.cachedStatement("select 'a'") === a)
        #expect(try db.cachedStatement("select 'c'") === c)
        #expect(try db.cachedStatement("select 'd'") === d)
        #expect(try db.cachedStatement("select 'b'") !== b)
    }

    @Test func zeroCapacityCachesNothing() throws {
        let db = try folder.database(configuration: .init(statementCacheCapacity: 0))
        let first = try db.cachedStatement("select 1")
        #expect(try db.cachedStatement("select 1") !== first)
    }

    @Test func cachedStatementComesBackRewoundWithoutBindings() throws {
        let db = try folder.database()
        let statement = try db.cachedStatement("select ? union all select 2")
        try statement.bind(["left over"])
        #expect(try statement.step())
        let again = try db.cachedStatement("select ? union all select 2")
        #expect(again === statement)
        #expect(try again.step())
        #expect(again.value(at: 0) == .null)
    }

    @Test func canonicallyEquivalentButDifferentSQLGetsItsOwnStatement() throws {
        let precomposed = "select 'caf\u{E9}'"
        let decomposed = "select 'cafe\u{301}'"
        #expect(precomposed == decomposed)
        let db = try folder.database()
        #expect(try db.cachedStatement(precomposed) !== db.cachedStatement(decomposed))
        #expect(try db.scalar(precomposed) == .string("caf\u{E9}"))
        #expect(try db.scalar(decomposed).stringValue.map { Array($0.utf8) } == Array("cafe\u{301}".utf8))
    }
}
