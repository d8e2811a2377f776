import DAOEngine
import DAOKeyValue
import DAOValue
import Testing

/// A disk cache is a file: it outlives the engine that wrote it.
@Suite struct DiskCachePersistenceTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common
    let ann = DiskCacheFixture.ann

    @Test func cachesValuesAndRecencySurviveARestart() throws {
        let first = try fixture.caches()
        try first.create("plain", in: here, capacity: 4, encrypted: false)
        try first.create("secret", in: ann, capacity: 10, encrypted: true)
        let values: [String: Value] = [
            "a": "text", "b": 42, "c": 2.5, "d": ["nested": [1, nil, true], "bytes": .blob([0, 1, 255])],
        ]
        for key in ["a", "b", "c", "d"] { try first.set("plain", in: here, key: key, value: values[key]!) }
        try first.set("secret", in: ann, key: "s", value: .blob([9, 8, 7]), expire: fixture.now + 60)
        // Recency now: c, d, a, b.
        _ = try first.get("plain", in: here, key: "a")
        _ = try first.get("plain", in: here, key: "b")
        first.engine.shutdown()

        let second = try fixture.caches()
        #expect(try second.list(in: here) == [DiskCacheInfo(name: "plain", capacity: 4, encrypted: false, count: 4)])
        #expect(try second.list(in: ann) == [DiskCacheInfo(name: "secret", capacity: 10, encrypted: true, count: 1)])
        #expect(try second.keysByRecency("plain", in: here) == ["c", "d", "a", "b"])
        // The order decides the next eviction: capacity 4 + slack 1, so the sixth entry evicts c and d.
        try second.set("plain", in: here, key: "e", value: 5)
        #expect(try second.set("plain", in: here, key: "f", value: 6) == 2)
        #expect(try second.get("plain", in: here, key: "c") == nil)
        #expect(try second.get("plain", in: here, key: "d") == nil)
        #expect(try second.get("plain", in: here, key: "a") == values["a"])
        #expect(try second.get("plain", in: here, key: "b") == values["b"])
        #expect(try second.get("secret", in: ann, key: "s") == .blob([9, 8, 7]))
        // The expiry was kept too.
        fixture.advance(60)
        #expect(try second.get("secret", in: ann, key: "s") == nil)
    }

    @Test func newEntriesAfterARestartAreMoreRecentThanEveryOldOne() throws {
        let first = try fixture.caches()
        try first.create("c", in: here, capacity: 100, encrypted: false)
        for index in 0..<10 { try first.set("c", in: here, key: "old\(index)", value: 1) }
        first.engine.shutdown()

        let second = try fixture.caches()
        try second.set("c", in: here, key: "new", value: 1)
        _ = try second.get("c", in: here, key: "old0")
        #expect(try second.keysByRecency("c", in: here) == (1..<10).map { "old\($0)" } + ["new", "old0"])
    }

    @Test func aDeletedCacheStaysDeletedAndItsNameCanBeReused() throws {
        let first = try fixture.caches()
        try first.create("c", in: here, capacity: 10, encrypted: true)
        try first.set("c", in: here, key: "k", value: 1)
        #expect(try first.delete("c", in: here))
        first.engine.shutdown()

        let second = try fixture.caches()
        #expect(try second.list(in: here).isEmpty)
        #expect(try second.rows("SELECT name FROM sqlite_schema WHERE name = 'daogate_lru_c' OR name GLOB 'daogate_lru_c:*'", in: here).isEmpty)
        let again = try second.create("c", in: here, capacity: 10, encrypted: false)
        #expect(again.created && again.info.count == 0)
        #expect(try second.get("c", in: here, key: "k") == nil)
    }
}
