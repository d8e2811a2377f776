import CSQLite
import SQLiteDatabase
import DAOEngine
import DAOValue
import Testing

/// Values go into SQLite and come back by storage class, byte for byte.
@Suite struct SQLiteStatementTests {
    let folder = TemporaryFolder()

    /// (what, bound value, value read back, SQLite's typeof)
    static let roundTrips: [(String, Value, Value, String)] = [
        ("null", .null, .null, "null"),
        ("zero", .integer(0), .integer(0), "integer"),
        ("Int64.min", .integer(.min), .integer(.min), "integer"),
        ("Int64.max", .integer(.max), .integer(.max), "integer"),
        ("double", .double(-1234.5678), .double(-1234.5678), "real"),
        ("double with no fraction", .double(3), .double(3), "real"),
        ("true", .bool(true), .integer(1), "integer"),
        ("false", .bool(false), .integer(0), "integer"),
        ("empty string", .string(""), .string(""), "text"),
        ("unicode string", .string("héllo wörld, 日本語 🌍🇫🇷"), .string("héllo wörld, 日本語 🌍🇫🇷"), "text"),
        ("NUL inside text", .string("a\u{0}b\u{0}"), .string("a\u{0}b\u{0}"), "text"),
        ("empty blob", .blob([]), .blob([]), "blob"),
        ("blob", .blob([0, 1, 0x7F, 0x80, 0xFF]), .blob([0, 1, 0x7F, 0x80, 0xFF]), "blob"),
        ("array as JSON text", .array([1, "x", nil, true, 2.5]), .string(#"[1,"x",null,true,2.5]"#), "text"),
        ("object as JSON text", ["b": 1, "a": ["nested": [false]]], .string(#"{"b":1,"a":{"nested":[false]}}"#), "text"),
    ]

    @Test(arguments: roundTrips)
    func boundValueReadsBackByStorageClass(_ what: String, _ bound: Value, _ expected: Value, _ typeName: String) throws {
        let db = try folder.database()
        try db.execute("create table t(v)")
        try db.run("insert into t(v) values (?)", [bound])
        let row = try #require(try db.rows("select v, typeof(v) from t").first)
        #expect(row == [expected, .string(typeName)], "\(what)")
    }

    @Test func emptyBlobIsNotNull() throws {
        let db = try folder.database()
        try db.execute("create table t(v)")
        try db.run("insert into t(v) values (?)", [.blob([])])
        #expect(try db.scalar("select count(*) from t where v is null") == .integer(0))
        #expect(try db.scalar("select length(v) from t") == .integer(0))
    }

    @Test func textWithNULKeepsItsFullLength() throws {
        let db = try folder.database()
        #expect(try db.scalar("select length(cast(? as blob))", ["a\u{0}b"]) == .integer(3))
    }

    @Test func typedAccessorsReadTheCurrentRow() throws {
        let db = try folder.database()
        let statement = try db.makeStatement("select 42, 2.5, 'text', x'0102', null, x''")
        #expect(try statement.step())
        #expect(statement.columnType(0) == SQLITE_INTEGER)
        #expect(statement.int64(at: 0) == 42)
        #expect(statement.columnType(1) == SQLITE_FLOAT)
        #expect(statement.double(at: 1) == 2.5)
        #expect(statement.columnType(2) == SQLITE_TEXT)
        #expect(statement.string(at: 2) == "text")
        #expect(statement.columnType(3) == SQLITE_BLOB)
        #expect(statement.bytes(at: 3) == [1, 2])
        #expect(statement.columnType(4) == SQLITE_NULL)
        #expect(statement.value(at: 4) == .null)
        #expect(statement.string(at: 4) == "")
        #expect(statement.bytes(at: 4) == [])
        #expect(statement.value(at: 5) == .blob([]))
        #expect(try !statement.step())
    }

    @Test func invalidUTF8TextIsRepaired() throws {
        let db = try folder.database()
        #expect(try db.scalar("select cast(x'61ff62' as text)") == .string("a\u{FFFD}b"))
    }

    @Test func columnNamesAndDeclaredTypes() throws {
        let db = try folder.database()
        try db.execute("create table p(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, data BLOB, misc, born datetime)")
        let statement = try db.makeStatement("select id, name as n, score, data, misc, born, 1 + 1 as two from p")
        #expect(statement.columnCount == 7)
        #expect((0..<7).map { statement.columnName($0) } == ["id", "n", "score", "data", "misc", "born", "two"])
        #expect((0..<7).map { statement.columnDeclaredType($0) } == ["INTEGER", "TEXT", "REAL", "BLOB", nil, "datetime", nil])
    }

    @Test func readOnlyReportsWhetherTheStatementWrites() throws {
        let db = try folder.database()
        try db.execute("create table t(v)")
        #expect(try db.makeStatement("select * from t").isReadOnly)
        #expect(try !db.makeStatement("insert into t values (1)").isReadOnly)
    }

    @Test func runReturnsTheRowsChanged() throws {
        let db = try folder.database()
        try db.execute("create table t(v); insert into t values (1), (2), (3)")
        #expect(try db.makeStatement("update t set v = v + 1 where v >= 2").run() == 2)
        #expect(db.changes == 2)
        try db.run("insert into t values (?)", [10])
        #expect(db.lastInsertRowID == 4)
        #expect(db.changes == 1)
        #expect(db.totalChanges == 6)
    }

    @Test func stepDoneResetsSoTheStatementRunsAgainWithItsBindings() throws {
        let db = try folder.database()
        let statement = try db.cachedStatement("select ? * 2")
        try statement.bind([21])
        for _ in 0..<2 {
            #expect(try statement.step())
            #expect(statement.value(at: 0) == .integer(42))
            #expect(try !statement.step())
        }
    }

    @Test func resetClearsBindings() throws {
        let db = try folder.database()
        let statement = try db.makeStatement("select ?")
        try statement.bind(["x"])
        #expect(try statement.step())
        statement.reset()
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .null)
    }

    @Test func bindingMidRunRewindsFirst() throws {
        let db = try folder.database()
        let statement = try db.makeStatement("select value from json_each(?)")
        try statement.bind(["[1,2,3]"])
        #expect(try statement.step())
        try statement.bind(["[7]"])
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .integer(7))
        #expect(try !statement.step())
    }

    @Test func statementOnlyAcceptsOneStatement() throws {
        let db = try folder.database()
        #expect(try db.makeStatement("select 1; -- a comment\n  ;").columnCount == 1)
        let twice = sqliteError { _ = try db.makeStatement("select 1; select 2") }
        #expect(twice?.code == SQLITE_MISUSE)
        #expect(twice?.sql == "select 1; select 2")
        #expect(sqliteError { _ = try db.cachedStatement("  -- nothing\n") }?.code == SQLITE_MISUSE)
        #expect(sqliteError { _ = try db.makeStatement("select 1\u{0}; drop table t") }?.code == SQLITE_MISUSE)
    }

    @Test func executeRunsSeveralStatements() throws {
        let db = try folder.database()
        try db.execute("create table t(v); insert into t values (1); insert into t values (2);")
        #expect(try db.scalar("select sum(v) from t") == .integer(3))
    }

    @Test func inMemoryDatabaseWorks() throws {
        let db = try Database(path: ":memory:", readOnly: false, configuration: .init())
        try db.execute("create table t(v)")
        try db.run("insert into t values (?)", ["memory"])
        #expect(try db.scalar("select v from t") == .string("memory"))
        #expect(try db.scalar("pragma foreign_keys") == .integer(1))
    }
}
