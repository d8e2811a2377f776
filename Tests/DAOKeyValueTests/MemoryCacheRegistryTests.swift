import DAOEngine
import DAOValue
import Testing
@testable import DAOKeyValue

struct MemoryCacheRegistryTests {
    static let now = 1_000_000.0
    static let common = DatabaseLocation.common(storage: nil)

    static func user(_ id: String, storage: String? = nil) throws -> DatabaseLocation {
        .user(try UserID(id), storage: storage)
    }

    /// The code of the `KeyValueError` that `body` throws, nil when it throws none.
    static func code(_ body: () throws -> Void) -> KeyValueError.Code? {
        do {
            try body()
            return nil
        } catch let error as KeyValueError {
            return error.code
        } catch {
            Issue.record(error, "not a KeyValueError")
            return nil
        }
    }

    @Test func createsLooksUpAndResizes() throws {
        let caches = MemoryCaches()
        let first = try caches.create("images", in: Self.common, capacity: 3)
        #expect(first.created && first.evicted == 0)
        #expect(try caches.cache("images", in: Self.common) === first.cache)
        try first.cache.add([(key: "a", value: 1), (key: "b", value: 2), (key: "c", value: 3)], now: Self.now)
        let again = try caches.create("images", in: Self.common, capacity: 1)
        #expect(!again.created && again.cache === first.cache)
        #expect(again.evicted == 2)
        #expect(again.cache.capacity == 1)
        #expect(again.cache.peek(5, fromHead: true, now: Self.now).map(\.key) == ["c"])
    }

    @Test func sameNameInOtherLocationsIsAnotherCache() throws {
        let caches = MemoryCaches()
        let common = try caches.create("c", in: Self.common, capacity: 5).cache
        let user = try caches.create("c", in: try Self.user("alice"), capacity: 5).cache
        let storage = try caches.create("c", in: .common(storage: "s1"), capacity: 5).cache
        #expect(common !== user && user !== storage && common !== storage)
        try common.set("k", 1, now: Self.now)
        #expect(user.get("k", now: Self.now) == nil)
        #expect(try caches.cache("c", in: try Self.user("alice")) === user)
    }

    @Test func refusesCapacitiesOutsideTheLimits() {
        let caches = MemoryCaches(limits: .init(maximumCapacity: 50))
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 0) } == .invalidValue)
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: -1) } == .invalidValue)
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 51) } == .limitExceeded)
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 50) } == nil)
        // A resize is held to the same limits.
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 51) } == .limitExceeded)
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 0) } == .invalidValue)
        #expect((try? caches.cache("c", in: Self.common))?.capacity == 50)
    }

    @Test(arguments: ["", "9lives", "has space", "dash-ed", String(repeating: "n", count: 65)])
    func refusesNamesThatAreNotIdentifiers(name: String) {
        let caches = MemoryCaches()
        #expect(Self.code { _ = try caches.create(name, in: Self.common, capacity: 1) } == .invalidName)
        #expect(caches.list(in: Self.common).isEmpty)
    }

    @Test func limitsTheCachesOfOneLocation() throws {
        let caches = MemoryCaches(limits: .init(maximumCachesPerLocation: 2))
        _ = try caches.create("a", in: Self.common, capacity: 1)
        _ = try caches.create("b", in: Self.common, capacity: 1)
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 1) } == .limitExceeded)
        // Resizing an existing one is no new cache; another location has its own count.
        #expect(Self.code { _ = try caches.create("a", in: Self.common, capacity: 2) } == nil)
        #expect(Self.code { _ = try caches.create("c", in: try Self.user("bob"), capacity: 1) } == nil)
        #expect(caches.delete("a", in: Self.common))
        #expect(Self.code { _ = try caches.create("c", in: Self.common, capacity: 1) } == nil)
    }

    @Test func anAbsentCacheIsUnknown() throws {
        let caches = MemoryCaches()
        let error = #expect(throws: KeyValueError.self) { try caches.cache("nothing", in: Self.common) }
        #expect(error?.code == .unknownCache)
        _ = try caches.create("there", in: Self.common, capacity: 1)
        #expect(Self.code { _ = try caches.cache("there", in: .common(storage: "other")) } == .unknownCache)
        #expect(!caches.delete("nothing", in: Self.common))
    }

    @Test func deleteReleasesTheBytesAndFencesHolders() throws {
        let caches = MemoryCaches()
        let cache = try caches.create("c", in: Self.common, capacity: 10).cache
        try cache.set("k", "value", now: Self.now)
        #expect(caches.budget.used > 0)
        #expect(caches.delete("c", in: Self.common))
        #expect(caches.budget.used == 0)
        #expect(Self.code { _ = try caches.cache("c", in: Self.common) } == .unknownCache)
        // A request that looked the cache up before the delete writes nothing.
        #expect(Self.code { try cache.set("k", "again", now: Self.now) } == .unknownCache)
        #expect(cache.get("k", now: Self.now) == nil)
        #expect(caches.budget.used == 0)
        // A new cache of the same name starts empty.
        let fresh = try caches.create("c", in: Self.common, capacity: 10)
        #expect(fresh.created && fresh.cache.count == 0)
    }

    @Test func listsByNameWithCapacityAndCount() throws {
        let caches = MemoryCaches()
        for (name, capacity) in [("zeta", 3), ("alpha", 5), ("mid", 1)] {
            let cache = try caches.create(name, in: Self.common, capacity: capacity).cache
            try cache.add((0..<capacity + 1).map { (key: "k\($0)", value: Value.integer(Int64($0))) }, now: Self.now)
        }
        _ = try caches.create("other", in: try Self.user("u"), capacity: 1)
        let listed = caches.list(in: Self.common)
        #expect(listed.map(\.name) == ["alpha", "mid", "zeta"])
        #expect(listed.map(\.capacity) == [5, 1, 3])
        #expect(listed.map(\.count) == [5, 1, 3])
        #expect(caches.list(in: .common(storage: "none")).isEmpty)
    }

    /// Caches with one entry each in every kind of location, named after it.
    static func populated() throws -> (MemoryCaches, [String: DatabaseLocation]) {
        let caches = MemoryCaches()
        let locations: [String: DatabaseLocation] = [
            "common": .common(storage: nil),
            "alice": try user("alice"),
            "bob": try user("bob"),
            "s_common": .common(storage: "s"),
            "s_alice": try user("alice", storage: "s"),
            "t_common": .common(storage: "t"),
            "file": .file("books.db"),
        ]
        for (name, location) in locations {
            let cache = try caches.create(name, in: location, capacity: 10).cache
            try cache.set("live", 1, now: now)
            try cache.set("dying", 2, expire: now + 1, now: now)
        }
        return (caches, locations)
    }

    static func remaining(_ caches: MemoryCaches, _ locations: [String: DatabaseLocation]) -> Set<String> {
        Set(locations.filter { (try? caches.cache($0.key, in: $0.value)) != nil }.map(\.key))
    }

    static func bytes(_ caches: MemoryCaches, _ locations: [String: DatabaseLocation]) -> Int {
        locations.reduce(0) { $0 + ((try? caches.cache($1.key, in: $1.value))?.charged ?? 0) }
    }

    @Test func dropTakesTheScopeOfAStorageReset() throws {
        let (caches, locations) = try Self.populated()
        let all = Set(locations.keys)
        #expect(caches.drop(storage: nil, user: try UserID("alice")) == 1)
        #expect(Self.remaining(caches, locations) == all.subtracting(["alice"]))
        #expect(caches.drop(storage: nil, user: try UserID("nobody")) == 0)
        #expect(caches.drop(storage: nil, user: nil) == 2)
        #expect(Self.remaining(caches, locations) == ["s_common", "s_alice", "t_common", "file"])
        #expect(caches.drop(storage: "s", user: try UserID("alice")) == 1)
        #expect(Self.remaining(caches, locations) == ["s_common", "t_common", "file"])
        #expect(caches.drop(storage: "s", user: nil) == 1)
        #expect(Self.remaining(caches, locations) == ["t_common", "file"])
        #expect(caches.budget.used == Self.bytes(caches, locations))
        #expect(caches.drop(storage: "t", user: nil) == 1)
        #expect(Self.remaining(caches, locations) == ["file"])
        #expect(caches.delete("file", in: .file("books.db")))
        #expect(caches.budget.used == 0)
    }

    @Test func purgeTakesTheSameScopes() throws {
        let (caches, locations) = try Self.populated()
        let later = Self.now + 5
        let entrySize = MemoryBudget.entrySize(key: "dying", value: 2)
        let alice = caches.purgeExpired(storage: nil, user: try UserID("alice"), now: later)
        #expect(alice.entries == 1 && alice.bytes == entrySize)
        let defaultStorage = caches.purgeExpired(storage: nil, user: nil, now: later)
        #expect(defaultStorage.entries == 2 && defaultStorage.bytes == 2 * entrySize)  // common and bob
        #expect(caches.purgeExpired(storage: "s", user: nil, now: later).entries == 2)
        #expect(caches.purgeExpired(storage: "s", user: nil, now: later).entries == 0)
        #expect(caches.purgeExpired(storage: nil, user: nil, now: Self.now).entries == 0)
        // What is left: t's common and the file's cache.
        let rest = caches.purgeExpired(now: later)
        #expect(rest.entries == 2)
        for (name, location) in locations {
            let cache = try caches.cache(name, in: location)
            #expect(cache.peek(10, fromHead: true, now: -.infinity).map(\.key) == ["live"], "\(name)")
        }
        var charged = 0
        for (name, location) in locations { charged += try caches.cache(name, in: location).charged }
        #expect(caches.budget.used == charged)
    }

    @Test func cachesShareTheRegistrysBudgetAndEachOwnersShare() throws {
        // A share of 4,000 bytes: a cache's fixed cost and a few dozen small entries.
        let caches = MemoryCaches(limits: .init(budgetBytes: 12_000, userBudgetBytes: 4_000))
        #expect(caches.budget.shareLimit == 4_000)
        #expect(MemoryCaches(limits: .init(budgetBytes: 8_000)).budget.shareLimit == 1_000)
        let common = try caches.create("one", in: Self.common, capacity: 1_000).cache
        let commonElsewhere = try caches.create("two", in: .common(storage: "s"), capacity: 1_000).cache
        let user = try caches.create("one", in: try Self.user("u"), capacity: 1_000).cache
        let userElsewhere = try caches.create("one", in: .user(try UserID("u"), storage: "s"), capacity: 1_000).cache
        for number in 0..<500 {
            try common.set("k\(number)", 1, now: Self.now)
            try commonElsewhere.set("k\(number)", 1, now: Self.now)
            try user.set("k\(number)", 1, now: Self.now)
            try userElsewhere.set("k\(number)", 1, now: Self.now)
        }
        // Every storage's common space is one owner, every storage of a user another.
        #expect(caches.budget.used(by: .common) == common.charged + commonElsewhere.charged)
        #expect(caches.budget.used(by: .common) <= 4_000)
        #expect(caches.budget.used(by: .user("u")) == user.charged + userElsewhere.charged)
        #expect(caches.budget.used(by: .user("u")) <= 4_000)
        #expect(caches.budget.evicted > 0)
        #expect(common.count > 0 && commonElsewhere.count > 0 && user.count > 0 && userElsewhere.count > 0)
        // Only an entry larger than a share is refused.
        #expect(Self.code { try user.set("big", .string(String(repeating: "x", count: 4_000)), now: Self.now) } == .memoryFull)
        #expect(caches.drop(storage: nil, user: nil) == 2)
        #expect(caches.drop(storage: "s", user: nil) == 2)
        #expect(caches.budget.used == 0)
        #expect(caches.budget.cacheCount == 0)
    }
}
