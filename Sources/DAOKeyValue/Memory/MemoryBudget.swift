import DAOValue
import Synchronization

/// Whose bytes a memory cache holds, for the per-user share: a user (all
/// their storages together), or the common spaces (every storage's common
/// space together, one more "user" with a share of its own).
public enum MemoryOwner: Hashable, Sendable {
    case common
    case user(String)
}

/// The bytes all memory caches of a process may hold together, each owner's
/// share of them, and the eviction that makes room when a write would pass
/// either.
///
/// The reference's `APLRUMemoryCache` bounds entries only by count and
/// empties caches on the system's memory warning (`handleMemoryWarning`); a
/// server has no such warning, so every cache reserves what it holds here
/// before it holds it — its entries, the storage of its list and index, and
/// a fixed cost per cache — and gives the bytes back when they leave. When a
/// write does not fit, the least recently used entries leave instead, as
/// Redis's `allkeys-lru` does at `maxmemory`: past the owner's share, the
/// owner's own; past the whole budget, the writer's own first, then the
/// server's (of up to `evictionSample` caches picked at random, the one whose
/// least recently used entry is oldest gives it up: Redis's sampled LRU).
/// Only a value larger than a share cannot be stored.
///
/// Counting is lock-free (atomic counters checked and bumped with
/// compare-and-swap, so that no total passes its limit); the list of caches
/// that eviction walks has a lock of its own, never held while a cache's lock
/// is taken.
public final class MemoryBudget: Sendable {
    /// The most bytes the caches may hold together.
    public let limit: Int
    /// The most bytes one owner's caches may hold together.
    public let shareLimit: Int
    private let counter = Atomic<Int>(0)
    private let ticks = Atomic<UInt64>(0)
    private let evictions = Atomic<Int>(0)
    private let members = Mutex(Members())

    /// How many caches a server-wide eviction compares.
    static let evictionSample = 16

    /// A budget of `bytes` (negative counts as zero), of which one owner holds
    /// at most `shareBytes` (default: all of it; at most the budget).
    public init(bytes: Int, shareBytes: Int? = nil) {
        limit = max(0, bytes)
        shareLimit = min(limit, max(0, shareBytes ?? limit))
    }

    /// The bytes reserved now.
    public var used: Int { counter.load(ordering: .relaxed) }

    /// The bytes still free.
    public var available: Int { limit - used }

    /// The entries evicted so far to make room in the budget or a share
    /// (not those a cache's capacity evicted).
    public var evicted: Int { evictions.load(ordering: .relaxed) }

    /// The caches counted here now.
    public var cacheCount: Int { members.withLock { $0.all.count } }

    /// The bytes `owner`'s caches hold now.
    public func used(by owner: MemoryOwner) -> Int {
        members.withLock { $0.owners[owner]?.account.used ?? 0 }
    }

    /// Reserves `bytes` if they fit under the limit; false, reserving
    /// nothing, when they do not.
    public func reserve(_ bytes: Int) -> Bool {
        Self.reserve(bytes, in: counter, within: limit)
    }

    /// Gives back bytes reserved before.
    public func release(_ bytes: Int) {
        precondition(bytes >= 0, "MemoryBudget: releasing \(bytes) bytes")
        let before = counter.subtract(bytes, ordering: .relaxed).oldValue
        assert(before >= bytes, "MemoryBudget: released \(bytes) bytes of \(before) reserved")
    }

    /// A stamp of recency, larger than every one given before: what lets
    /// eviction compare the least recently used entries of different caches.
    func nextTick() -> UInt64 {
        ticks.wrappingAdd(1, ordering: .relaxed).newValue
    }

    private static func reserve(_ bytes: Int, in counter: borrowing Atomic<Int>, within limit: Int) -> Bool {
        precondition(bytes >= 0, "MemoryBudget: reserving \(bytes) bytes")
        var current = counter.load(ordering: .relaxed)
        while true {
            guard bytes <= limit - current else { return false }
            let (exchanged, original) = counter.compareExchange(
                expected: current, desired: current + bytes, successOrdering: .relaxed, failureOrdering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    // MARK: Owners

    /// What one owner's caches hold together.
    final class Account: Sendable {
        let owner: MemoryOwner
        let counter = Atomic<Int>(0)

        init(owner: MemoryOwner) { self.owner = owner }

        var used: Int { counter.load(ordering: .relaxed) }
    }

    /// Why a reservation failed, and by how many bytes.
    enum Shortfall: Equatable {
        case share(Int)
        case budget(Int)
    }

    /// Reserves `bytes` in `account`'s share and in the budget, or nothing.
    func reserve(_ bytes: Int, for account: Account) -> Shortfall? {
        guard Self.reserve(bytes, in: account.counter, within: shareLimit) else {
            return .share(max(1, bytes - (shareLimit - account.used)))
        }
        guard reserve(bytes) else {
            account.counter.subtract(bytes, ordering: .relaxed)
            return .budget(max(1, bytes - available))
        }
        return nil
    }

    /// Gives back bytes reserved for `account`.
    func release(_ bytes: Int, for account: Account) {
        guard bytes > 0 else { return }
        let before = account.counter.subtract(bytes, ordering: .relaxed).oldValue
        assert(before >= bytes, "MemoryBudget: released \(bytes) bytes of \(before) an owner reserved")
        release(bytes)
    }

    // MARK: Members

    /// A cache, not kept alive by the list of members.
    struct Member {
        let id: ObjectIdentifier
        weak var cache: MemoryCache?
    }

    struct Owner {
        let account: Account
        var caches: [ObjectIdentifier: Member] = [:]
        /// Caches given the account and not joined yet, which keep the owner.
        var joining = 0
    }

    struct Members {
        var owners: [MemoryOwner: Owner] = [:]
        /// Every cache, for sampling; `positions` finds one in it.
        var all: [Member] = []
        var positions: [ObjectIdentifier: Int] = [:]
    }

    /// `owner`'s account, for a cache about to `join` with it.
    func account(for owner: MemoryOwner) -> Account {
        members.withLock { members in
            members.owners[owner, default: Owner(account: Account(owner: owner))].joining += 1
            return members.owners[owner]!.account
        }
    }

    /// Adds `cache`, given its account by `account(for:)`, to the members.
    func join(_ cache: MemoryCache) {
        let id = ObjectIdentifier(cache)
        members.withLock { members in
            members.owners[cache.owner]!.joining -= 1
            members.owners[cache.owner]!.caches[id] = Member(id: id, cache: cache)
            members.positions[id] = members.all.count
            members.all.append(Member(id: id, cache: cache))
        }
    }

    /// Removes a cache from the members (it holds nothing any more); an owner
    /// without caches is forgotten.
    func leave(_ id: ObjectIdentifier, owner: MemoryOwner) {
        members.withLock { members in
            if members.owners[owner]?.caches.removeValue(forKey: id) != nil,
               let left = members.owners[owner], left.caches.isEmpty, left.joining == 0 {
                members.owners[owner] = nil
            }
            guard let position = members.positions.removeValue(forKey: id) else { return }
            let last = members.all.removeLast()
            if position < members.all.count {
                members.all[position] = last
                members.positions[last.id] = position
            }
        }
    }

    // MARK: Eviction

    /// Evicts least recently used entries for a write of `account` that fell
    /// short: its own past its share; its own, then the server's, past the
    /// budget. False when nothing could be evicted.
    func makeRoom(_ shortfall: Shortfall, for account: Account) -> Bool {
        switch shortfall {
        case .share(let bytes):
            return evictOwn(bytes, of: account.owner) > 0
        case .budget(let bytes):
            var freed = evictOwn(bytes, of: account.owner)
            if freed < bytes { freed += evictSampled(bytes - freed) }
            return freed > 0
        }
    }

    /// Evicts from the caches whose least recently used entries are oldest
    /// until `bytes` are freed, and answers the bytes freed.
    private func evict(_ bytes: Int, from caches: () -> [MemoryCache]) -> Int {
        var freed = 0
        var rounds = 0
        while freed < bytes, rounds < 10_000 {
            rounds += 1
            var oldest: (cache: MemoryCache, tick: UInt64)?
            var next = UInt64.max
            for cache in caches() {
                guard let tick = cache.tailTick else { continue }
                if let current = oldest, current.tick <= tick {
                    next = min(next, tick)
                } else {
                    if let current = oldest { next = min(next, current.tick) }
                    oldest = (cache, tick)
                }
            }
            guard let oldest else { break }
            let (entries, released) = oldest.cache.evict(atLeast: bytes - freed, whileOlderThan: next)
            evictions.add(entries, ordering: .relaxed)
            freed += released
        }
        return freed
    }

    private func evictOwn(_ bytes: Int, of owner: MemoryOwner) -> Int {
        let caches = members.withLock { $0.owners[owner]?.caches.values.compactMap(\.cache) ?? [] }
        return evict(bytes) { caches }
    }

    /// Samples caches at random each round; when a sample holds nothing, all of them.
    private func evictSampled(_ bytes: Int) -> Int {
        evict(bytes) {
            let sample = members.withLock { members -> [MemoryCache] in
                guard members.all.count > Self.evictionSample else { return members.all.compactMap(\.cache) }
                return (0..<Self.evictionSample).compactMap { _ in members.all.randomElement()?.cache }
            }
            if sample.contains(where: { $0.tailTick != nil }) { return sample }
            return members.withLock { $0.all.compactMap(\.cache) }
        }
    }

    // MARK: Sizes

    /// What an entry costs beyond its key's and value's bytes and its slot in
    /// the list (`LRUList.storageBytes`, counted per cache): the heap
    /// allocation of a key longer than 15 UTF-8 bytes (a native string's
    /// 32-byte header and the allocator's rounding), counted for every key so
    /// that the cost does not depend on the key's length in steps.
    public static let entryOverhead = 48

    /// What a cache costs before it holds anything, beyond its name's and
    /// owner's bytes: the cache object and its lock, its entries in the
    /// registry of names and in the budget's list of members, rounded up.
    public static let cacheOverhead = 1024

    /// What a value costs beyond its payload bytes: the enum itself inside its
    /// container (`MemoryLayout<Value>.stride`, 24 bytes on 64-bit platforms).
    public static let valueNodeOverhead = 24

    /// The bytes an entry is counted for: `entryOverhead`, the key's UTF-8
    /// bytes and `estimatedSize(of:)` its value.
    public static func entrySize(key: String, value: Value) -> Int {
        entryOverhead + key.utf8.count + estimatedSize(of: value)
    }

    /// An estimate of the heap a value holds, deliberately simple so that a
    /// client can predict it: every value node counts `valueNodeOverhead`;
    /// numbers add 8, strings their UTF-8 bytes, blobs their bytes; arrays add
    /// their elements; objects add, per member, the key's UTF-8 bytes, 16 for
    /// the key's string and the member's value. Booleans and nulls add
    /// nothing. Allocator rounding, the headers of heap buffers and the slack
    /// of growing collections are not counted, so the real footprint is
    /// somewhat larger: the budget bounds what clients store, it does not
    /// measure the heap.
    public static func estimatedSize(of value: Value) -> Int {
        switch value {
        case .null, .bool: valueNodeOverhead
        case .integer, .double: valueNodeOverhead + 8
        case .string(let string): valueNodeOverhead + string.utf8.count
        case .blob(let bytes): valueNodeOverhead + bytes.count
        case .array(let elements): elements.reduce(valueNodeOverhead) { $0 + estimatedSize(of: $1) }
        case .object(let members):
            members.reduce(valueNodeOverhead) { $0 + $1.key.utf8.count + 16 + estimatedSize(of: $1.value) }
        }
    }
}
