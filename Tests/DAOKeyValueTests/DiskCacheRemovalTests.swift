import DAOEngine
import DAOKeyValue
import DAOValue
import Testing

/// Removing entries: by key, by keys, by LIKE pattern, all of them, by nil.
@Suite struct DiskCacheRemovalTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common

    static let keys = ["user/1/avatar", "user/1/name", "user/2/avatar", "USER/3/avatar", "user_4", "userX4", "50%", "50x",
                       "a\\b", "é/1", "É/1"]

    /// Caches with `keys` stored, each key's value the key.
    private func filled(encrypted: Bool = false) throws -> DiskCaches {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 100, encrypted: encrypted)
        try caches.add("c", in: here, entries: Self.keys.map { ($0, .string($0)) })
        return caches
    }

    private func remaining(_ caches: DiskCaches) throws -> Set<String> {
        Set(try caches.keysByRecency("c", in: here))
    }

    @Test(arguments: [
        ("user/%", ["user/1/avatar", "user/1/name", "user/2/avatar", "USER/3/avatar"]),
        ("%/avatar", ["user/1/avatar", "user/2/avatar", "USER/3/avatar"]),
        ("user_4", ["user_4", "userX4"]),
        ("50%", ["50%", "50x"]),
        ("é/_", ["é/1"]),
        ("%", keys),
        ("user/1/avatar", ["user/1/avatar"]),
        ("nothing%", []),
    ])
    func likePatternsMatchAsSQLiteDoesAsciiCaseInsensitively(pattern: String, removed: [String]) throws {
        let caches = try filled()
        #expect(try caches.remove("c", in: here, like: pattern) == removed.count)
        #expect(try remaining(caches) == Set(Self.keys).subtracting(removed))
        #expect(try caches.info("c", in: here).count == Self.keys.count - removed.count)
    }

    @Test(arguments: [
        ("user\\_4", "\\", ["user_4"]),
        ("50!%", "!", ["50%"]),
        ("a\\\\b", "\\", ["a\\b"]),
    ] as [(String, Unicode.Scalar, [String])])
    func anEscapeCharacterMakesWildcardsLiteral(pattern: String, escape: Unicode.Scalar, removed: [String]) throws {
        let caches = try filled(encrypted: true)
        #expect(try caches.remove("c", in: here, like: pattern, escape: escape) == removed.count)
        #expect(try remaining(caches) == Set(Self.keys).subtracting(removed))
    }

    @Test(arguments: ["", String(repeating: "%", count: 2049)])
    func patternsOutsideTheLengthLimitsAreRefused(pattern: String) throws {
        let caches = try filled()
        #expect(diskCacheError { try caches.remove("c", in: here, like: pattern) } == .invalidValue)
        #expect(try caches.info("c", in: here).count == Self.keys.count)
    }

    @Test func removingKeysCountsOnlyThoseThatWereThere() throws {
        let caches = try filled()
        #expect(try caches.remove("c", in: here, keys: ["user_4", "missing", "50x", "user_4"]) == 2)
        #expect(try caches.remove("c", in: here, keys: []) == 0)
        #expect(try remaining(caches) == Set(Self.keys).subtracting(["user_4", "50x"]))
        #expect(try caches.info("c", in: here).count == Self.keys.count - 2)
        // Keys are exact, case included, unlike LIKE.
        #expect(try caches.remove("c", in: here, key: "user/3/avatar") == false)
        #expect(try caches.remove("c", in: here, key: "USER/3/avatar"))
    }

    @Test func aNullValueDeletesTheKeyInSetAndInABatch() throws {
        let caches = try filled()
        #expect(try caches.set("c", in: here, key: "50x", value: .null) == 0)
        #expect(try caches.set("c", in: here, key: "never-there", value: .null) == 0)
        #expect(try caches.add("c", in: here, entries: [("user_4", .null), ("fresh", 1), ("fresh", .null)]) == 0)
        #expect(try remaining(caches) == Set(Self.keys).subtracting(["50x", "user_4"]))
        #expect(try caches.info("c", in: here).count == Self.keys.count - 2)
    }

    @Test func removeAllEmptiesTheCacheAndKeepsIt() throws {
        let caches = try filled()
        #expect(try caches.removeAll("c", in: here) == Self.keys.count)
        #expect(try caches.info("c", in: here) == DiskCacheInfo(name: "c", capacity: 100, encrypted: false, count: 0))
        #expect(try caches.removeAll("c", in: here) == 0)
        try caches.set("c", in: here, key: "k", value: 1)
        #expect(try caches.get("c", in: here, key: "k") == 1)
    }
}
