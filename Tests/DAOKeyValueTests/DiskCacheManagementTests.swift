import DAOEngine
import DAOKeyValue
import DAOValue
import Testing

/// Creating, describing and deleting caches; names, limits, locations.
@Suite struct DiskCacheManagementTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common
    let ann = DiskCacheFixture.ann

    @Test func createMakesACacheOnceThenFindsTheSameOne() throws {
        let caches = try fixture.caches()
        let made = try caches.create("c", in: here, capacity: 10, encrypted: false)
        #expect(made.created && made.evicted == 0)
        #expect(made.info == DiskCacheInfo(name: "c", capacity: 10, encrypted: false, count: 0))
        try caches.set("c", in: here, key: "k", value: 1)
        let found = try caches.create("c", in: here, capacity: 10, encrypted: false)
        #expect(!found.created && found.evicted == 0)
        #expect(found.info == DiskCacheInfo(name: "c", capacity: 10, encrypted: false, count: 1))
        #expect(try caches.info("c", in: here) == found.info)
    }

    @Test(arguments: [(false, true), (true, false)])
    func theOtherEncryptionSettingIsAConflictAndChangesNothing(first: Bool, second: Bool) throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: first)
        try caches.set("c", in: here, key: "k", value: "v")
        #expect(diskCacheError { try caches.create("c", in: here, capacity: 20, encrypted: second) } == .cacheConflict)
        #expect(try caches.info("c", in: here) == DiskCacheInfo(name: "c", capacity: 10, encrypted: first, count: 1))
        #expect(try caches.get("c", in: here, key: "k") == "v")
    }

    @Test(arguments: [(0, KeyValueError.Code.invalidValue), (-1, .invalidValue), (Int.min, .invalidValue),
                      (101, .limitExceeded), (Int.max, .limitExceeded)])
    func capacitiesOutsideOneToTheMaximumAreRefused(capacity: Int, code: KeyValueError.Code) throws {
        let caches = try fixture.caches(maximumCapacity: 100)
        #expect(diskCacheError { try caches.create("c", in: here, capacity: capacity, encrypted: false) } == code)
        #expect(try caches.list(in: here).isEmpty)
        #expect(try caches.create("c", in: here, capacity: 100, encrypted: false).info.capacity == 100)
        #expect(try caches.create("c", in: here, capacity: 1, encrypted: false).info.capacity == 1)
    }

    @Test(arguments: ["", "1abc", "a-b", "a b", "a.b", "é", "a\"b", String(repeating: "n", count: 65), "caches", "Caches", "CACHES"])
    func namesThatCannotNameATableAreRefused(name: String) throws {
        let caches = try fixture.caches()
        #expect(diskCacheError { try caches.create(name, in: here, capacity: 10, encrypted: false) } == .invalidName)
        #expect(diskCacheError { _ = try caches.info(name, in: here) } == .invalidName)
        #expect(diskCacheError { _ = try caches.get(name, in: here, key: "k") } == .invalidName)
        #expect(fixture.dataFiles().isEmpty)
    }

    @Test func longestAndUnusualValidNamesWork() throws {
        let caches = try fixture.caches()
        for name in [String(repeating: "n", count: 64), "_", "_caches", "caches_", "A1_b2"] {
            #expect(try caches.create(name, in: here, capacity: 1, encrypted: false).created)
            try caches.set(name, in: here, key: "k", value: .string(name))
            #expect(try caches.get(name, in: here, key: "k") == .string(name))
        }
    }

    @Test func namesDifferingOnlyInCaseCannotShareADatabase() throws {
        let caches = try fixture.caches()
        try caches.create("Photos", in: here, capacity: 10, encrypted: false)
        #expect(diskCacheError { try caches.create("photos", in: here, capacity: 10, encrypted: false) } == .cacheConflict)
        #expect(diskCacheError { _ = try caches.info("PHOTOS", in: here) } == .unknownCache)
        // In another database the name is free.
        #expect(try caches.create("photos", in: ann, capacity: 10, encrypted: false).created)
    }

    @Test(arguments: ["", "tab\there", "nul\u{0}", String(repeating: "k", count: 1025)])
    func invalidKeysAreRefused(key: String) throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        #expect(diskCacheError { try caches.set("c", in: here, key: key, value: 1) } == .invalidName)
        #expect(diskCacheError { _ = try caches.get("c", in: here, key: key) } == .invalidName)
        #expect(diskCacheError { try caches.remove("c", in: here, keys: ["fine", key]) } == .invalidName)
        #expect(diskCacheError { try caches.add("c", in: here, entries: [("fine", 1), (key, 1)]) } == .invalidName)
        #expect(try caches.info("c", in: here).count == 0)
    }

    /// Every per-cache operation on `name`, each returning the KeyValueError code it threw.
    private func everyOperation(_ caches: DiskCaches, _ name: String, in location: DatabaseLocation) -> [KeyValueError.Code?] {
        [
            diskCacheError { _ = try caches.info(name, in: location) },
            diskCacheError { try caches.set(name, in: location, key: "k", value: 1) },
            diskCacheError { try caches.set(name, in: location, key: "k", value: .null) },
            diskCacheError { _ = try caches.get(name, in: location, key: "k") },
            diskCacheError { try caches.remove(name, in: location, key: "k") },
            diskCacheError { try caches.removeAll(name, in: location) },
            diskCacheError { try caches.add(name, in: location, entries: [("k", 1)]) },
            diskCacheError { try caches.add(name, in: location, entries: []) },
            diskCacheError { try caches.remove(name, in: location, like: "%") },
            diskCacheError { try caches.remove(name, in: location, keys: ["k"]) },
        ]
    }

    @Test func everyOperationOnAnUnknownCacheIsUnknownCacheAndCreatesNoFile() throws {
        let caches = try fixture.caches()
        #expect(everyOperation(caches, "nope", in: ann).allSatisfy { $0 == .unknownCache })
        #expect(try caches.delete("nope", in: ann) == false)
        #expect(try caches.list(in: ann).isEmpty)
        #expect(fixture.dataFiles().isEmpty)

        // A database that exists, without the metadata table, then with it.
        try caches.execute("CREATE TABLE unrelated (x)", in: here)
        #expect(everyOperation(caches, "nope", in: here).allSatisfy { $0 == .unknownCache })
        #expect(try caches.list(in: here).isEmpty)
        try caches.create("other", in: here, capacity: 1, encrypted: false)
        #expect(everyOperation(caches, "nope", in: here).allSatisfy { $0 == .unknownCache })
        #expect(try caches.delete("nope", in: here) == false)
    }

    @Test func deleteDropsTheTableAndItsRowAndTheCacheIsThenUnknown() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.create("d", in: here, capacity: 10, encrypted: false)
        try caches.set("c", in: here, key: "k", value: 1)
        #expect(try caches.delete("c", in: here))
        #expect(try caches.delete("c", in: here) == false)
        #expect(everyOperation(caches, "c", in: here).allSatisfy { $0 == .unknownCache })
        #expect(try caches.list(in: here).map(\.name) == ["d"])
        let tables = try caches.rows("SELECT name FROM sqlite_schema WHERE name GLOB 'daogate_lru_*' ORDER BY name", in: here)
        #expect(tables == [["daogate_lru_caches"], ["daogate_lru_d"], ["daogate_lru_d:delete"], ["daogate_lru_d:expire"],
                           ["daogate_lru_d:insert"], ["daogate_lru_d:touched"], ["daogate_lru_d:update"]])
    }

    @Test func listIsSortedByNameInByteOrder() throws {
        let caches = try fixture.caches()
        for (name, capacity) in [("b", 2), ("a", 1), ("C", 3), ("_z", 4)] {
            try caches.create(name, in: here, capacity: capacity, encrypted: capacity == 3)
        }
        try caches.set("a", in: here, key: "k", value: 1)
        #expect(try caches.list(in: here) == [
            DiskCacheInfo(name: "C", capacity: 3, encrypted: true, count: 0),
            DiskCacheInfo(name: "_z", capacity: 4, encrypted: false, count: 0),
            DiskCacheInfo(name: "a", capacity: 1, encrypted: false, count: 1),
            DiskCacheInfo(name: "b", capacity: 2, encrypted: false, count: 0),
        ])
    }

    @Test func eachDatabaseHasItsOwnCaches() throws {
        let caches = try fixture.caches()
        let bob = DatabaseLocation.user(try UserID("bob"), storage: nil)
        let custom = DatabaseLocation.common(storage: "archive")
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.create("c", in: ann, capacity: 20, encrypted: true)
        try caches.create("c", in: custom, capacity: 30, encrypted: false)
        try caches.set("c", in: here, key: "k", value: "common")
        try caches.set("c", in: ann, key: "k", value: "ann's")
        #expect(try caches.get("c", in: here, key: "k") == "common")
        #expect(try caches.get("c", in: ann, key: "k") == "ann's")
        #expect(try caches.get("c", in: custom, key: "k") == nil)
        #expect(diskCacheError { _ = try caches.get("c", in: bob, key: "k") } == .unknownCache)
        #expect(try caches.list(in: ann) == [DiskCacheInfo(name: "c", capacity: 20, encrypted: true, count: 1)])
        #expect(try caches.removeAll("c", in: here) == 1)
        #expect(try caches.get("c", in: ann, key: "k") == "ann's")
        #expect(fixture.dataFiles().filter { $0.hasSuffix(".db") } == ["common.db", "storages/archive/common.db", "users/p-ann.db"])
    }

    @Test func theFileLayoutIsTheDocumentedOne() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        func columns(_ table: String) throws -> [[Value]] {
            try caches.rows("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", in: here, [.string(table)])
        }
        #expect(try columns("daogate_lru_caches") == [
            ["name", "TEXT", 0, nil, 1], ["capacity", "INTEGER", 1, nil, 0], ["encrypted", "INTEGER", 1, nil, 0],
            ["created", "REAL", 1, nil, 0], ["count", "INTEGER", 1, "0", 0], ["max_age", "REAL", 0, nil, 0],
            ["max_bytes", "INTEGER", 0, nil, 0], ["bytes", "INTEGER", 1, "0", 0],
        ])
        #expect(try columns("daogate_lru_c") == [
            ["key", "TEXT", 0, nil, 1], ["value", "BLOB", 1, nil, 0], ["expire", "REAL", 1, "0", 0], ["touched", "INTEGER", 1, nil, 0],
            ["used", "REAL", 1, "0", 0],
        ])
        #expect(try caches.rows("SELECT name, capacity, encrypted, created, count FROM daogate_lru_caches", in: here)
            == [["c", 10, 0, .double(fixture.now), 0]])
        let indexes = try caches.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'daogate_lru_c' AND sql IS NOT NULL ORDER BY name", in: here)
        #expect(indexes == [
            ["daogate_lru_c:expire", #"CREATE INDEX "daogate_lru_c:expire" ON "daogate_lru_c" (expire) WHERE expire > 0"#],
            ["daogate_lru_c:touched", #"CREATE INDEX "daogate_lru_c:touched" ON "daogate_lru_c" (touched)"#],
        ])
    }

    @Test func aCacheMadeBeforeTheAgeAndSizePoliciesIsMigratedOnFirstUseAndThenAgesFromThen() throws {
        let caches = try fixture.caches()
        // The layout before maxAge and maxBytes: no used, max_age, max_bytes, bytes, nor triggers.
        try caches.engine.withOpenDatabase(here) { database in
            try database.pool.write { db in
                try db.execute("""
                    CREATE TABLE daogate_lru_caches (name TEXT PRIMARY KEY, capacity INTEGER NOT NULL, \
                    encrypted INTEGER NOT NULL, created REAL NOT NULL, count INTEGER NOT NULL DEFAULT 0)
                    """)
                try db.execute(#"CREATE TABLE "daogate_lru_old" (key TEXT PRIMARY KEY, value BLOB NOT NULL, expire REAL NOT NULL DEFAULT 0, touched INTEGER NOT NULL)"#)
                try db.execute(#"CREATE INDEX "daogate_lru_old:touched" ON "daogate_lru_old" (touched)"#)
                try db.execute(#"CREATE INDEX "daogate_lru_old:expire" ON "daogate_lru_old" (expire) WHERE expire > 0"#)
                try db.execute("INSERT INTO daogate_lru_caches VALUES ('old', 10, 0, 0, 2)")
                try db.execute(#"INSERT INTO "daogate_lru_old" VALUES ('a', '1', 0, 1), ('b', '22', 0, 2)"#)
            }
        }
        #expect(try caches.info("old", in: here) == DiskCacheInfo(name: "old", capacity: 10, encrypted: false, count: 2))
        // Every entry counts as used at the migration; the bytes are counted (keys and values: 2 + 3).
        #expect(try caches.rows(#"SELECT key, used FROM "daogate_lru_old" ORDER BY key"#, in: here)
            == [["a", .double(fixture.now)], ["b", .double(fixture.now)]])
        #expect(try caches.rows("SELECT bytes FROM daogate_lru_caches", in: here) == [[5]])
        try caches.set("old", in: here, key: "c", value: "333")
        #expect(try caches.rows("SELECT bytes FROM daogate_lru_caches", in: here) == [[11]])
        let database = { (body: (OpenDatabase) throws -> (entries: Int, bytes: Int)) throws in
            try caches.engine.withOpenDatabase(self.here) { try body($0) }
        }
        #expect(try database { try caches.purgeExpired(in: $0, maxAge: 60) }.entries == 0)
        fixture.advance(30)
        #expect(try caches.get("old", in: here, key: "a") == 1)
        fixture.advance(31)
        // b and c were last used 61 s ago; a, read 31 s ago, stays.
        let purged = try database { try caches.purgeExpired(in: $0, maxAge: 60) }
        #expect(purged.entries == 2)
        #expect(purged.bytes == 3 + 6)
        #expect(try caches.info("old", in: here).count == 1)
        #expect(try caches.rows("SELECT bytes FROM daogate_lru_caches", in: here) == [[2]])
        // A cache's own maxAge wins over the sweep's; 0 is never.
        try caches.create("old", in: here, capacity: 10, encrypted: false, maxAge: 0)
        fixture.advance(1000)
        #expect(try database { try caches.purgeExpired(in: $0, maxAge: 60) }.entries == 0)
    }
}
