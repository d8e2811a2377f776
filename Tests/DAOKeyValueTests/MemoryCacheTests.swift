import DAOEngine
import DAOValue
import Foundation
import Synchronization
import Testing
@testable import DAOKeyValue

struct MemoryCacheTests {
    static let now = 1_000_000.0

    /// Keys from the most recently used, expired entries included.
    static func order(_ cache: MemoryCache) -> [String] {
        cache.peek(Int.max, fromHead: true, now: -.infinity).map(\.key)
    }

    static func cache(_ capacity: Int, _ keys: [String] = [], budget: MemoryBudget = MemoryBudget(bytes: 1 << 20)) throws -> MemoryCache {
        let cache = MemoryCache(capacity: capacity, budget: budget)
        for (index, key) in keys.enumerated() { try cache.set(key, .integer(Int64(index)), now: now) }
        return cache
    }

    static func size(_ key: String, _ value: Value) -> Int { MemoryBudget.entrySize(key: key, value: value) }

    // MARK: Order

    @Test func evictsTheLeastRecentlyUsedFromTheTail() throws {
        let cache = try Self.cache(3, ["a", "b", "c"])
        #expect(try cache.set("d", 4, now: Self.now) == 1)
        #expect(Self.order(cache) == ["d", "c", "b"])
        #expect(cache.get("a", now: Self.now) == nil)
        #expect(try cache.set("e", 5, now: Self.now) == 1)
        #expect(Self.order(cache) == ["e", "d", "c"])
        #expect(cache.count == 3)
    }

    @Test func replacingAKeyMovesItToTheHeadWithoutEvicting() throws {
        let cache = try Self.cache(3, ["a", "b", "c"])
        #expect(try cache.set("a", "new", now: Self.now) == 0)
        #expect(Self.order(cache) == ["a", "c", "b"])
        #expect(cache.get("a", now: Self.now) == "new")
        #expect(cache.count == 3)
    }

    @Test func getTouchesRecency() throws {
        let cache = try Self.cache(3, ["a", "b", "c"])
        #expect(cache.get("a", now: Self.now) == 0)
        #expect(Self.order(cache) == ["a", "c", "b"])
        try cache.set("d", 3, now: Self.now)
        #expect(Self.order(cache) == ["d", "a", "c"])
        #expect(cache.get("missing", now: Self.now) == nil)
        #expect(Self.order(cache) == ["d", "a", "c"])
    }

    @Test func existsAndPeekLeaveRecencyAlone() throws {
        let cache = try Self.cache(3, ["a", "b", "c"])
        #expect(cache.exists("a", now: Self.now))
        #expect(!cache.exists("z", now: Self.now))
        #expect(cache.peek(3, fromHead: false, now: Self.now).map(\.key) == ["a", "b", "c"])
        #expect(cache.peek(1, fromHead: false, now: Self.now).map(\.key) == ["a"])
        #expect(Self.order(cache) == ["c", "b", "a"])
        try cache.set("d", 3, now: Self.now)
        #expect(!cache.exists("a", now: Self.now))
        #expect(Self.order(cache) == ["d", "c", "b"])
    }

    @Test func peekReadsFromEitherEndUpToTheCount() throws {
        let cache = try Self.cache(10, ["a", "b", "c", "d"])
        #expect(cache.peek(2, fromHead: true, now: Self.now) == [
            MemoryEntry(key: "d", value: 3, expire: 0), MemoryEntry(key: "c", value: 2, expire: 0),
        ])
        #expect(cache.peek(2, fromHead: false, now: Self.now).map(\.key) == ["a", "b"])
        #expect(cache.peek(100, fromHead: true, now: Self.now).map(\.key) == ["d", "c", "b", "a"])
        #expect(cache.peek(0, fromHead: true, now: Self.now).isEmpty)
        #expect(cache.peek(-3, fromHead: false, now: Self.now).isEmpty)
    }

    @Test func resizeShrinkingEvictsTheLeastRecent() throws {
        let cache = try Self.cache(5, ["a", "b", "c", "d", "e"])
        _ = cache.get("a", now: Self.now)
        #expect(cache.resize(2) == 3)
        #expect(Self.order(cache) == ["a", "e"])
        #expect(cache.capacity == 2)
        #expect(cache.resize(10) == 0)
        #expect(cache.count == 2)
        try cache.set("f", 6, now: Self.now)
        try cache.set("g", 7, now: Self.now)
        #expect(cache.count == 4)
    }

    @Test func addStoresInOrderSoTheLastGivenIsMostRecent() throws {
        let cache = try Self.cache(3, ["x"])
        let evicted = try cache.add([(key: "a", value: 1), (key: "b", value: 2), (key: "a", value: 3)], now: Self.now)
        #expect(evicted == 0)
        #expect(Self.order(cache) == ["a", "b", "x"])
        #expect(cache.get("a", now: Self.now) == 3)
        #expect(try cache.add([(key: "c", value: 4), (key: "d", value: 5)], now: Self.now) == 2)
        #expect(Self.order(cache) == ["d", "c", "a"])
        // Entries added in a batch never expire.
        #expect(cache.peek(3, fromHead: true, now: .greatestFiniteMagnitude).allSatisfy { $0.expire == 0 })
        #expect(try cache.add([], now: Self.now) == 0)
    }

    @Test func addLongerThanTheCapacityKeepsItsLastEntries() throws {
        let cache = try Self.cache(2, ["x", "y"])
        let batch = (0..<5).map { (key: "k\($0)", value: Value.integer(Int64($0))) }
        #expect(try cache.add(batch, now: Self.now) == 5)
        #expect(Self.order(cache) == ["k4", "k3"])
    }

    // MARK: Null and expiry

    @Test func nullDeletesTheKey() throws {
        let cache = try Self.cache(5, ["a", "b"])
        #expect(try cache.set("a", .null, now: Self.now) == 0)
        #expect(Self.order(cache) == ["b"])
        #expect(try cache.set("absent", .null, now: Self.now) == 0)
        try cache.add([(key: "c", value: 1), (key: "b", value: .null)], now: Self.now)
        #expect(Self.order(cache) == ["c"])
    }

    @Test func expiredEntriesAnswerNothingAndGetRemovesThem() throws {
        let cache = try Self.cache(5, ["a"])
        try cache.set("e", "soon", expire: Self.now + 10, now: Self.now)
        #expect(cache.get("e", now: Self.now + 9.5) == "soon")
        #expect(cache.exists("e", now: Self.now + 9.5))
        // At the expiry itself the entry is gone.
        #expect(!cache.exists("e", now: Self.now + 10))
        #expect(cache.peek(10, fromHead: true, now: Self.now + 10).map(\.key) == ["a"])
        #expect(cache.count == 2)  // exists and peek do not remove
        #expect(cache.get("e", now: Self.now + 10) == nil)
        #expect(cache.count == 1)  // get does
        #expect(Self.order(cache) == ["a"])
    }

    @Test func anExpiryAtOrBeforeNowStoresNothingAndRemovesTheKey() throws {
        let cache = try Self.cache(5, ["a", "b"])
        let used = cache.budget.used
        #expect(try cache.set("a", "old", expire: Self.now - 1, now: Self.now) == 0)
        #expect(try cache.set("c", "never", expire: Self.now, now: Self.now) == 0)
        #expect(Self.order(cache) == ["b"])
        #expect(cache.budget.used == used - Self.size("a", 0))
    }

    @Test(arguments: [-1, -.infinity, .infinity, .nan] as [Double])
    func anExpiryThatIsNoTimestampIsRefused(expire: Double) throws {
        let cache = try Self.cache(5, ["a"])
        let error = #expect(throws: KeyValueError.self) { try cache.set("a", "x", expire: expire, now: Self.now) }
        #expect(error?.code == .invalidValue)
        #expect(cache.get("a", now: Self.now) == 0)
    }

    @Test func purgeRemovesOnlyExpiredEntriesAndCountsTheirBytes() throws {
        let cache = try Self.cache(10, ["a"])
        try cache.set("e1", "one", expire: Self.now + 1, now: Self.now)
        try cache.set("e2", "two", expire: Self.now + 2, now: Self.now)
        try cache.set("e3", "three", expire: Self.now + 3, now: Self.now)
        let before = cache.budget.used
        let purged = cache.purgeExpired(now: Self.now + 2)
        #expect(purged.entries == 2)
        #expect(purged.bytes == Self.size("e1", "one") + Self.size("e2", "two"))
        #expect(cache.budget.used == before - purged.bytes)
        #expect(Self.order(cache) == ["e3", "a"])
        let again = cache.purgeExpired(now: Self.now + 2)
        #expect(again.entries == 0 && again.bytes == 0)
        #expect(cache.invariantViolation() == nil)
    }

    @Test func removalsCountExpiredEntriesNotNoticedYet() throws {
        let cache = try Self.cache(10)
        try cache.set("k1", 1, expire: Self.now + 1, now: Self.now)
        try cache.set("k2", 2, expire: Self.now + 1, now: Self.now)
        #expect(!cache.exists("k1", now: Self.now + 5))
        #expect(cache.remove("k1"))
        #expect(cache.removeAll() == 1)
    }

    @Test func anExpiredTailIsEvictedLikeAnyOther() throws {
        let cache = try Self.cache(2)
        try cache.set("old", 1, expire: Self.now + 1, now: Self.now)
        try cache.set("b", 2, now: Self.now)
        // "old" has expired but is still held: it is the tail, so it goes.
        #expect(try cache.set("c", 3, now: Self.now + 5) == 1)
        #expect(Self.order(cache) == ["c", "b"])
    }

    // MARK: Removals

    @Test func removesByKeyPrefixSuffixKeySetAndRegex() throws {
        let keys = ["user/1", "user/2", "user/10", "img.png", "img.jpg", "doc.png", "other"]
        let cache = try Self.cache(20, keys)
        #expect(cache.remove("other"))
        #expect(!cache.remove("other"))
        #expect(cache.remove(prefix: "user/1") == 2)
        #expect(cache.remove(suffix: ".png") == 2)
        #expect(Self.order(cache) == ["img.jpg", "user/2"])
        #expect(cache.remove(keys: ["user/2", "user/2", "nope"]) == 1)
        try cache.set("a1", 1, now: Self.now)
        try cache.set("a22", 2, now: Self.now)
        try cache.set("xa1", 3, now: Self.now)
        // Whole-key match: "xa1" contains a match but is not one.
        #expect(try cache.remove(matching: try CallerRegex("a[0-9]+")) == 2)
        #expect(Self.order(cache) == ["xa1", "img.jpg"])
        #expect(cache.removeAll() == 2)
        #expect(cache.count == 0)
        #expect(cache.budget.used == 0)
    }

    /// A pattern whose matching over the keys passes the budget removes
    /// nothing, and the cache answers other calls while it is matched.
    @Test func aRegexRemovalPastItsBudgetRemovesNothingAndHoldsNoOtherCall() throws {
        var random = SplitMix64(seed: 9)
        let keys = (0..<300).map { _ in String((0..<1024).map { _ in random.next() % 2 == 0 ? "a" : "b" }) }
        let cache = try Self.cache(400, keys, budget: MemoryBudget(bytes: 8 << 20))
        let regex = try CallerRegex("(?:.*a[ab]{10}){30}")
        let reads = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let reader = Thread {
            while !done.load(ordering: .acquiring) {
                _ = cache.exists(keys[0], now: Self.now)
                reads.add(1, ordering: .relaxed)
            }
        }
        reader.start()
        let started = ContinuousClock.now
        #expect(throws: EngineError.self) { try cache.remove(matching: regex) }
        let elapsed = ContinuousClock.now - started
        done.store(true, ordering: .releasing)
        #expect(cache.count == 300)
        #expect(elapsed < .seconds(1), "\(elapsed)")
        // While the keys were matched, the cache went on answering.
        #expect(reads.load(ordering: .relaxed) > 1_000)
    }

    // MARK: Budget

    @Test func entrySizeFollowsTheDocumentedEstimate() {
        let node = MemoryBudget.valueNodeOverhead
        let entry = MemoryBudget.entryOverhead
        #expect(MemoryBudget.estimatedSize(of: .null) == node)
        #expect(MemoryBudget.estimatedSize(of: true) == node)
        #expect(MemoryBudget.estimatedSize(of: 42) == node + 8)
        #expect(MemoryBudget.estimatedSize(of: 4.5) == node + 8)
        #expect(MemoryBudget.estimatedSize(of: "héllo") == node + 6)
        #expect(MemoryBudget.estimatedSize(of: .blob([1, 2, 3])) == node + 3)
        #expect(MemoryBudget.estimatedSize(of: [1, "ab"]) == node + (node + 8) + (node + 2))
        #expect(MemoryBudget.estimatedSize(of: ["key": [true]]) == node + 3 + 16 + (node + node))
        #expect(MemoryBudget.entrySize(key: "ключ", value: 1) == entry + 8 + node + 8)
    }

    @Test func theEstimateCoversTheLayoutItNames() {
        #expect(MemoryLayout<Value>.stride <= MemoryBudget.valueNodeOverhead)
        // The list's storage is counted as reserved: the array has the slots counted (the allocator may round up,
        // to a page for a large one), the index room for as many keys, and each slot is counted for a node and at least
        // one index bucket.
        var list = LRUList<MemoryCache.Slot>()
        for number in 0..<5_000 {
            list.insertAtHead("key\(number)", MemoryCache.Slot(value: .integer(1), expire: 0, size: 0, tick: 0))
            let stride = MemoryLayout<LRUList<MemoryCache.Slot>.Node>.stride
            #expect(list.nodes.capacity >= list.slots && (list.nodes.capacity - list.slots) * stride <= 4096,
                    "\(number): \(list.nodes.capacity) nodes for \(list.slots) slots")
        }
        #expect(list.invariantViolation() == nil)
        let bucket = MemoryLayout<String>.stride + MemoryLayout<Int>.stride
        #expect(list.storageBytes >= list.slots * (MemoryLayout<LRUList<MemoryCache.Slot>.Node>.stride + bucket))
        #expect(list.slots < 2 * list.count)
    }

    @Test func onlyAnEntryLargerThanTheShareIs507AndChangesNothing() throws {
        let budget = MemoryBudget(bytes: 4_000)
        let cache = try Self.cache(5, ["a", "b"], budget: budget)
        let used = budget.used
        let error = #expect(throws: KeyValueError.self) { try cache.set("c", .string(String(repeating: "x", count: 4_000)), now: Self.now) }
        #expect(error?.code == .memoryFull)
        let again = #expect(throws: KeyValueError.self) { try cache.set("a", .string(String(repeating: "x", count: 4_000)), now: Self.now) }
        #expect(again?.code == .memoryFull)
        let batch = #expect(throws: KeyValueError.self) {
            try cache.add([(key: "n", value: 1), (key: "big", value: .string(String(repeating: "x", count: 4_000)))], now: Self.now)
        }
        #expect(batch?.code == .memoryFull)
        #expect(Self.order(cache) == ["b", "a"])
        #expect(cache.get("a", now: Self.now) == 0)
        #expect(budget.used == used)
        #expect(cache.invariantViolation() == nil)
    }

    @Test func aFullBudgetEvictsTheLeastRecentlyUsedInsteadOfRefusing() throws {
        let budget = MemoryBudget(bytes: 1_500)
        let cache = MemoryCache(capacity: 100, budget: budget)
        for number in 0..<200 {
            try cache.set("k\(number)", .string("value \(number)"), now: Self.now)
            #expect(budget.used <= budget.limit)
            #expect(budget.used == cache.charged)
        }
        let held = Self.order(cache)
        #expect(held.count > 1 && held.count < 100)
        #expect(held == (0..<held.count).map { "k\(199 - $0)" })
        #expect(budget.evicted == 200 - held.count)
        #expect(cache.invariantViolation() == nil)
    }

    @Test func cachesOfOneOwnerEvictTheOldestOfThemAll() throws {
        let budget = MemoryBudget(bytes: 100_000, shareBytes: 2_000)
        let first = MemoryCache(capacity: 100, budget: budget, owner: .user("ann"))
        let second = MemoryCache(capacity: 100, budget: budget, owner: .user("ann"))
        let other = MemoryCache(capacity: 100, budget: budget, owner: .user("bob"))
        try other.set("bob's", 1, now: Self.now)
        try first.set("oldest", 1, now: Self.now)
        try second.set("older", 1, now: Self.now)
        try first.set("old", 1, now: Self.now)
        _ = first.get("oldest", now: Self.now)
        var number = 0
        while second.count + first.count == 3 + number {
            try second.set("new\(number)", 1, now: Self.now)
            number += 1
        }
        // The first to go is the least recently used of ann's: "older" in the second cache, not "oldest",
        // which a get touched; bob's entry stays.
        #expect(second.get("older", now: Self.now) == nil)
        #expect(first.get("oldest", now: Self.now) == 1 && first.get("old", now: Self.now) == 1)
        #expect(other.get("bob's", now: Self.now) == 1)
        #expect(budget.used(by: .user("ann")) <= 2_000)
        #expect(budget.used(by: .user("ann")) == first.charged + second.charged)
    }

    @Test func aFullBudgetEvictsTheWritersOwnFirstThenTheServers() throws {
        let budget = MemoryBudget(bytes: 6_000, shareBytes: 4_000)
        let ann = MemoryCache(capacity: 1_000, budget: budget, owner: .user("ann"))
        let bob = MemoryCache(capacity: 1_000, budget: budget, owner: .user("bob"))
        let carol = MemoryCache(capacity: 1_000, budget: budget, owner: .user("carol"))
        for number in 0..<300 { try ann.set("a\(number)", 1, now: Self.now) }
        #expect(budget.used(by: .user("ann")) <= 4_000)
        for number in 0..<300 { try bob.set("b\(number)", 1, now: Self.now) }
        #expect(budget.used <= budget.limit)
        let annHeld = ann.count
        #expect(annHeld > 10 && bob.count > 0)
        // Full: bob's writes evict bob's own oldest, not ann's (older still).
        for number in 300..<350 { try bob.set("b\(number)", 1, now: Self.now) }
        #expect(ann.count == annHeld)
        #expect(bob.get("b349", now: Self.now) == 1)
        // carol holds nothing: her write takes from the server's least recently used, ann's (her next ones
        // would take her own first).
        try carol.set("c0", 1, now: Self.now)
        #expect(carol.count == 1)
        #expect(ann.count < annHeld)
        #expect(ann.get("a299", now: Self.now) == 1)
        #expect(budget.used <= budget.limit)
        #expect(budget.used == ann.charged + bob.charged + carol.charged)
    }

    @Test(arguments: ["prefix", "suffix", "regex", "keys", "one by one", "all", "resize", "purge", "eviction"])
    func emptyingACacheGivesEverythingBack(_ way: String) throws {
        let budget = MemoryBudget(bytes: 64 << 20)
        let cache = MemoryCache(capacity: 20_000, budget: budget)
        let keys = (0..<20_000).map { "p\($0)x" }
        try cache.add(keys.map { (key: $0, value: Value.integer(1)) }, now: Self.now)
        if way == "purge" { for key in keys { try cache.set(key, 1, expire: Self.now + 1, now: Self.now) } }
        let full = budget.used
        #expect(full >= cache.bytes + LRUList<MemoryCache.Slot>.storageBytes(slots: 20_000))
        switch way {
        case "prefix": cache.remove(prefix: "p")
        case "suffix": cache.remove(suffix: "x")
        case "regex": try cache.remove(matching: try CallerRegex("p[0-9]+x"))
        case "keys": cache.remove(keys: keys)
        case "one by one": for key in keys { cache.remove(key) }
        case "all": cache.removeAll()
        case "resize":
            cache.resize(1)
        case "purge": cache.purgeExpired(now: Self.now + 1)
        default:
            // The owner's writes to another cache, past its share, evict all of this one (its oldest).
            let tight = MemoryBudget(bytes: 64 << 20, shareBytes: full)
            let victim = MemoryCache(capacity: 20_000, budget: tight, owner: .user("ann"))
            try victim.add(keys.map { (key: $0, value: Value.integer(1)) }, now: Self.now)
            let writer = MemoryCache(capacity: 100_000, budget: tight, owner: .user("ann"))
            for key in keys { try writer.set(key + "w", .integer(1), now: Self.now) }
            #expect(victim.count == 0)
            #expect(victim.charged == 0)
            #expect(tight.used == writer.charged)
            #expect(victim.invariantViolation() == nil && writer.invariantViolation() == nil)
            cache.removeAll()
        }
        #expect(cache.charged == budget.used)
        if way == "resize" {
            #expect(cache.count == 1 && budget.used <= 1_000)
        } else {
            #expect(cache.count == 0 && budget.used == 0)
        }
        #expect(cache.invariantViolation() == nil)
        // Emptied slowly, one removal at a time, the storage shrinks as it goes.
        try cache.add(keys.map { (key: $0, value: Value.integer(1)) }, now: Self.now)
        for key in keys.dropLast(10) { cache.remove(key) }
        #expect(budget.used < 10_000)
        #expect(cache.invariantViolation() == nil)
    }

    @Test func everyRemovalReleasesItsBytes() throws {
        let budget = MemoryBudget(bytes: 1 << 20)
        let cache = MemoryCache(capacity: 4, budget: budget)
        func expectUsed(_ entries: [(String, Value)], _ comment: Comment) {
            #expect(cache.bytes == entries.reduce(0) { $0 + Self.size($1.0, $1.1) }, comment)
            #expect(budget.used == cache.charged, comment)
            if entries.isEmpty { #expect(budget.used == 0, comment) }
            #expect(cache.invariantViolation() == nil, comment)
        }
        try cache.set("a", "12345", now: Self.now)
        expectUsed([("a", "12345")], "set")
        try cache.set("a", "1", now: Self.now)
        expectUsed([("a", "1")], "replaced by a smaller value")
        try cache.set("a", "123456789", now: Self.now)
        expectUsed([("a", "123456789")], "replaced by a bigger value")
        try cache.set("a", .null, now: Self.now)
        expectUsed([], "null")
        try cache.set("b", 1, now: Self.now)
        try cache.set("b", 1, expire: Self.now - 1, now: Self.now)
        expectUsed([], "expiry in the past")
        try cache.add([(key: "p1", value: 1), (key: "p2", value: 2), (key: "s.x", value: 3), (key: "r9", value: 4)], now: Self.now)
        expectUsed([("p1", 1), ("p2", 2), ("s.x", 3), ("r9", 4)], "add")
        try cache.set("e", "evicting", now: Self.now)
        expectUsed([("p2", 2), ("s.x", 3), ("r9", 4), ("e", "evicting")], "eviction")
        cache.remove(prefix: "p")
        expectUsed([("s.x", 3), ("r9", 4), ("e", "evicting")], "prefix")
        cache.remove(suffix: ".x")
        expectUsed([("r9", 4), ("e", "evicting")], "suffix")
        try cache.remove(matching: try CallerRegex("r[0-9]"))
        expectUsed([("e", "evicting")], "regex")
        cache.remove(keys: ["e"])
        expectUsed([], "keys")
        try cache.set("t", 1, expire: Self.now + 1, now: Self.now)
        _ = cache.get("t", now: Self.now + 1)
        expectUsed([], "get of an expired entry")
        try cache.set("t", 1, expire: Self.now + 1, now: Self.now)
        cache.purgeExpired(now: Self.now + 1)
        expectUsed([], "purge")
        try cache.add([(key: "r1", value: 1), (key: "r2", value: 2), (key: "r3", value: 3)], now: Self.now)
        cache.resize(1)
        expectUsed([("r3", 3)], "resize")
        cache.remove("r3")
        expectUsed([], "remove")
        try cache.set("z", 1, now: Self.now)
        cache.removeAll()
        expectUsed([], "remove all")
        try cache.set("z", 1, now: Self.now)
        cache.close()
        expectUsed([], "close")
    }

    @Test func aCacheLetGoGivesItsBytesBack() throws {
        let budget = MemoryBudget(bytes: 1 << 20)
        do {
            let cache = MemoryCache(capacity: 4, budget: budget)
            try cache.set("a", "value", now: Self.now)
            #expect(budget.used > 0)
        }
        #expect(budget.used == 0)
    }

    @Test func aClosedCacheHoldsNothingAndRefusesWrites() throws {
        let cache = try Self.cache(4, ["a"])
        cache.close()
        #expect(cache.get("a", now: Self.now) == nil)
        let error = #expect(throws: KeyValueError.self) { try cache.set("b", 1, now: Self.now) }
        #expect(error?.code == .unknownCache)
        let batchError = #expect(throws: KeyValueError.self) { try cache.add([(key: "b", value: 1)], now: Self.now) }
        #expect(batchError?.code == .unknownCache)
        #expect(cache.count == 0)
        #expect(cache.budget.used == 0)
    }

    @Test func budgetReservesOnlyWithinItsLimit() {
        let budget = MemoryBudget(bytes: 100)
        #expect(budget.reserve(60))
        #expect(!budget.reserve(41))
        #expect(budget.used == 60)
        #expect(budget.reserve(40))
        #expect(budget.available == 0)
        #expect(!budget.reserve(1))
        budget.release(100)
        #expect(budget.used == 0)
        #expect(MemoryBudget(bytes: -5).limit == 0)
    }
}
