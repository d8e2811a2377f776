import DAOEngine
import DAOValue
import Dispatch
import Synchronization
import Testing
@testable import DAOKeyValue

struct MemoryCacheConcurrencyTests {

    static let threads = 8

    @Test func manyThreadsOnOneCacheKeepItsInvariants() throws {
        let budget = MemoryBudget(bytes: 40_000)
        let cache = MemoryCache(capacity: 64, budget: budget)
        let regex = try CallerRegex("k1[0-9]")
        let hits = Atomic<Int>(0)
        let overCapacity = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            var random = SplitMix64(seed: UInt64(thread) &+ 100)
            var now = 1_000.0
            for _ in 0..<20_000 {
                let key = "k\(Int.random(in: 0..<150, using: &random))"
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<30:
                    let expire = Bool.random(using: &random) ? 0 : now + Double(Int.random(in: -1...5, using: &random))
                    let value: Value = .string(String(repeating: "v", count: Int.random(in: 0...200, using: &random)))
                    _ = try? cache.set(key, value, expire: expire, now: now)
                case 30..<70:
                    if cache.get(key, now: now) != nil { hits.add(1, ordering: .relaxed) }
                case 70..<78:
                    _ = cache.exists(key, now: now)
                case 78..<83:
                    if cache.peek(100, fromHead: Bool.random(using: &random), now: now).count > 64 {
                        overCapacity.add(1, ordering: .relaxed)
                    }
                case 83..<88:
                    cache.remove(key)
                case 88..<92:
                    _ = try? cache.add((0..<4).map { (key: "k\($0 + thread * 10)", value: Value.integer(Int64($0))) }, now: now)
                case 92..<94:
                    cache.remove(keys: [key, "k1", "k2"])
                case 94:
                    cache.remove(prefix: "k9")
                case 95:
                    _ = try? cache.remove(matching: regex)
                case 96:
                    cache.resize(Int.random(in: 32...64, using: &random))
                case 97:
                    cache.purgeExpired(now: now)
                default:
                    now += 1
                }
                if cache.count > 64 { overCapacity.add(1, ordering: .relaxed) }
            }
        }
        #expect(cache.invariantViolation() == nil)
        #expect(overCapacity.load(ordering: .relaxed) == 0)
        #expect(cache.count <= cache.capacity)
        #expect(hits.load(ordering: .relaxed) > 0)
        #expect(budget.used == cache.charged)
        #expect(budget.used <= budget.limit)
        cache.removeAll()
        #expect(budget.used == 0)
    }

    @Test func manyThreadsOnTheRegistryLoseNoBytes() throws {
        let caches = MemoryCaches(limits: .init(maximumCachesPerLocation: 4, budgetBytes: 100_000))
        let users = try (0..<3).map { try UserID("user\($0)") }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            var random = SplitMix64(seed: UInt64(thread) &+ 500)
            for _ in 0..<5_000 {
                let location: DatabaseLocation = switch Int.random(in: 0..<4, using: &random) {
                case 0: .common(storage: nil)
                case 1: .common(storage: "s")
                default: .user(users[Int.random(in: 0..<users.count, using: &random)], storage: Bool.random(using: &random) ? nil : "s")
                }
                let name = "c\(Int.random(in: 0..<6, using: &random))"
                do throws(KeyValueError) {
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<10:
                        _ = try caches.create(name, in: location, capacity: Int.random(in: 1...20, using: &random))
                    case 10..<50:
                        try caches.cache(name, in: location).set("k\(Int.random(in: 0..<30, using: &random))", "value", now: 1)
                    case 50..<85:
                        _ = try caches.cache(name, in: location).get("k\(Int.random(in: 0..<30, using: &random))", now: 1)
                    case 85..<92:
                        caches.delete(name, in: location)
                    case 92..<95:
                        caches.drop(storage: location.storage, user: nil)
                    case 95..<98:
                        caches.purgeExpired(storage: location.storage, user: nil, now: 2)
                    default:
                        if caches.list(in: location).count > 4 { failures.withLock { $0.append("more than 4 caches listed") } }
                    }
                } catch {
                    // A cache deleted or never created: the races this test is after.
                    if error.code != .unknownCache && error.code != .limitExceeded {
                        failures.withLock { $0.append(error.description) }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let held = [DatabaseLocation.common(storage: nil), .common(storage: "s")] + users.flatMap { [.user($0, storage: nil), .user($0, storage: "s")] }
        var bytes = 0
        for location in held {
            for listed in caches.list(in: location) {
                let cache = try caches.cache(listed.name, in: location)
                #expect(cache.invariantViolation() == nil)
                bytes += cache.charged
            }
        }
        #expect(caches.budget.used == bytes)
        caches.drop(storage: nil, user: nil)
        caches.drop(storage: "s", user: nil)
        #expect(caches.budget.used == 0)
    }
}
