import SQLiteDatabase
import DAOValue
import Testing

/// `lastRowIDInserted(during:)`: a body's own insert, with `last_insert_rowid()` left as SQLite sets it, and
/// rollbacks that put the connection's last insert rowid back.
@Suite struct SQLiteLastInsertTests {
    let folder = TemporaryFolder()

    func makeDatabase() throws -> Database {
        let db = try folder.database()
        try db.execute("create table parents(id integer primary key); create table children(id integer primary key, parent integer)")
        return db
    }

    @Test func aBodysInsertIsItsOwnEvenWithTheRowidBeforeIt() throws {
        let db = try makeDatabase()
        #expect(try db.lastRowIDInserted { try db.run("insert into parents default values") } == 1)
        // The child is numbered 1 too, and took its parent's rowid from last_insert_rowid().
        #expect(try db.lastRowIDInserted { try db.run("insert into children (parent) values (last_insert_rowid())") } == 1)
        #expect(try db.scalar("select parent from children where id = 1") == 1)
        #expect(try db.lastRowIDInserted { try db.run("update children set parent = 2") } == 0)
        #expect(try db.lastRowIDInserted { try db.run("insert or ignore into parents (id) values (1)") } == 0)
        #expect(db.lastInsertRowID == 1)
        #expect(try db.lastRowIDInserted {
            try db.run("insert into parents default values")
            try db.run("insert into children (parent) values (2)")
        } == 2)
    }

    @Test func aRollbackPutsTheLastInsertRowidBack() throws {
        let db = try makeDatabase()
        try db.run("insert into parents default values")
        _ = throwsRejected {
            try db.inTransaction {
                try db.run("insert into parents default values")
                #expect(db.lastInsertRowID == 2)
                throw Rejected()
            }
        }
        #expect(db.lastInsertRowID == 1)
        try db.inTransaction {
            let inserted = try db.lastRowIDInserted {
                try db.run("insert into children (parent) values (1)")
                _ = throwsRejected {
                    try db.inSavepoint {
                        try db.run("insert into parents default values")
                        throw Rejected()
                    }
                }
            }
            #expect(inserted == 1)
            #expect(db.lastInsertRowID == 1)
        }
        #expect(try db.scalar("select count(*) from parents") == 1)
    }
}
