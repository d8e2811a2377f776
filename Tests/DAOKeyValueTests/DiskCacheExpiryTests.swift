import DAOEngine
import DAOKeyValue
import DAOValue
import Testing

/// `expire`: absolute times, reached on read or purged.
@Suite struct DiskCacheExpiryTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common

    @Test func anEntryReadAtOrAfterItsExpiryIsNilAndItsRowIsDeleted() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.set("c", in: here, key: "k", value: "v", expire: fixture.now + 10)
        try caches.set("c", in: here, key: "other", value: "w")
        fixture.advance(9.5)
        #expect(try caches.get("c", in: here, key: "k") == "v")
        fixture.advance(0.5)
        #expect(try caches.get("c", in: here, key: "k") == nil)
        #expect(try caches.rows("SELECT key FROM daogate_lru_c", in: here) == [["other"]])
        #expect(try caches.info("c", in: here).count == 1)
    }

    @Test func anExpiryAlreadyReachedDeletesTheKeyAndStoresNothing() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: true)
        try caches.set("c", in: here, key: "k", value: "v")
        #expect(try caches.set("c", in: here, key: "k", value: "new", expire: fixture.now) == 0)
        #expect(try caches.get("c", in: here, key: "k") == nil)
        #expect(try caches.set("c", in: here, key: "j", value: "new", expire: fixture.now - 3600) == 0)
        #expect(try caches.info("c", in: here).count == 0)
        #expect(try caches.rowCount("c", in: here) == 0)
    }

    @Test func zeroNeverExpiresAndReplacingAnEntryReplacesItsExpiry() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.set("c", in: here, key: "never", value: 1, expire: 0)
        try caches.set("c", in: here, key: "k", value: 1, expire: fixture.now + 1)
        try caches.set("c", in: here, key: "k", value: 2)
        fixture.advance(10 * 365 * 86_400)
        #expect(try caches.get("c", in: here, key: "never") == 1)
        #expect(try caches.get("c", in: here, key: "k") == 2)
        #expect(try caches.purgeExpired(in: here) == (0, 0))
    }

    @Test(arguments: [-1, -0.001, Double.nan, Double.infinity, -Double.infinity])
    func anExpiryThatIsNotATimeIsRefused(expire: Double) throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        #expect(diskCacheError { try caches.set("c", in: here, key: "k", value: 1, expire: expire) } == .invalidValue)
        #expect(try caches.info("c", in: here).count == 0)
    }

    @Test func purgeDeletesTheExpiredEntriesOfEveryCacheAndCountsTheirBytes() throws {
        let caches = try fixture.caches()
        try caches.create("plain", in: here, capacity: 10, encrypted: false)
        try caches.create("secret", in: here, capacity: 10, encrypted: true)
        try caches.create("empty", in: here, capacity: 10, encrypted: false)
        let soon = fixture.now + 5
        // Key bytes + stored bytes: "k1" + `"abc"` = 2 + 5; "kéy" + `12` = 4 + 2.
        try caches.set("plain", in: here, key: "k1", value: "abc", expire: soon)
        try caches.set("plain", in: here, key: "kéy", value: 12, expire: soon)
        try caches.set("plain", in: here, key: "live", value: "x")
        try caches.set("plain", in: here, key: "later", value: "x", expire: soon + 100)
        // "e1" + a ciphertext of a one-byte string: header 11 (magic, version, id length, "default"), nonce 12,
        // kind and byte 2, tag 16.
        try caches.set("secret", in: here, key: "e1", value: "x", expire: soon)
        fixture.advance(5)

        let purged = try caches.purgeExpired(in: here)
        #expect(purged.entries == 3)
        #expect(purged.bytes == (2 + 5) + (4 + 2) + (2 + 41))
        #expect(try caches.list(in: here).map(\.count) == [0, 2, 0])
        #expect(try caches.keysByRecency("plain", in: here) == ["live", "later"])
        #expect(try caches.purgeExpired(in: here) == (0, 0))
    }

    @Test func purgingADatabaseThatDoesNotExistFindsNothingAndCreatesNothing() throws {
        let caches = try fixture.caches()
        #expect(try caches.purgeExpired(in: DiskCacheFixture.ann) == (0, 0))
        #expect(fixture.dataFiles().isEmpty)
    }

    @Test func expiredEntriesCountTowardsCapacityUntilRemoved() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 2, encrypted: false)
        try caches.set("c", in: here, key: "a", value: 1, expire: fixture.now + 1)
        try caches.set("c", in: here, key: "b", value: 1, expire: fixture.now + 1)
        fixture.advance(2)
        try caches.set("c", in: here, key: "c", value: 1)
        #expect(try caches.info("c", in: here).count == 3)
        // The fourth passes capacity + slack: the oldest, expired ones go first.
        #expect(try caches.set("c", in: here, key: "d", value: 1) == 2)
        #expect(try caches.keysByRecency("c", in: here) == ["c", "d"])
    }
}
