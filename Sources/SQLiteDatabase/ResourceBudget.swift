/// What open database files hold: file descriptors and bytes of memory.
public struct ResourceCost: Sendable, Equatable {
    public var descriptors: Int
    public var bytes: Int

    public init(descriptors: Int, bytes: Int) {
        self.descriptors = descriptors
        self.bytes = bytes
    }

    public static let zero = ResourceCost(descriptors: 0, bytes: 0)

    public static func + (a: Self, b: Self) -> Self { Self(descriptors: a.descriptors + b.descriptors, bytes: a.bytes + b.bytes) }
    public static func - (a: Self, b: Self) -> Self { Self(descriptors: a.descriptors - b.descriptors, bytes: a.bytes - b.bytes) }
}

/// How much the open database files may hold at once: beyond it the least
/// recently used idle files are closed (and reopened on their next call).
/// Files in use are never closed, so the open files exceed the budget by at
/// most what the calls in flight hold.
public struct ResourceBudget: Sendable, Equatable {
    /// File descriptors of every open connection (a file, its `-wal`, its `-shm`).
    public var descriptors: Int
    /// Estimated memory of every open connection (see `DatabasePool.resourceCost`).
    public var bytes: Int
    /// Open files, whatever they hold (`--max-open-databases`).
    public var files: Int

    public init(descriptors: Int, bytes: Int, files: Int = .max) {
        self.descriptors = max(1, descriptors)
        self.bytes = max(1, bytes)
        self.files = max(1, files)
    }

    /// Whether `count` files holding `total` fit.
    public func admits(_ total: ResourceCost, files count: Int) -> Bool {
        total.descriptors <= descriptors && total.bytes <= bytes && count <= files
    }
}

/// Values leased out by key, the idle ones kept in least-recently-used order,
/// and the charges of all of them held to a `ResourceBudget`: the mechanism
/// of the registry of open files, apart from what it holds (GRDB keeps its
/// `Pool` apart from `DatabasePool` so). Not thread-safe: keep it behind a lock.
///
///     var files = LeasedLRU<String, DatabasePool>(budget: budget)
///     let entry = files.lease(path) ?? files.insert(path, try DatabasePool(path: path), cost: cost)
///     … use entry.value …
///     files.release(entry, cost: entry.value.resourceCost)
///     for pool in files.evictions() { pool.close() }
///
/// The idle list is kept lazily, as a CLOCK keeps its ring: a lease and its release touch their entry alone,
/// not its neighbours in the list (with ten thousand users' files open, a call to one met after the others is
/// a cache miss on each entry it touches, all under the registry's lock). An entry leased while in the list
/// stays there, marked used; a walk from the least recently used end (`evictions`, `removeOldestIdle`) takes
/// out the leased entries it meets and gives a used one a second chance behind the newest, so the order is
/// least recently used up to those second chances. Every operation is O(1) but the walks, which are
/// O(what they pass), each entry passed once per lease.
public struct LeasedLRU<Key: Hashable, Value> {
    public final class Entry {
        public let key: Key
        public let value: Value
        /// Leases not yet released: an entry with any is never evicted.
        public fileprivate(set) var leases = 1
        /// What it held when last released (or inserted).
        public fileprivate(set) var cost: ResourceCost
        /// The LRU's lease count (`leaseClock`) at this entry's latest lease, and at the one before:
        /// how many leases of any entry came between them tells a file used now and then from a busy one.
        public fileprivate(set) var leasedAt: UInt64 = 0
        public fileprivate(set) var previouslyLeasedAt: UInt64 = 0
        /// Set when the entry leaves `entries`: a lease released after that changes nothing (told without a lookup).
        fileprivate var isRemoved = false
        /// In the idle list: every idle entry is, and an entry leased since it went idle may still be.
        fileprivate var isListed = false
        /// Leased since it was put in the list: the next walk to meet it moves it behind the newest.
        fileprivate var isUsedSinceListed = false
        /// The idle list, least recently used first.
        fileprivate var older: Entry?
        fileprivate var newer: Entry?

        fileprivate init(key: Key, value: Value, cost: ResourceCost) {
            self.key = key
            self.value = value
            self.cost = cost
        }
    }

    public var budget: ResourceBudget
    public private(set) var entries: [Key: Entry] = [:]
    /// Leases given so far, inserts included.
    public private(set) var leaseClock: UInt64 = 0
    /// The sum of every entry's cost.
    public private(set) var total = ResourceCost.zero
    private var oldestIdle: Entry?
    private var newestIdle: Entry?

    public init(budget: ResourceBudget) {
        self.budget = budget
    }

    public var count: Int { entries.count }

    /// Whether everything open fits the budget.
    public var isWithinBudget: Bool { budget.admits(total, files: entries.count) }

    /// The entry for `key` with one more lease, nil when there is none. It stays where it is in the idle list.
    public mutating func lease(_ key: Key) -> Entry? {
        guard let entry = entries[key] else { return nil }
        if entry.isListed { entry.isUsedSinceListed = true }
        entry.leases += 1
        leaseClock &+= 1
        entry.previouslyLeasedAt = entry.leasedAt
        entry.leasedAt = leaseClock
        return entry
    }

    /// A new entry for `key` (which must have none), leased once.
    @discardableResult
    public mutating func insert(_ key: Key, _ value: Value, cost: ResourceCost) -> Entry {
        precondition(entries[key] == nil, "LeasedLRU.insert: the key has an entry")
        let entry = Entry(key: key, value: value, cost: cost)
        leaseClock &+= 1
        entry.leasedAt = leaseClock
        entries[key] = entry
        total = total + cost
        return entry
    }

    /// Gives a lease back, with what the entry holds now; the last lease makes it the most recently used idle
    /// entry (one still in the list keeps its place, marked used since, until a walk meets it).
    public mutating func release(_ entry: Entry, cost: ResourceCost) {
        precondition(entry.leases > 0, "LeasedLRU.release: the entry has no lease")
        entry.leases -= 1
        // Removed while leased: no longer counted.
        guard !entry.isRemoved else { return }
        total = total - entry.cost + cost
        entry.cost = cost
        guard entry.leases == 0, !entry.isListed else { return }
        appendIdle(entry)
    }

    /// Updates what a leased entry holds (a file that opened a reader).
    public mutating func recharge(_ entry: Entry, cost: ResourceCost) {
        guard !entry.isRemoved else { return }
        total = total - entry.cost + cost
        entry.cost = cost
    }

    /// Removes the least recently used idle entries while the budget is
    /// exceeded, and returns their values, for the caller to close outside its lock.
    public mutating func evictions() -> [Value] {
        var evicted: [Value] = []
        while !isWithinBudget, let entry = settledOldestIdle() {
            remove(entry)
            evicted.append(entry.value)
        }
        return evicted
    }

    /// Calls `body` with the idle entries, least recently used first (up to the second chances of entries used
    /// since they went idle), until it returns false or `limit` were seen.
    public mutating func forEachIdle(limit: Int = .max, _ body: (Entry) -> Bool) {
        _ = settledOldestIdle()
        var next = oldestIdle
        var seen = 0
        while let entry = next, seen < limit {
            next = entry.newer
            guard entry.leases == 0 else { continue }
            guard body(entry) else { return }
            seen += 1
        }
    }

    /// The least recently used idle entry, removed; nil when every entry is leased.
    public mutating func removeOldestIdle() -> Value? {
        guard let entry = settledOldestIdle() else { return nil }
        remove(entry)
        return entry.value
    }

    /// Removes `key`'s entry, leased or not. A lease still out on it may be
    /// released later: that changes nothing.
    @discardableResult
    public mutating func remove(_ key: Key) -> Entry? {
        guard let entry = entries[key] else { return nil }
        remove(entry)
        return entry
    }

    /// Removes every entry and returns them.
    public mutating func removeAll() -> [Entry] {
        let all = Array(entries.values)
        for entry in all { remove(entry) }
        return all
    }

    /// The oldest entry of the idle list once the leased entries at its head are taken out (their release puts
    /// them back, behind the newest) and those used since they were listed are moved behind the newest: the
    /// least recently used idle entry. Each entry is passed at most twice, so this ends.
    private mutating func settledOldestIdle() -> Entry? {
        while let entry = oldestIdle {
            if entry.leases > 0 {
                unlinkIdle(entry)
            } else if entry.isUsedSinceListed {
                unlinkIdle(entry)
                appendIdle(entry)
            } else {
                return entry
            }
        }
        return nil
    }

    private mutating func remove(_ entry: Entry) {
        if entry.isListed { unlinkIdle(entry) }
        entries[entry.key] = nil
        entry.isRemoved = true
        total = total - entry.cost
        // A lease released after this must not count it again.
        entry.cost = .zero
    }

    private mutating func appendIdle(_ entry: Entry) {
        entry.older = newestIdle
        newestIdle?.newer = entry
        newestIdle = entry
        if oldestIdle == nil { oldestIdle = entry }
        entry.isListed = true
        entry.isUsedSinceListed = false
    }

    private mutating func unlinkIdle(_ entry: Entry) {
        if let older = entry.older { older.newer = entry.newer } else { oldestIdle = entry.newer }
        if let newer = entry.newer { newer.older = entry.older } else { newestIdle = entry.older }
        entry.older = nil
        entry.newer = nil
        entry.isListed = false
        entry.isUsedSinceListed = false
    }
}

// An entry changes only through its LeasedLRU, which its owner keeps behind a lock.
extension LeasedLRU.Entry: @unchecked Sendable where Key: Sendable, Value: Sendable {}
extension LeasedLRU: @unchecked Sendable where Key: Sendable, Value: Sendable {}
