import CSQLite
import SQLiteDatabase
import DAOEngine
import DAOValue
import Testing

/// SQLite failures say what failed, with which code, in which SQL; never with the bound values.
@Suite struct SQLiteErrorTests {
    let folder = TemporaryFolder()

    @Test func syntaxErrorCarriesCodeMessageAndSQL() throws {
        let db = try folder.database()
        let error = try #require(sqliteError { _ = try db.makeStatement("selec 1") })
        #expect(error.code == SQLITE_ERROR)
        #expect(error.extendedCode == SQLITE_ERROR)
        #expect(error.message == #"near "selec": syntax error"#)
        #expect(error.sql == "selec 1")
        #expect(!error.isConstraintViolation)
        #expect(error.description == #"SQLite error 1 (SQLITE_ERROR): near "selec": syntax error — in: selec 1"#)
    }

    @Test func executeErrorCarriesTheScript() throws {
        let db = try folder.database()
        let error = try #require(sqliteError { try db.execute("create table t(v); insert into nowhere values (1)") })
        #expect(error.message == "no such table: nowhere")
        #expect(error.sql == "create table t(v); insert into nowhere values (1)")
    }

    @Test func uniqueViolationIsAConstraintViolationWithItsExtendedCode() throws {
        let db = try folder.database()
        try db.execute("create table t(id integer primary key, email text unique)")
        try db.run("insert into t(email) values (?)", ["secret@example.com"])
        let error = try #require(sqliteError { try db.run("insert into t(email) values (?)", ["secret@example.com"]) })
        #expect(error.code == SQLITE_CONSTRAINT)
        #expect(error.extendedCode == 2067)
        #expect(error.isConstraintViolation)
        #expect(!error.isBusy)
        #expect(error.sql == "insert into t(email) values (?)")
        #expect(error.description == "SQLite error 19 (SQLITE_CONSTRAINT_UNIQUE): UNIQUE constraint failed: t.email — in: insert into t(email) values (?)")
        #expect(!error.description.contains("secret"))
    }

    @Test func notNullAndForeignKeyViolationsHaveTheirExtendedCodes() throws {
        let db = try folder.database()
        try db.execute("create table parent(id integer primary key); create table child(p integer not null references parent(id))")
        let notNull = sqliteError { try db.run("insert into child(p) values (?)", [nil]) }
        #expect(notNull?.extendedCode == 1299)
        let foreignKey = sqliteError { try db.run("insert into child(p) values (?)", [7]) }
        #expect(foreignKey?.extendedCode == 787)
        #expect(foreignKey?.isConstraintViolation == true)
    }

    @Test func failedStepLeavesTheCachedStatementReusable() throws {
        let db = try folder.database()
        try db.execute("create table t(id integer primary key)")
        try db.run("insert into t(id) values (?)", [1])
        #expect(sqliteError { try db.run("insert into t(id) values (?)", [1]) }?.isConstraintViolation == true)
        try db.run("insert into t(id) values (?)", [2])
        #expect(try db.scalar("select count(*) from t") == .integer(2))
    }

    @Test func bindCountMismatchSaysBothNumbers() throws {
        let db = try folder.database()
        let statement = try db.cachedStatement("select ?, ?")
        let error = try #require(sqliteError { try statement.bind([1, 2, 3]) })
        #expect(error.code == SQLITE_RANGE)
        #expect(error.message == "wrong number of bindings: the statement has 2 parameters, 3 values given")
        #expect(error.sql == "select ?, ?")
        #expect(sqliteError { try statement.bind([1]) }?.message == "wrong number of bindings: the statement has 2 parameters, 1 value given")
    }

    @Test func doubleQuotedStringsAreIdentifiersOnly() throws {
        let db = try folder.database()
        try db.execute("create table t(v)")
        let error = sqliteError { _ = try db.makeStatement(#"select "nonexistent" from t"#) }
        #expect(error?.message == "no such column: nonexistent")
    }

    @Test func openingAMissingFileReadOnlyFailsWithThePath() {
        let path = folder.file("missing.sqlite")
        let error = sqliteError { _ = try Database(path: path, readOnly: true, configuration: .init()) }
        #expect(error?.code == SQLITE_CANTOPEN)
        #expect(error?.message.hasSuffix(path) == true)
    }

    @Test func closedDatabaseThrowsMisuse() throws {
        let db = try folder.database()
        db.close()
        db.close()
        let error = sqliteError { try db.execute("select 1") }
        #expect(error?.code == SQLITE_MISUSE)
        #expect(error?.message == "the database is closed")
        #expect(sqliteError { _ = try db.cachedStatement("select 1") }?.code == SQLITE_MISUSE)
        #expect(sqliteError { _ = try db.inTransaction { 1 } }?.code == SQLITE_MISUSE)
    }

    @Test func statementHeldPastCloseStaysUsableUntilReleased() throws {
        let db = try folder.database()
        let statement = try db.cachedStatement("select 7")
        db.close()
        #expect(try statement.step())
        #expect(statement.value(at: 0) == .integer(7))
    }

    @Test func unknownExtendedCodesFallBackToThePrimaryName() {
        let error = SQLiteError(extendedCode: SQLITE_IOERR | (250 << 8), message: "odd")
        #expect(error.code == SQLITE_IOERR)
        #expect(error.description == "SQLite error 10 (SQLITE_IOERR): odd")
    }
}

/// Result codes have names and match in a `switch`, a primary code matching its extended codes.
@Suite struct ResultCodeTests {
    @Test func aPrimaryPatternMatchesItsExtendedCodes() {
        let unique = ResultCode(rawValue: 2067)  // SQLITE_CONSTRAINT_UNIQUE: Swift does not import the extended codes
        #expect(ResultCode.constraint ~= unique)
        #expect(!(unique ~= ResultCode.constraint))
        #expect(!(ResultCode.busy ~= unique))
        switch ResultCode(rawValue: 517) {  // SQLITE_BUSY_SNAPSHOT
        case .busy: break
        default: Issue.record("SQLITE_BUSY_SNAPSHOT is not .busy")
        }
        #expect(unique.description == "SQLITE_CONSTRAINT_UNIQUE")
        #expect(SQLiteError(extendedCode: 262, message: "").isBusy)  // SQLITE_LOCKED_SHAREDCACHE
        #expect(!SQLiteError(extendedCode: SQLITE_READONLY, message: "").isBusy)
    }
}
