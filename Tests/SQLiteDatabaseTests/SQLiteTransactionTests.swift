import CSQLite
import SQLiteDatabase
import DAOEngine
import DAOValue
import Testing

/// Transactions commit what their body did, or nothing when it throws; nesting undoes only the inner part.
@Suite struct SQLiteTransactionTests {
    let folder = TemporaryFolder()

    func makeDatabase() throws -> Database {
        let db = try folder.database()
        try db.execute("create table t(v integer)")
        return db
    }

    func values(_ db: Database) throws -> [Value] {
        try db.rows("select v from t order by v").map { $0[0] }
    }

    @Test func transactionCommits() throws {
        let db = try makeDatabase()
        let result = try db.inTransaction {
            #expect(db.isInTransaction)
            try db.run("insert into t values (?)", [1])
            return "done"
        }
        #expect(result == "done")
        #expect(!db.isInTransaction)
        #expect(try values(db) == [1])
    }

    @Test(arguments: [Database.TransactionKind.immediate, .deferred])
    func thrownErrorRollsBackAndIsRethrown(_ kind: Database.TransactionKind) throws {
        let db = try makeDatabase()
        let rejected = throwsRejected {
            try db.inTransaction(kind) {
                try db.run("insert into t values (?)", [1])
                throw Rejected()
            }
        }
        #expect(rejected)
        #expect(!db.isInTransaction)
        #expect(try values(db) == [])
    }

    @Test func nestedTransactionRollsBackOnlyTheInnerPart() throws {
        let db = try makeDatabase()
        try db.inTransaction {
            try db.run("insert into t values (?)", [1])
            let rejected = throwsRejected {
                try db.inTransaction {
                    try db.run("insert into t values (?)", [2])
                    throw Rejected()
                }
            }
            #expect(rejected)
            try db.run("insert into t values (?)", [3])
        }
        #expect(try values(db) == [1, 3])
    }

    @Test func nestedSavepointsRollBackOnlyTheFailingLevel() throws {
        let db = try makeDatabase()
        try db.inTransaction {
            try db.inSavepoint {
                try db.run("insert into t values (?)", [1])
                try db.inSavepoint {
                    try db.run("insert into t values (?)", [2])
                }
                let rejected = throwsRejected {
                    try db.inSavepoint {
                        try db.run("insert into t values (?)", [3])
                        try db.inSavepoint { try db.run("insert into t values (?)", [4]) }
                        throw Rejected()
                    }
                }
                #expect(rejected)
                try db.run("insert into t values (?)", [5])
            }
        }
        #expect(try values(db) == [1, 2, 5])
    }

    @Test func outerFailureUndoesReleasedSavepoints() throws {
        let db = try makeDatabase()
        let rejected = throwsRejected {
            try db.inTransaction {
                try db.inSavepoint { try db.run("insert into t values (?)", [1]) }
                throw Rejected()
            }
        }
        #expect(rejected)
        #expect(try values(db) == [])
    }

    @Test func savepointOutsideATransactionCommitsOnRelease() throws {
        let db = try makeDatabase()
        try db.inSavepoint { try db.run("insert into t values (?)", [1]) }
        #expect(!db.isInTransaction)
        let rejected = throwsRejected {
            try db.inSavepoint {
                try db.run("insert into t values (?)", [2])
                throw Rejected()
            }
        }
        #expect(rejected)
        #expect(!db.isInTransaction)
        #expect(try values(db) == [1])
    }

    @Test func failedCommitRollsBackAndThrows() throws {
        let db = try folder.database()
        try db.execute("""
            create table parent(id integer primary key);
            create table child(p integer references parent(id) deferrable initially deferred)
            """)
        let error = sqliteError {
            try db.inTransaction { try db.run("insert into child(p) values (?)", [1]) }
        }
        #expect(error?.extendedCode == 787)
        #expect(error?.sql == "COMMIT")
        #expect(!db.isInTransaction)
        #expect(try db.scalar("select count(*) from child") == .integer(0))
    }

    @Test func constraintErrorInsideASavepointKeepsTheRestOfTheTransaction() throws {
        let db = try folder.database()
        try db.execute("create table t(id integer primary key)")
        try db.inTransaction {
            try db.run("insert into t values (?)", [1])
            let error = sqliteError {
                try db.inSavepoint {
                    try db.run("insert into t values (?)", [2])
                    try db.run("insert into t values (?)", [1])
                }
            }
            #expect(error?.isConstraintViolation == true)
            try db.run("insert into t values (?)", [3])
        }
        #expect(try db.rows("select id from t order by id").map { $0[0] } == [1, 3])
    }
}
