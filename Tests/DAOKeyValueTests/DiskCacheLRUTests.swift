import DAOEngine
import DAOKeyValue
import DAOValue
import Testing

/// Recency order, capacity with slack, and batch eviction.
@Suite struct DiskCacheLRUTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common

    @Test(arguments: [(1, 1), (5, 1), (9, 1), (10, 1), (19, 1), (20, 2), (99, 9), (100, 10), (1_000_000, 100_000)])
    func slackIsATenthOfTheCapacityAndAtLeastOne(capacity: Int, slack: Int) {
        #expect(DiskCaches.slack(forCapacity: capacity) == slack)
    }

    @Test func aFullCacheEvictsTheLeastRecentlyUsedDownToItsCapacityOnlyPastTheSlack() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        for index in 0..<11 {
            #expect(try caches.set("c", in: here, key: "k\(index)", value: .integer(Int64(index))) == 0)
        }
        #expect(try caches.info("c", in: here).count == 11)
        // The twelfth is one beyond capacity + slack: the two oldest go, in one statement.
        #expect(try caches.set("c", in: here, key: "k11", value: 11) == 2)
        #expect(try caches.info("c", in: here).count == 10)
        #expect(try caches.keysByRecency("c", in: here) == (2..<12).map { "k\($0)" })
        #expect(try caches.get("c", in: here, key: "k0") == nil)
        #expect(try caches.get("c", in: here, key: "k1") == nil)
        #expect(try caches.get("c", in: here, key: "k2") == 2)
    }

    @Test func getMakesAnEntryTheMostRecentSoItOutlivesOlderOnes() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 3, encrypted: false)
        for key in ["a", "b", "c", "d"] { try caches.set("c", in: here, key: key, value: .string(key)) }
        #expect(try caches.get("c", in: here, key: "a") == "a")
        #expect(try caches.keysByRecency("c", in: here) == ["b", "c", "d", "a"])
        // Count 5 > 3 + 1: down to 3, the least recently used (b, c) first.
        #expect(try caches.set("c", in: here, key: "e", value: "e") == 2)
        #expect(try caches.keysByRecency("c", in: here) == ["d", "a", "e"])
    }

    @Test func settingAnExistingKeyReplacesItsValueAndMakesItMostRecent() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 5, encrypted: false)
        for key in ["a", "b", "c"] { try caches.set("c", in: here, key: key, value: 1) }
        try caches.set("c", in: here, key: "a", value: ["new": true])
        #expect(try caches.keysByRecency("c", in: here) == ["b", "c", "a"])
        #expect(try caches.get("c", in: here, key: "a") == ["new": true])
        #expect(try caches.info("c", in: here).count == 3)
    }

    @Test func aMissDoesNotDisturbTheOrder() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 5, encrypted: false)
        for key in ["a", "b"] { try caches.set("c", in: here, key: key, value: 1) }
        #expect(try caches.get("c", in: here, key: "zzz") == nil)
        #expect(try caches.keysByRecency("c", in: here) == ["a", "b"])
        #expect(try caches.info("c", in: here).count == 2)
    }

    @Test func aBatchIsStoredInOrderAndEvictsOnceKeepingItsLastEntries() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.set("c", in: here, key: "old", value: 0)
        let batch = (0..<25).map { (key: "b\($0)", value: Value.integer(Int64($0))) }
        #expect(try caches.add("c", in: here, entries: batch) == 16)
        #expect(try caches.keysByRecency("c", in: here) == (15..<25).map { "b\($0)" })
        #expect(try caches.info("c", in: here).count == 10)
    }

    @Test func aBatchWithARepeatedKeyKeepsTheLastValueAsTheMostRecent() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: true)
        #expect(try caches.add("c", in: here, entries: [("a", 1), ("b", 2), ("a", 3)]) == 0)
        #expect(try caches.keysByRecency("c", in: here) == ["b", "a"])
        #expect(try caches.get("c", in: here, key: "a") == 3)
        #expect(try caches.info("c", in: here).count == 2)
    }

    @Test func aFailedBatchStoresNothing() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.set("c", in: here, key: "kept", value: 1)
        // The third value cannot be stored exactly as JSON: the whole batch is refused.
        let code = diskCacheError {
            try caches.add("c", in: here, entries: [("a", 1), ("b", 2), ("c", .double(.nan))])
        }
        #expect(code == .invalidValue)
        #expect(try caches.keysByRecency("c", in: here) == ["kept"])
        #expect(try caches.info("c", in: here).count == 1)
    }

    @Test func shrinkingTheCapacityBelowTheCountEvictsAtOnceAndGrowingKeepsEverything() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 20, encrypted: false)
        for index in 0..<20 { try caches.set("c", in: here, key: "k\(index)", value: 1) }
        let grown = try caches.create("c", in: here, capacity: 40, encrypted: false)
        #expect(grown.created == false && grown.evicted == 0 && grown.info.count == 20 && grown.info.capacity == 40)
        let shrunk = try caches.create("c", in: here, capacity: 5, encrypted: false)
        #expect(shrunk.created == false)
        #expect(shrunk.evicted == 15)
        #expect(shrunk.info == DiskCacheInfo(name: "c", capacity: 5, encrypted: false, count: 5))
        #expect(try caches.keysByRecency("c", in: here) == (15..<20).map { "k\($0)" })
        #expect(try caches.info("c", in: here) == shrunk.info)
    }

    @Test func theStoredCountIsRepairedWhenEvictionCountsTheRows() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        for index in 0..<5 { try caches.set("c", in: here, key: "k\(index)", value: 1) }
        // A count that drifted (edited by hand) upwards triggers an eviction that first counts rows.
        try caches.execute("UPDATE daogate_lru_caches SET count = 50 WHERE name = 'c'", in: here)
        #expect(try caches.set("c", in: here, key: "k5", value: 1) == 0)
        #expect(try caches.info("c", in: here).count == 6)
    }

    /// Seeded random operations against `DiskCacheModel`: every result, and the
    /// count after every step, and the whole recency order now and then.
    @Test(arguments: [
        (UInt64(1), false), (2, false), (3, true), (42, false), (2026, true), (0xDEAD_BEEF, false),
    ])
    func randomOperationsBehaveAsTheReferenceModel(seed: UInt64, encrypted: Bool) throws {
        var random = SplitMix64(seed: seed)
        let capacity = [1, 2, 3, 7, 10, 25][Int(random.next() % 6)]
        let caches = try fixture.caches()
        try caches.create("m", in: here, capacity: capacity, encrypted: encrypted)
        var model = DiskCacheModel(capacity: capacity)
        let keyCount = capacity * 3 + 2
        func randomKey() -> String { "key\(random.next() % UInt64(keyCount))" }

        for step in 0..<300 {
            let operation = random.next() % 100
            let key = randomKey()
            let value: Value = step % 3 == 0 ? .string("v\(step)") : .integer(Int64(step))
            switch operation {
            case 0..<45:
                let evicted = try caches.set("m", in: here, key: key, value: value)
                #expect(evicted == model.set(key, value), "step \(step): set \(key)")
            case 45..<75:
                let found = try caches.get("m", in: here, key: key)
                #expect(found == model.get(key), "step \(step): get \(key)")
            case 75..<83:
                let removed = try caches.remove("m", in: here, key: key)
                #expect(removed == model.remove(key), "step \(step): remove \(key)")
            case 83..<88:
                #expect(try caches.set("m", in: here, key: key, value: .null) == 0)
                _ = model.remove(key)
            default:
                let size = Int(random.next() % UInt64(capacity * 2 + 1))
                let batch = (0..<size).map { index -> (key: String, value: Value) in
                    (randomKey(), index % 5 == 4 ? .null : .integer(Int64(step * 100 + index)))
                }
                let evicted = try caches.add("m", in: here, entries: batch)
                #expect(evicted == model.add(batch), "step \(step): add of \(size)")
            }
            let count = try caches.info("m", in: here).count
            #expect(count == model.count, "step \(step): count")
            #expect(count <= capacity + DiskCaches.slack(forCapacity: capacity))
            if step % 25 == 0 {
                #expect(try caches.keysByRecency("m", in: here) == model.order, "step \(step): order")
            }
        }
        #expect(try caches.keysByRecency("m", in: here) == model.order)
        #expect(try caches.rowCount("m", in: here) == model.count)
        for key in model.order {
            #expect(try caches.get("m", in: here, key: key) == model.values[key])
        }
    }
}
