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
/// once. Keys are checked by the caller (`Names.checkKey`). Each entry's bytes
/// (`MemoryBudget.entrySize`) are reserved in the shared budget before the
/// entry is held and released whenever it leaves, whatever the path: replaced,
/// removed, evicted, expired, dropped.
///
/// Expired entries are forgotten lazily, as the reference does: `get` of an
/// expired entry removes it and answers nil; `exists` and `peek` treat it as
/// absent without removing it; `purgeExpired` removes them all. Until noticed,
/// an expired entry still counts in `count`, still holds its bytes, keeps its
/// place in the LRU order (eviction is exact LRU from the tail, expired or
/// not) and is counted by the removals that take it away, which are not given
/// the time.
public final class MemoryCache: Sendable {
    /// The budget this cache's entries are counted in.
    public let budget: MemoryBudget
    private let state: Mutex<State>

    /// What the lock guards.
    struct State {
        var list = LRUList<Slot>()
        var capacity: Int
        /// The sum of the entries' sizes: what this cache holds of the budget.
        var bytes = 0
        /// How many entries have an expiry, so that purging a cache without
        /// any does not walk it.
        var expiring = 0
        /// Deleted from its registry: holds nothing, takes nothing, so that a
        /// caller still holding it cannot reserve bytes no one will release.
        var closed = false
    }

    /// One entry's payload in the list.
    struct Slot {
        var value: Value
        var expire: Double
        var size: Int

        func isExpired(at now: Double) -> Bool { expire != 0 && expire <= now }
    }

    /// A cache of at most `capacity` entries (at least 1: `MemoryCaches`
    /// checks what clients ask for) counting its bytes in `budget`.
    public init(capacity: Int, budget: MemoryBudget) {
        precondition(capacity >= 1, "MemoryCache: capacity \(capacity)")
        self.budget = budget
        state = Mutex(State(capacity: capacity))
    }

    deinit {
        // A cache dropped without `removeAll` still gives its bytes back.
        let bytes = state.withLock { $0.bytes }
        if bytes > 0 { budget.release(bytes) }
    }

    /// The most entries the cache holds.
    public var capacity: Int { state.withLock { $0.capacity } }

    /// The entries held, including expired ones not noticed yet (see the type's
    /// note): at most `capacity`.
    public var count: Int { state.withLock { $0.list.count } }

    /// The bytes the entries are counted for in the budget.
    public var bytes: Int { state.withLock { $0.bytes } }

    /// The cache and its counts in one look.
    public var info: (capacity: Int, count: Int, bytes: Int) {
        state.withLock { ($0.capacity, $0.list.count, $0.bytes) }
    }

    // MARK: Writing

    /// Stores `value` under `key` as the most recently used entry
    /// (`setObject:forKey:expire:`) and answers how many entries were evicted
    /// to make room (0 or 1).
    ///
    /// `expire` is a timestamp in seconds since 1970: 0 never expires, one at
    /// or before `now` removes the key and stores nothing (the entry would be
    /// expired at once). A `.null` value removes the key, as the reference's
    /// nil object does. Throws `.invalidValue` for a negative or non-finite
    /// `expire`, `.memoryFull` when the budget cannot cover the entry (the
    /// cache is then unchanged), `.unknownCache` once the cache was deleted.
    @discardableResult
    public func set(_ key: String, _ value: Value, expire: Double = 0, now: Double) throws(StorageError) -> Int {
        guard expire.isFinite, expire >= 0 else {
            throw StorageError(.invalidValue, "an expiry is 0 or a timestamp in seconds since 1970, not \(expire)")
        }
        if value.isNull || (expire != 0 && expire <= now) {
            return try state.withLock { state throws(StorageError) -> Int in
                try state.checkOpen()
                if let position = state.list.position(of: key) { budget.release(state.remove(at: position).slot.size) }
                return 0
            }
        }
        // Sizing walks the value: outside the lock.
        let size = MemoryBudget.entrySize(key: key, value: value)
        let slot = Slot(value: value, expire: expire, size: size)
        return try state.withLock { state throws(StorageError) -> Int in
            try state.checkOpen()
            let existing = state.list.position(of: key)
            // What leaves: the entry replaced, or the tail when a new key
            // would overflow the capacity.
            var freed = 0
            var evicts = false
            if let existing {
                freed = state.list.payload(at: existing).size
            } else if state.list.count >= state.capacity, let tail = state.list.tail {
                freed = state.list.payload(at: tail).size
                evicts = true
            }
            if size > freed {
                guard budget.reserve(size - freed) else { throw memoryFull(needing: size - freed) }
            } else if size < freed {
                budget.release(freed - size)
            }
            if let existing {
                state.replace(at: existing, with: slot)
                state.list.moveToHead(existing)
            } else {
                state.insert(key, slot)
                if evicts { _ = state.removeTail() }
            }
            return evicts ? 1 : 0
        }
    }

    /// Stores the entries in order, none expiring, so that the last given ends
    /// most recent (`addObjects:`), and answers how many entries were evicted.
    ///
    /// `.null` values remove their key. All or nothing: when the budget cannot
    /// cover what the cache holds once every entry is applied, it throws
    /// `.memoryFull` and the cache is as it was (the batch is applied, then
    /// undone step by step when its net growth does not fit). `now` is not
    /// used today, since nothing added expires; it keeps the writes' shape.
    @discardableResult
    public func add(_ entries: [(key: String, value: Value)], now: Double) throws(StorageError) -> Int {
        let sizes = entries.map { $0.value.isNull ? 0 : MemoryBudget.entrySize(key: $0.key, value: $0.value) }
        return try state.withLock { state throws(StorageError) -> Int in
            try state.checkOpen()
            let before = state.bytes
            var undo: [Undo] = []
            var evicted = 0
            for (entry, size) in zip(entries, sizes) {
                if let position = state.list.position(of: entry.key) {
                    let after = state.list.position(before: position).map(state.list.key(at:))
                    let removed = state.remove(at: position)
                    undo.append(.reinsert(removed.key, removed.slot, after: after))
                }
                guard !entry.value.isNull else { continue }
                state.insert(entry.key, Slot(value: entry.value, expire: 0, size: size))
                undo.append(.unlinkInserted(entry.key))
                while state.list.count > state.capacity, let tail = state.list.tail {
                    let after = state.list.position(before: tail).map(state.list.key(at:))
                    let removed = state.remove(at: tail)
                    undo.append(.reinsert(removed.key, removed.slot, after: after))
                    evicted += 1
                }
            }
            let delta = state.bytes - before
            if delta > 0, !budget.reserve(delta) {
                for step in undo.reversed() { state.undo(step) }
                assert(state.bytes == before, "MemoryCache.add: undo left \(state.bytes) bytes, not \(before)")
                throw memoryFull(needing: delta)
            }
            if delta < 0 { budget.release(-delta) }
            return evicted
        }
    }

    /// A step of a batch that failed, undone in reverse order: each puts back
    /// the state right before its step, so positions named by key are there.
    enum Undo {
        case unlinkInserted(String)
        case reinsert(String, Slot, after: String?)
    }

    private func memoryFull(needing bytes: Int) -> StorageError {
        StorageError(.memoryFull, "the memory caches hold \(budget.used) of \(budget.limit) bytes; \(bytes) more do not fit")
    }

    // MARK: Reading

    /// The value under `key`, made the most recently used (`objectForKey:`);
    /// nil when absent. An expired entry is removed and answers nil.
    public func get(_ key: String, now: Double) -> Value? {
        state.withLock { state -> Value? in
            guard let position = state.list.touch(key) else { return nil }
            let slot = state.list.payload(at: position)
            guard !slot.isExpired(at: now) else {
                budget.release(state.remove(at: position).slot.size)
                return nil
            }
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
            budget.release(state.remove(at: position).slot.size)
            return true
        }
    }

    /// Removes every entry (`removeAllObjects`) and answers how many were held.
    @discardableResult
    public func removeAll() -> Int {
        state.withLock { state -> Int in
            let removed = state.list.count
            state.clear(releasingTo: budget)
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
            var evicted = 0
            var freed = 0
            while state.list.count > capacity, let removed = state.removeTail() {
                freed += removed.slot.size
                evicted += 1
            }
            if freed > 0 { budget.release(freed) }
            return evicted
        }
    }

    /// Removes the entries expired at `now` and answers how many, and how
    /// many bytes they gave back.
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
            if bytes > 0 { budget.release(bytes) }
            return (entries, bytes)
        }
    }

    /// Empties the cache for good: what its registry does when it deletes it,
    /// so that a caller still holding it can neither read old entries nor
    /// reserve bytes. Answers how many entries and bytes it held.
    @discardableResult
    func close() -> (entries: Int, bytes: Int) {
        state.withLock { state -> (entries: Int, bytes: Int) in
            let held = (state.list.count, state.bytes)
            state.clear(releasingTo: budget)
            state.closed = true
            return held
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
            if freed > 0 { budget.release(freed) }
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
            if state.closed, state.list.count > 0 { return "a closed cache holds \(state.list.count) entries" }
            return nil
        }
    }
}

extension MemoryCache.State {
    func checkOpen() throws(StorageError) {
        guard !closed else { throw StorageError(.unknownCache, "the cache was deleted") }
    }

    /// Inserts a key not held at the head, counting its bytes (not reserving them).
    mutating func insert(_ key: String, _ slot: MemoryCache.Slot, after position: Int? = nil) {
        list.insert(key, slot, after: position)
        bytes += slot.size
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

    /// Empties the list and releases everything it held.
    mutating func clear(releasingTo budget: MemoryBudget) {
        if bytes > 0 { budget.release(bytes) }
        list.removeAll()
        bytes = 0
        expiring = 0
    }

    func expiredPositions(at now: Double) -> [Int] {
        list.positions(fromHead: true).filter { list.payload(at: $0).isExpired(at: now) }
    }

    mutating func undo(_ step: MemoryCache.Undo) {
        switch step {
        case .unlinkInserted(let key):
            guard let position = list.position(of: key) else { preconditionFailure("MemoryCache: undo finds no '\(key)'") }
            _ = remove(at: position)
        case .reinsert(let key, let slot, let after):
            var position: Int?
            if let after {
                guard let found = list.position(of: after) else { preconditionFailure("MemoryCache: undo finds no '\(after)'") }
                position = found
            }
            insert(key, slot, after: position)
        }
    }
}
