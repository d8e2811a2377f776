import DAOSQLite
import DAOEngine
import Foundation
import Testing

/// What one open database costs in file descriptors, measured on SQLite
/// itself: the budget the server checks its settings with must not be short.
@Suite struct DescriptorBudgetTests {
    let folder = TemporaryFolder()

    /// The descriptors of this process open on files of the test's folder
    /// (other tests running in parallel open their own elsewhere).
    func descriptorsInFolder() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry))?.hasPrefix(folder.path) == true
        }.count
    }

    @Test(arguments: [1, 2, 4])
    func aDatabaseWithEveryReaderOpenHoldsItsBudget(_ readers: Int) throws {
        let configuration = Engine.Configuration(dataDirectory: folder.path, database: .init(maximumReaders: readers))
        let pool = try DatabasePool(path: folder.file(), configuration: configuration.database)
        try pool.write { try $0.execute("create table t (v integer); insert into t values (1)") }
        // Every reader busy at once, each having read (so each has its -wal open).
        let held = pool.holdingReaders(readers, read: { try $0.execute("select * from t") }) {
            #expect(pool.openConnectionCount == 1 + readers)
            #expect(descriptorsInFolder() == configuration.descriptorsPerDatabase)
        }
        #expect(held)
        pool.close()
        #expect(descriptorsInFolder() == 0)
    }

    @Test func theEngineBudgetCountsEveryDatabaseAThreadMayHoldOpen() {
        let configuration = Engine.Configuration(dataDirectory: "", database: .init(maximumReaders: 2), maximumOpenDatabases: 128)
        #expect(configuration.descriptorsPerDatabase == 7)
        #expect(configuration.maximumDescriptors(threads: 2) == 130 * 7 + 2)
    }
}
