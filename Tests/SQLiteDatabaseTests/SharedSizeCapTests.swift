import SQLiteDatabase
import DAOValue
import Foundation
import Testing

/// Files sharing one cap (`SharedSizeCap`): a write to one may grow it by what the others leave, a write
/// beyond fails `SQLITE_FULL` and keeps nothing, and room freed in one file is room in the others.
@Suite struct SharedSizeCapTests {
    let folder = TemporaryFolder()
    static let cap = 64 * 1024
    static let blob = Value.blob([UInt8](repeating: 7, count: 36 * 1024))

    func pools(journal: JournalMode) throws -> (DatabasePool, DatabasePool, SharedSizeCap) {
        let configuration = DatabaseConfiguration(maximumDatabaseBytes: Self.cap, journal: journal,
                                                  usesFileLocks: journal == .wal)
        let path = folder.path
        let cap = SharedSizeCap(bytes: Self.cap) { only in
            var sizes: [String: Int] = [:]
            for member in only.map({ [$0] }) ?? ["a", "b"] {
                if let size = (try? FileManager.default.attributesOfItem(atPath: path + "/" + member)[.size]) as? NSNumber {
                    sizes[member] = size.intValue
                }
            }
            return sizes
        }
        let a = try DatabasePool(path: folder.file("a"), configuration: configuration, share: SizeShare(cap: cap, member: "a"))
        let b = try DatabasePool(path: folder.file("b"), configuration: configuration, share: SizeShare(cap: cap, member: "b"))
        for pool in [a, b] { try pool.write { try $0.execute("create table t (x blob)") } }
        return (a, b, cap)
    }

    func insert(_ pool: DatabasePool) throws {
        try pool.write { db in try db.inTransaction(.immediate) { try db.run("insert into t values (?)", [Self.blob]) } }
    }

    func count(_ pool: DatabasePool) throws -> Value { try pool.read { try $0.scalar("select count(*) from t") } }

    @Test(arguments: [JournalMode.rollback, .wal])
    func theFilesHoldNoMoreThanTheCapTogether(journal: JournalMode) throws {
        let (a, b, cap) = try pools(journal: journal)
        defer { a.close(); b.close() }
        try insert(a)
        // Each file alone would take a second blob under the cap; together they are full.
        let full = sqliteError { try insert(b) }
        #expect(full?.isFull == true)
        #expect(try count(b) == .integer(0))
        #expect(cap.heldBytes <= Self.cap)
        // Room freed in one file (rows deleted, the file vacuumed) is room in the other.
        try a.write { db in try db.execute("delete from t"); try db.execute("vacuum") }
        try insert(b)
        #expect(try count(b) == .integer(1))
        // a, which held more than its share now leaves it, cannot grow back.
        #expect(sqliteError { try insert(a) }?.isFull == true)
        #expect(cap.heldBytes <= Self.cap)
    }

    /// A member removed outside a write (a reset) is read on disk again at the next write.
    @Test func aForgottenMemberIsReadOnDiskAgain() throws {
        let (a, b, cap) = try pools(journal: .rollback)
        try insert(a)
        a.close()
        try FileManager.default.removeItem(atPath: folder.file("a"))
        cap.forget("a")
        try insert(b)
        #expect(try count(b) == .integer(1))
        b.close()
    }
}
