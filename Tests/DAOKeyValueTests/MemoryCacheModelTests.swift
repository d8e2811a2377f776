import DAOEngine
import DAOValue
import Testing
@testable import DAOKeyValue

/// What the memory cache tests share, in a namespace of their own.
enum MemoryCacheSupport {
    /// The obviously correct LRU cache the real one is held to: an array of
    /// entries, most recent first, every operation a linear scan.
    struct ReferenceLRU {
        struct Entry: Equatable {
            var key: String
            var value: Value
            var expire: Double
            var size: Int
        }

        var entries: [Entry] = []
        var capacity: Int

        /// What a full budget's eviction leaves: the `count` most recently used.
        mutating func truncate(to count: Int) {
            entries.removeLast(max(0, entries.count - count))
        }

        var bytes: Int { entries.reduce(0) { $0 + $1.size } }

        static func expired(_ entry: Entry, at now: Double) -> Bool { entry.expire != 0 && entry.expire <= now }

        /// The cache's answer to a write: what it returns, or the code it throws.
        enum Outcome: Equatable {
            case evicted(Int)
            case failed(KeyValueError.Code)
        }

        mutating func set(_ key: String, _ value: Value, expire: Double, now: Double) -> Outcome {
            if value.isNull || (expire != 0 && expire <= now) {
                entries.removeAll { $0.key == key }
                return .evicted(0)
            }
            // The budget never refuses: past it, the cache evicts (`truncate`).
            return .evicted(store(key, value, expire: expire))
        }

        mutating func add(_ batch: [(key: String, value: Value)]) -> Outcome {
            var evicted = 0
            for (key, value) in batch {
                if value.isNull { entries.removeAll { $0.key == key } } else { evicted += store(key, value, expire: 0) }
            }
            return .evicted(evicted)
        }

        private mutating func store(_ key: String, _ value: Value, expire: Double) -> Int {
            entries.removeAll { $0.key == key }
            entries.insert(Entry(key: key, value: value, expire: expire, size: MemoryBudget.entrySize(key: key, value: value)), at: 0)
            return trim()
        }

        private mutating func trim() -> Int {
            var evicted = 0
            while entries.count > capacity {
                entries.removeLast()
                evicted += 1
            }
            return evicted
        }

        mutating func get(_ key: String, now: Double) -> Value? {
            guard let index = entries.firstIndex(where: { $0.key == key }) else { return nil }
            let entry = entries.remove(at: index)
            if Self.expired(entry, at: now) { return nil }
            entries.insert(entry, at: 0)
            return entry.value
        }

        func exists(_ key: String, now: Double) -> Bool {
            entries.contains { $0.key == key && !Self.expired($0, at: now) }
        }

        func peek(_ count: Int, fromHead: Bool, now: Double) -> [MemoryEntry] {
            let live = entries.filter { !Self.expired($0, at: now) }.map { MemoryEntry(key: $0.key, value: $0.value, expire: $0.expire) }
            return Array((fromHead ? live : live.reversed()).prefix(max(0, count)))
        }

        mutating func remove(where matches: (String) -> Bool) -> Int {
            let before = entries.count
            entries.removeAll { matches($0.key) }
            return before - entries.count
        }

        mutating func resize(_ capacity: Int) -> Int {
            self.capacity = capacity
            return trim()
        }

        mutating func purge(now: Double) -> (entries: Int, bytes: Int) {
            let expired = entries.filter { Self.expired($0, at: now) }
            entries.removeAll { Self.expired($0, at: now) }
            return (expired.count, expired.reduce(0) { $0 + $1.size })
        }
    }

    /// Regular expressions for `remove(matching:)` with what each means, written
    /// in Swift independently of the RE2 matcher.
    static let modelRegexes: [(pattern: String, matches: @Sendable (String) -> Bool)] = [
        ("k1.*", { $0.hasPrefix("k1") }),
        (".*7", { $0.hasSuffix("7") }),
        ("k[0-4]", { $0.count == 2 && $0.hasPrefix("k") && "01234".contains($0.last ?? "x") }),
        ("(a|k)2[0-9]", { $0.count == 3 && ($0.hasPrefix("a2") || $0.hasPrefix("k2")) }),
        ("a.", { $0.count == 2 && $0.hasPrefix("a") }),
        ("", { $0.isEmpty }),
    ]
}

struct MemoryCacheModelTests {
    typealias ReferenceLRU = MemoryCacheSupport.ReferenceLRU

    /// Keys from a small space, so that operations meet the same keys often.
    static func key(_ random: inout SplitMix64) -> String {
        Int.random(in: 0..<5, using: &random) == 0
            ? "a\(Int.random(in: 0..<10, using: &random))" : "k\(Int.random(in: 0..<40, using: &random))"
    }

    static func value(_ random: inout SplitMix64, depth: Int = 0) -> Value {
        switch Int.random(in: 0..<(depth > 1 ? 7 : 9), using: &random) {
        case 0: .null
        case 1: .bool(Bool.random(using: &random))
        case 2: .integer(Int64.random(in: -1000...1000, using: &random))
        case 3: .double(Double(Int.random(in: 0...1000, using: &random)) / 8)
        case 4, 5: .string(String(repeating: "x", count: Int.random(in: 0...60, using: &random)))
        case 6: .blob((0..<Int.random(in: 0...40, using: &random)).map { UInt8(truncatingIfNeeded: $0) })
        case 7: .array((0..<Int.random(in: 0...3, using: &random)).map { _ in value(&random, depth: depth + 1) })
        default:
            .object(OrderedObject(uniqueKeysWithValues: (0..<Int.random(in: 0...3, using: &random)).map { ("m\($0)", value(&random, depth: depth + 1)) }))
        }
    }

    /// Runs `steps` random operations on a cache and the reference model,
    /// comparing every answer, the count, the budget and the whole order after
    /// each one.
    static func run(seed: UInt64, steps: Int, budgetBytes: Int) throws {
        var random = SplitMix64(seed: seed)
        let initialCapacity = Int.random(in: 1...20, using: &random)
        let budget = MemoryBudget(bytes: budgetBytes)
        let cache = MemoryCache(capacity: initialCapacity, budget: budget)
        var model = ReferenceLRU(capacity: initialCapacity)
        var now = 1_000.0
        let tight = budgetBytes < Int.max

        for step in 0..<steps {
            let context = Comment(rawValue: "seed \(seed), step \(step)")
            let operation = Int.random(in: 0..<100, using: &random)
            switch operation {
            case 0..<25:
                let key = key(&random)
                let value = value(&random)
                let expire: Double = switch Int.random(in: 0..<4, using: &random) {
                case 0, 1: 0
                case 2: now + Double(Int.random(in: 1...8, using: &random))
                default: now - Double(Int.random(in: 0...2, using: &random))
                }
                let expected = model.set(key, value, expire: expire, now: now)
                let actual: ReferenceLRU.Outcome
                do throws(KeyValueError) { actual = .evicted(try cache.set(key, value, expire: expire, now: now)) } catch { actual = .failed(error.code) }
                // Under a tight budget, the budget's evictions come before the capacity's, which then has less to do.
                if tight { #expect(actual != .failed(.memoryFull), context) } else { #expect(actual == expected, context) }
            case 25..<45:
                let key = key(&random)
                #expect(cache.get(key, now: now) == model.get(key, now: now), context)
            case 45..<52:
                let key = key(&random)
                #expect(cache.exists(key, now: now) == model.exists(key, now: now), context)
            case 52..<58:
                let count = Int.random(in: -1...12, using: &random)
                let fromHead = Bool.random(using: &random)
                #expect(cache.peek(count, fromHead: fromHead, now: now) == model.peek(count, fromHead: fromHead, now: now), context)
            case 58..<64:
                let key = key(&random)
                #expect(cache.remove(key) == (model.remove { $0 == key } == 1), context)
            case 64..<70:
                let batch = (0..<Int.random(in: 0...8, using: &random)).map { _ in (key: key(&random), value: value(&random)) }
                let expected = model.add(batch)
                let actual: ReferenceLRU.Outcome
                do throws(KeyValueError) { actual = .evicted(try cache.add(batch, now: now)) } catch { actual = .failed(error.code) }
                if tight { #expect(actual != .failed(.memoryFull), context) } else { #expect(actual == expected, context) }
            case 70..<73:
                let prefix = ["k1", "a", "k", "k3", "z", ""].randomElement(using: &random) ?? ""
                #expect(cache.remove(prefix: prefix) == model.remove { $0.hasPrefix(prefix) }, context)
            case 73..<76:
                let suffix = ["1", "7", "a3", "k", ""].randomElement(using: &random) ?? ""
                #expect(cache.remove(suffix: suffix) == model.remove { $0.hasSuffix(suffix) }, context)
            case 76..<79:
                let keys = (0..<Int.random(in: 0...5, using: &random)).map { _ in key(&random) }
                #expect(cache.remove(keys: keys) == model.remove { keys.contains($0) }, context)
            case 79..<81:
                let regex = MemoryCacheSupport.modelRegexes[Int.random(in: 0..<MemoryCacheSupport.modelRegexes.count, using: &random)]
                #expect(try cache.remove(matching: try CallerRegex(regex.pattern)) == model.remove(where: regex.matches), context)
            case 81..<85:
                let capacity = Int.random(in: 1...24, using: &random)
                #expect(cache.resize(capacity) == model.resize(capacity), context)
            case 85..<88:
                let purged = cache.purgeExpired(now: now)
                let expected = model.purge(now: now)
                #expect(purged.entries == expected.entries && purged.bytes == expected.bytes, context)
            case 88:
                #expect(cache.removeAll() == model.remove { _ in true }, context)
            default:
                now += Double(Int.random(in: 0...3, using: &random))
            }

            // The whole state: order (expired entries included), count, bytes. A full budget evicts from the
            // tail: what the cache holds is the model's most recent entries.
            let everything = cache.peek(Int.max, fromHead: true, now: -.infinity)
            if tight {
                #expect(everything.count <= model.entries.count, context)
                model.truncate(to: everything.count)
                #expect(budget.used <= budgetBytes, context)
            }
            #expect(everything == model.entries.map { MemoryEntry(key: $0.key, value: $0.value, expire: $0.expire) }, context)
            #expect(cache.count == model.entries.count, context)
            #expect(cache.capacity == model.capacity, context)
            #expect(cache.bytes == model.bytes && budget.used == cache.charged, context)
            let problem = cache.invariantViolation()
            #expect(problem == nil, context)
            if problem != nil || everything.count != model.entries.count { return }
        }
        if tight {
            // A tight budget is there to be hit: make sure it was.
            #expect(budget.evicted > 0, "seed \(seed): the budget never evicted")
        }
        cache.removeAll()
        #expect(budget.used == 0)
    }

    @Test("Random operations agree with the reference LRU", arguments: [1, 2, 3, 4] as [UInt64])
    func agreesWithReference(seed: UInt64) throws {
        try Self.run(seed: seed, steps: 4_000, budgetBytes: Int.max)
    }

    @Test("Random operations agree with the reference LRU under a tight budget", arguments: [11, 12, 13] as [UInt64])
    func agreesWithReferenceUnderTightBudget(seed: UInt64) throws {
        // About a dozen typical entries: writes evict often.
        try Self.run(seed: seed, steps: 4_000, budgetBytes: 1_500)
    }
}
