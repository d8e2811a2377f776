import DAODialect
import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Testing

/// The tables the storage layers make in a database are names that no module and no caller may
/// take as a table (`ReservedTableNames`, read by `tableNameProblem`): a module's table can never be one of them.
@Suite struct ReservedTableNameTests {
    @Test func everyTableOfTheKeyValueStoreAndTheCachesIsARefusedTableName() throws {
        let fixture = DiskCacheFixture()
        let engine = try fixture.engine()
        let location = DiskCacheFixture.common
        let store = KVStore(engine: engine, cipher: nil, clock: fixture.clock)
        _ = try store.set("b", "k", value: .string("v"), type: nil, encrypted: false, purgeable: false, in: location)
        let caches = fixture.caches(on: engine, cipher: nil)
        _ = try caches.create("sessions", in: location, capacity: 10, encrypted: false, maxAge: 60)
        _ = try caches.set("sessions", in: location, key: "k", value: .string("v"))

        let names = try caches.rows("select name from sqlite_schema where type = 'table' order by name", in: location)
            .compactMap { row -> String? in if case .string(let name) = row.first { name } else { nil } }
        // The key-value store's table, the caches' list and the cache's table (the engine's TableVersions, if made).
        #expect(names.count >= 3, "tables found: \(names)")
        for name in names {
            #expect(tableNameProblem(name) != nil, "\(name) could be taken as a module's table")
        }
    }
}
