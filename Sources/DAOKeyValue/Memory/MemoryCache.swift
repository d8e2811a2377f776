#if canImport(Glibc)
import Glibc
#endif
import DAOEngine
import DAOValue
import Synchronization

/// One entry of a memory cache as `peek` reads it.
public struct MemoryEntry: Sendable, Equatable {
    public var key: String
    public var value: Value
    /// When the entry expires, in seconds since 1970; 0 when it never does.
    public var expire: Double

    public init(key: String, value: Value, expire: Double) {
        self.key = key
        self.value = value
        self.expire = expire
    }
}

/// An in-memory cache of values under keys that forgets the least recently
/// used entry when it is full: the reference's `APLRUMemoryCache`.
///
/// Thread-safe: one `Mutex` guards the state, and every operation holds it
/// once. Keys are checked by the caller (`Names.checkKey`). Everything the
/// cache holds is reserved in its owner's share of the shared budget before
/// it is held, and released whenever it leaves, whatever the path (replaced,
/// removed, evicted, expired, dropped): each entry's bytes
/// (`MemoryBudget.entrySize`), the storage of its list and index
/// (`LRUList.storageBytes`, which grows by doubling and shrinks when three
/// quarters of it are unused) and its fixed cost (`overhead`, reserved by
/// whoever creates it, `MemoryCaches`). A write that does not fit makes room
/// by eviction (`MemoryBudget.makeRoom`), outside the cache's lock.
///
/// Expired entries are forgotten lazily, as the reference does: `get` of an
/// expired entry removes it and answers nil; `exists` and `peek` treat it as
/// absent without removing it; `purgeExpired` removes them all. Until noticed,
/// an expired entry still counts in `count`, still holds its bytes, keeps its
/// place in the LRU order (eviction is exact LRU from the tail, expired or
/// not) and is counted by the removals that take it away, which are not given
/// the time.
public final class MemoryCache: Sendable {
    /// The budget this cache's bytes are counted in.
    public let budget: MemoryBudget
    /// Whose share the cache counts in.
    public let owner: MemoryOwner
    let account: MemoryBudget.Account
    private let state: Mutex<State>

    /// How many times a write makes room and tries again before it gives up
    /// (other writers may take the room it made meanwhile).
    static let attempts = 16

    /// What the lock guards.
    struct State {
        var list: LRUList<Slot>
        var capacity: Int
        /// The sum of the entries' sizes.
        var bytes = 0
        /// What the list's storage is counted for: its `storageBytes` after every operation.
        var storage = 0
        /// The fixed cost reserved for the cache, released when it closes.
        var overhead: Int
        /// How many entries have an expiry, so that purging a cache without
        /// any does not walk it.
        var expiring = 0
        /// Deleted from its registry: holds nothing, takes nothing, so that a
        /// caller still holding it cannot reserve bytes no one will release.
        var closed = false

        /// What the cache holds of the budget.
        var charged: Int { bytes + storage + overhead }
    }

    /// One entry's payload in the list.
    struct Slot {
        var value: Value
        var expire: Double
        var size: Int
        /// When it was last set or read (`MemoryBudget.nextTick`).
        var tick: UInt64

        func isExpired(at now: Double) -> Bool { expire != 0 && expire <= now }
    }

    /// A cache of at most `capacity` entries (at least 1: `MemoryCaches`
    /// checks what clients ask for) counting its bytes in `budget`, in
    /// `owner`'s share; `overhead` bytes were reserved for it in that share
    /// already, and are released when it closes.
    public init(capacity: Int, budget: MemoryBudget, owner: MemoryOwner = .common, overhead: Int = 0) {
        precondition(capacity >= 1, "MemoryCache: capacity \(capacity)")
        self.budget = budget
        self.owner = owner
        account = budget.account(for: owner)
        state = Mutex(State(list: LRUList(slotLimit: capacity + 1), capacity: capacity, overhead: overhead))
        budget.join(self)
    }

    deinit {
        // A cache dropped without `close` still gives its bytes back.
        let charged = state.withLock { $0.charged }
        budget.release(charged, for: account)
        budget.leave(ObjectIdentifier(self), owner: owner)
    }

    /// The most entries the cache holds.
    public var capacity: Int { state.withLock { $0.capacity } }

    /// The entries held, including expired ones not noticed yet (see the type's
    /// note): at most `capacity`.
    public var count: Int { state.withLock { $0.list.count } }

    /// The bytes the entries are counted for.
    public var bytes: Int { state.withLock { $0.bytes } }

    /// Everything the cache holds of the budget: its entries, its list's
    /// storage and its fixed cost.
    public var charged: Int { state.withLock { $0.charged } }

    /// The cache and its counts in one look.
    public var info: (capacity: Int, count: Int, bytes: Int) {
        state.withLock { ($0.capacity, $0.list.count, $0.bytes) }
    }

    // MARK: Writing

    /// What a write does under the lock: done (with its answer), or short of
    /// room (nothing changed).
    private enum Attempt<Answer> {
        case done(Answer)
        case short(MemoryBudget.Shortfall)
    }

    /// Runs `attempt` under the lock until it is done, making room by
    /// eviction (outside the lock) each time it falls short. Nothing to
    /// evict three times running is a full share or budget (once may be
    /// other writers' reservations in flight, released a moment later).
    private func write<Answer>(_ attempt: () throws(KeyValueError) -> Attempt<Answer>) throws(KeyValueError) -> Answer {
        var shortfall: MemoryBudget.Shortfall?
        var fruitless = 0
        for _ in 0..<Self.attempts {
            switch try attempt() {
            case .done(let answer): return answer
            case .short(let short):
                shortfall = short
                if budget.makeRoom(short, for: account) {
                    fruitless = 0
                } else {
                    fruitless += 1
                    guard fruitless < 3 else { throw memoryFull(short) }
                    sched_yield()
                }
            }
        }
        throw memoryFull(shortfall)
    }

    /// Stores `value` under `key` as the most recently used entry
    /// (`setObject:forKey:expire:`) and answers how many entries the cache's
    /// capacity evicted to make room (0 or 1).
    ///
    /// `expire` is a timestamp in seconds since 1970: 0 never expires, one at
    /// or before `now` removes the key and stores nothing (the entry would be
    /// expired at once). A `.null` value removes the key, as the reference's
    /// nil object does. When the owner's share or the budget is full, least
    /// recently used entries are evicted (`MemoryBudget`). Throws
    /// `.invalidValue` for a negative or non-finite `expire`, `.memoryFull`
    /// for an entry larger than a share (the cache is then unchanged),
    /// `.unknownCache` once the cache was deleted.
    @discardableResult
    public func set(_ key: String, _ value: Value, expire: Double = 0, now: Double) throws(KeyValueError) -> Int {
        guard expire.isFinite, expire >= 0 else {
            throw KeyValueError(.invalidValue, "an expiry is 0 or a timestamp in seconds since 1970, not \(expire)")
        }
        if value.isNull || (expire != 0 && expire <= now) {
            return try state.withLock { state throws(KeyValueError) -> Int in
                try state.checkOpen()
                if let position = state.list.position(of: key) {
                    let freed = state.remove(at: position).slot.size + state.settle()
                    budget.release(freed, for: account)
                }
                return 0
            }
        }
        // Sizing walks the value: outside the lock.
        let size = MemoryBudget.entrySize(key: key, value: value)
        try checkFits(size)
        let slot = Slot(value: value, expire: expire, size: size, tick: budget.nextTick())
        return try write { () throws(KeyValueError) -> Attempt<Int> in try state.withLock { state throws(KeyValueError) -> Attempt<Int> in
            try state.checkOpen()
            let existing = state.list.position(of: key)
            // What leaves: the entry replaced, or the tail when a new key
            // would overflow the capacity; what grows: the list's storage
            // when a new key finds no free slot.
            var freed = 0
            var evicts = false
            var growth = 0
            if let existing {
                freed = state.list.payload(at: existing).size
            } else if state.list.count >= state.capacity, let tail = state.list.tail {
                freed = state.list.payload(at: tail).size
                evicts = true
            } else {
                growth = LRUList<Slot>.storageBytes(slots: state.list.slotsAfterInsert) - state.storage
            }
            let needed = size + growth - freed
            if needed > 0, let shortfall = budget.reserve(needed, for: account) { return .short(shortfall) }
            if needed < 0 { budget.release(-needed, for: account) }
            if let existing {
                state.replace(at: existing, with: slot)
                state.list.moveToHead(existing)
            } else {
                if evicts { _ = state.removeTail() }
                state.insert(key, slot)
                assert(state.storage == state.list.storageBytes, "MemoryCache: storage \(state.storage), counted \(state.list.storageBytes)")
            }
            return .done(evicts ? 1 : 0)
        } }
    }

    /// Stores the entries in order, none expiring, so that the last given ends
    /// most recent (`addObjects:`), and answers how many entries the cache's
    /// capacity evicted. `.null` values remove their key.
    ///
    /// Each entry is stored as `set` stores it, evicting as it goes (a batch
    /// larger than the capacity or the share keeps its last entries). Throws
    /// `.memoryFull` before anything changes when one value is larger than a
    /// share. `now` is not used today, since nothing added expires; it keeps
    /// the writes' shape.
    @discardableResult
    public func add(_ entries: [(key: String, value: Value)], now: Double) throws(KeyValueError) -> Int {
        for entry in entries where !entry.value.isNull {
            try checkFits(MemoryBudget.entrySize(key: entry.key, value: entry.value))
        }
        var evicted = 0
        for entry in entries {
            evicted += try set(entry.key, entry.value, now: now)
        }
        return evicted
    }

    /// Throws `.memoryFull` for an entry no eviction can make room for: one
    /// that a share cannot hold with the smallest list's storage.
    private func checkFits(_ size: Int) throws(KeyValueError) {
        guard size + LRUList<Slot>.storageBytes(slots: LRUList<Slot>.minimumSlots) <= budget.shareLimit else {
            throw KeyValueError(.memoryFull, "an entry counted as \(size) bytes is larger than one user's share of the memory caches, \(budget.shareLimit) bytes")
        }
    }

    /// Reserves the cache's fixed cost (what `MemoryCaches` does as it
    /// creates one), evicting to make room as a write does.
    func reserveOverhead(_ bytes: Int) throws(KeyValueError) {
        guard bytes > 0 else { return }
        try checkFits(bytes)
        try write { () throws(KeyValueError) -> Attempt<Void> in try state.withLock { state throws(KeyValueError) -> Attempt<Void> in
            try state.checkOpen()
            if let shortfall = budget.reserve(bytes, for: account) { return .short(shortfall) }
            state.overhead += bytes
            return .done(())
        } }
    }

    private func memoryFull(_ shortfall: MemoryBudget.Shortfall?) -> KeyValueError {
        switch shortfall {
        case .share(let bytes)?:
            KeyValueError(.memoryFull, "this user's memory caches hold \(account.used) of the \(budget.shareLimit) bytes a user may hold, and nothing of theirs is left to evict for \(bytes) more")
        case .budget(let bytes)?:
            KeyValueError(.memoryFull, "the memory caches hold \(budget.used) of \(budget.limit) bytes, and nothing is left to evict for \(bytes) more")
        case nil:
            KeyValueError(.memoryFull, "the memory caches hold \(budget.used) of \(budget.limit) bytes")
        }
    }

    // MARK: Reading

    /// The value under `key`, made the most recently used (`objectForKey:`);
    /// nil when absent. An expired entry is removed and answers nil.
    public func get(_ key: String, now: Double) -> Value? {
        state.withLock { state -> Value? in
            guard let position = state.list.touch(key) else { return nil }
            let slot = state.list.payload(at: position)
            guard !slot.isExpired(at: now) else {
                budget.release(state.remove(at: position).slot.size + state.settle(), for: account)
                return nil
            }
            let tick = budget.nextTick()
            state.list.modifyPayload(at: position) { $0.tick = tick }
            return slot.value
        }
    }

    /// Whether a live entry is under `key`, leaving the order alone
    /// (`objectExistsForKey:`).
    public func exists(_ key: String, now: Double) -> Bool {
        state.withLock { state -> Bool in
            guard let position = state.list.position(of: key) else { return false }
            return !state.list.payload(at: position).isExpired(at: now)
        }
    }

    /// Up to `count` live entries from the most recently used (`fromHead`) or
    /// from the least, leaving the order alone (`peekObjects:fromHead:`).
    /// Expired entries are skipped, not removed. A count below 1 reads nothing.
    public func peek(_ count: Int, fromHead: Bool, now: Double) -> [MemoryEntry] {
        guard count > 0 else { return [] }
        return state.withLock { state -> [MemoryEntry] in
            var entries: [MemoryEntry] = []
            entries.reserveCapacity(min(count, state.list.count))
            for position in state.list.positions(fromHead: fromHead) {
                let slot = state.list.payload(at: position)
                guard !slot.isExpired(at: now) else { continue }
                entries.append(MemoryEntry(key: state.list.key(at: position), value: slot.value, expire: slot.expire))
                if entries.count == count { break }
            }
            return entries
        }
    }

    // MARK: Removing

    /// Removes the entry under `key` (`removeObjectForKey:`); false when none
    /// was held (an expired one not noticed yet counts as held).
    @discardableResult
    public func remove(_ key: String) -> Bool {
        state.withLock { state -> Bool in
            guard let position = state.list.position(of: key) else { return false }
            budget.release(state.remove(at: position).slot.size + state.settle(), for: account)
            return true
        }
    }

    /// Removes every entry (`removeAllObjects`) and answers how many were held.
    @discardableResult
    public func removeAll() -> Int {
        state.withLock { state -> Int in
            let removed = state.list.count
            budget.release(state.clear(), for: account)
            return removed
        }
    }

    /// Removes the entries whose whole key matches a caller's regular
    /// expression (`removeObjectsWithRegex:`), and answers how many.
    ///
    /// The keys are matched outside the cache's lock, so a slow pattern holds
    /// no other call on the cache; one that passes `CallerRegex`'s budget
    /// removes nothing. An entry set between the match and the removal under a
    /// matching key is removed too, as if it had been set just before.
    @discardableResult
    public func remove(matching regex: CallerRegex) throws(EngineError) -> Int {
        let keys = state.withLock { state in state.list.positions(fromHead: true).map { state.list.key(at: $0) } }
        return remove(keys: try regex.selecting(keys, name: { $0 }))
    }

    /// Removes the entries whose key starts with `prefix` (`removeObjectsWithPrefix:`).
    @discardableResult
    public func remove(prefix: String) -> Int {
        removeEntries { key, _ in key.hasPrefix(prefix) }
    }

    /// Removes the entries whose key ends with `suffix` (`removeObjectsWithSuffix:`).
    @discardableResult
    public func remove(suffix: String) -> Int {
        removeEntries { key, _ in key.hasSuffix(suffix) }
    }

    /// Removes the entries under `keys` (`removeObjectsWithKeys:`); a key given
    /// twice counts once.
    @discardableResult
    public func remove(keys: some Sequence<String>) -> Int {
        removeEntries(selectedBy: { state in
            var positions: [Int] = []
            var seen = Set<Int>()
            for key in keys {
                if let position = state.list.position(of: key), seen.insert(position).inserted { positions.append(position) }
            }
            return positions
        })
    }

    /// Sets the capacity (`resetCapacity:`), evicting the least recently used
    /// entries beyond it, and answers how many were evicted. At least 1:
    /// `MemoryCaches` checks what clients ask for.
    @discardableResult
    public func resize(_ capacity: Int) -> Int {
        precondition(capacity >= 1, "MemoryCache: capacity \(capacity)")
        return state.withLock { state -> Int in
            state.capacity = capacity
            state.list.slotLimit = capacity + 1
            var evicted = 0
            var freed = 0
            while state.list.count > capacity, let removed = state.removeTail() {
                freed += removed.slot.size
                evicted += 1
            }
            budget.release(freed + state.settle(), for: account)
            return evicted
        }
    }

    /// Removes the entries expired at `now` and answers how many, and how
    /// many bytes they were counted for (what the list's storage gives back
    /// as it shrinks is released too, and not in that figure).
    @discardableResult
    public func purgeExpired(now: Double) -> (entries: Int, bytes: Int) {
        state.withLock { state -> (entries: Int, bytes: Int) in
            guard state.expiring > 0 else { return (0, 0) }
            var entries = 0
            var bytes = 0
            for position in state.expiredPositions(at: now) {
                bytes += state.remove(at: position).slot.size
                entries += 1
            }
            budget.release(bytes + state.settle(), for: account)
            return (entries, bytes)
        }
    }

    /// Empties the cache for good: what its registry does when it deletes it,
    /// so that a caller still holding it can neither read old entries nor
    /// reserve bytes. Answers how many entries and bytes it held.
    @discardableResult
    func close() -> (entries: Int, bytes: Int) {
        let held = state.withLock { state -> (entries: Int, bytes: Int) in
            let held = (state.list.count, state.bytes)
            budget.release(state.clear() + state.overhead, for: account)
            state.overhead = 0
            state.closed = true
            return held
        }
        budget.leave(ObjectIdentifier(self), owner: owner)
        return held
    }

    // MARK: Eviction

    /// The recency of the least recently used entry; nil when the cache holds none.
    var tailTick: UInt64? {
        state.withLock { state in state.list.tail.map { state.list.payload(at: $0).tick } }
    }

    /// Evicts least recently used entries to free `bytes` (what
    /// `MemoryBudget.makeRoom` asks): at least one, and on while the next
    /// one's recency is older than `bound` (the next cache's oldest).
    /// Answers how many entries left and the bytes released.
    func evict(atLeast bytes: Int, whileOlderThan bound: UInt64) -> (entries: Int, bytes: Int) {
        state.withLock { state -> (entries: Int, bytes: Int) in
            var entries = 0
            var freed = 0
            while let tail = state.list.tail, entries == 0 || (freed < bytes && state.list.payload(at: tail).tick <= bound) {
                freed += state.remove(at: tail).slot.size
                entries += 1
            }
            freed += state.settle()
            budget.release(freed, for: account)
            return (entries, freed)
        }
    }

    private func removeEntries(where matches: (String, Slot) -> Bool) -> Int {
        removeEntries(selectedBy: { state in
            var positions: [Int] = []
            for position in state.list.positions(fromHead: true) where matches(state.list.key(at: position), state.list.payload(at: position)) {
                positions.append(position)
            }
            return positions
        })
    }

    /// Removes the entries at the positions `select` finds, releasing their
    /// bytes once, and answers how many.
    private func removeEntries(selectedBy select: (borrowing State) -> [Int]) -> Int {
        state.withLock { state -> Int in
            let positions = select(state)
            var freed = 0
            for position in positions { freed += state.remove(at: position).slot.size }
            budget.release(freed + state.settle(), for: account)
            return positions.count
        }
    }

    // MARK: Checking

    /// What is wrong with the cache's state, nil when nothing is: for tests, O(n).
    func invariantViolation() -> String? {
        state.withLock { state -> String? in
            if let problem = state.list.invariantViolation() { return problem }
            guard state.list.count <= state.capacity else { return "\(state.list.count) entries over a capacity of \(state.capacity)" }
            var bytes = 0
            var expiring = 0
            for position in state.list.positions(fromHead: true) {
                let slot = state.list.payload(at: position)
                guard slot.size == MemoryBudget.entrySize(key: state.list.key(at: position), value: slot.value) else {
                    return "entry '\(state.list.key(at: position))' counted for \(slot.size) bytes"
                }
                bytes += slot.size
                if slot.expire != 0 { expiring += 1 }
            }
            guard bytes == state.bytes else { return "entries of \(bytes) bytes counted as \(state.bytes)" }
            guard expiring == state.expiring else { return "\(expiring) expiring entries counted as \(state.expiring)" }
            guard state.storage == state.list.storageBytes else { return "storage of \(state.list.storageBytes) bytes counted as \(state.storage)" }
            if state.closed, state.list.count > 0 { return "a closed cache holds \(state.list.count) entries" }
            return nil
        }
    }
}

extension MemoryCache.State {
    func checkOpen() throws(KeyValueError) {
        guard !closed else { throw KeyValueError(.unknownCache, "the cache was deleted") }
    }

    /// Inserts a key not held at the head, counting its bytes and the list's
    /// storage (not reserving them).
    mutating func insert(_ key: String, _ slot: MemoryCache.Slot) {
        list.insertAtHead(key, slot)
        bytes += slot.size
        storage = list.storageBytes
        if slot.expire != 0 { expiring += 1 }
    }

    /// Replaces an entry's payload in place, counting the difference.
    mutating func replace(at position: Int, with slot: MemoryCache.Slot) {
        let old = list.payload(at: position)
        list.setPayload(slot, at: position)
        bytes += slot.size - old.size
        if old.expire != 0 { expiring -= 1 }
        if slot.expire != 0 { expiring += 1 }
    }

    /// Removes an entry, uncounting its bytes (the caller releases them).
    mutating func remove(at position: Int) -> (key: String, slot: MemoryCache.Slot) {
        let (key, slot) = list.remove(at: position)
        bytes -= slot.size
        if slot.expire != 0 { expiring -= 1 }
        return (key, slot)
    }

    mutating func removeTail() -> (key: String, slot: MemoryCache.Slot)? {
        guard let tail = list.tail else { return nil }
        return remove(at: tail)
    }

    /// Empties the list and answers the bytes it held, entries and storage
    /// (the caller releases them).
    mutating func clear() -> Int {
        let held = bytes + storage
        list.removeAll()
        bytes = 0
        storage = 0
        expiring = 0
        return held
    }

    /// Shrinks the list's storage when it is mostly unused (after removals),
    /// and answers the bytes that gives back (the caller releases them).
    /// Positions change: call it last.
    mutating func settle() -> Int {
        guard list.compactIfSparse() else { return 0 }
        let before = storage
        storage = list.storageBytes
        return before - storage
    }

    func expiredPositions(at now: Double) -> [Int] {
        list.positions(fromHead: true).filter { list.payload(at: $0).isExpired(at: now) }
    }
}
