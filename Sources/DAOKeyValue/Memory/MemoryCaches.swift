import DAOEngine
import Synchronization

/// The memory caches of a process, by name within each storage location,
/// all counting their bytes in one budget, each in its owner's share of it:
/// a user's caches (in every storage) count in that user's share, the common
/// spaces' caches (of every storage) in the common share.
///
/// The reference's callers hold their `APLRUMemoryCache` instances; a
/// server's clients cannot, so caches are named and live here until deleted
/// or until their storage is reset. The registry's lock guards only the
/// names: operations on a cache take that cache's own lock.
public final class MemoryCaches: Sendable {
    /// The bounds clients cannot go past.
    public struct Limits: Sendable {
        /// The largest capacity one cache may have.
        public var maximumCapacity: Int
        /// The most caches one storage location may have.
        public var maximumCachesPerLocation: Int
        /// The bytes all caches may hold together.
        public var budgetBytes: Int
        /// The bytes one user's caches (or the common spaces') may hold
        /// together; nil: an eighth of `budgetBytes`.
        public var userBudgetBytes: Int?

        public init(maximumCapacity: Int = 100_000, maximumCachesPerLocation: Int = 16, budgetBytes: Int = 256 << 20,
                    userBudgetBytes: Int? = nil) {
            self.maximumCapacity = maximumCapacity
            self.maximumCachesPerLocation = maximumCachesPerLocation
            self.budgetBytes = budgetBytes
            self.userBudgetBytes = userBudgetBytes
        }

        /// The share one owner may hold: `userBudgetBytes`, or an eighth of the budget.
        public var shareBytes: Int { min(budgetBytes, userBudgetBytes ?? budgetBytes / 8) }
    }

    public let limits: Limits
    /// The budget every cache here counts its bytes in.
    public let budget: MemoryBudget
    private let registry = Mutex(Registry())

    /// A cache's identity: its location and name, hashed together so that a
    /// lookup is one dictionary probe and builds no string.
    struct CacheID: Hashable {
        let location: DatabaseLocation
        let name: String
    }

    struct Registry {
        var caches: [CacheID: MemoryCache] = [:]
        /// The names in each location, for the per-location limit, listing and drops.
        var names: [DatabaseLocation: Set<String>] = [:]

        mutating func remove(_ id: CacheID) -> MemoryCache? {
            guard let cache = caches.removeValue(forKey: id) else { return nil }
            names[id.location]?.remove(id.name)
            if names[id.location]?.isEmpty == true { names[id.location] = nil }
            return cache
        }
    }

    public init(limits: Limits = .init()) {
        self.limits = limits
        budget = MemoryBudget(bytes: limits.budgetBytes, shareBytes: limits.shareBytes)
    }

    /// Whose share a location's caches count in.
    static func owner(of location: DatabaseLocation) -> MemoryOwner {
        switch location {
        case .user(let user, _): .user(user.rawValue)
        case .common, .file: .common
        }
    }

    /// What a cache costs before it holds anything: `MemoryBudget.cacheOverhead`
    /// and the bytes of its name and location.
    static func overhead(of id: CacheID) -> Int {
        let location = switch id.location {
        case .user(let user, let storage): user.rawValue.utf8.count + (storage?.utf8.count ?? 0)
        case .common(let storage): storage?.utf8.count ?? 0
        case .file(let path): path.utf8.count
        }
        return MemoryBudget.cacheOverhead + id.name.utf8.count + location
    }

    /// Creates the cache `name` in `location` with `capacity`, or, when it
    /// exists, sets its capacity (evicting the least recently used entries
    /// beyond a smaller one). A new cache reserves its fixed cost
    /// (`overhead(of:)`) in its owner's share, evicting to make room as a
    /// write does.
    ///
    /// Throws `.invalidName` for a name that is not one, `.invalidValue` for
    /// a capacity below 1, `.limitExceeded` for one above `maximumCapacity`
    /// or for a cache past `maximumCachesPerLocation` in the location,
    /// `.memoryFull` when nothing is left to evict for its fixed cost.
    public func create(_ name: String, in location: DatabaseLocation, capacity: Int) throws(KeyValueError)
        -> (cache: MemoryCache, created: Bool, evicted: Int)
    {
        try Names.checkCacheName(name)
        guard capacity >= 1 else { throw KeyValueError(.invalidValue, "a cache's capacity is at least 1, not \(capacity)") }
        guard capacity <= limits.maximumCapacity else {
            throw KeyValueError(.limitExceeded, "a cache's capacity is at most \(limits.maximumCapacity), not \(capacity)")
        }
        let id = CacheID(location: location, name: name)
        func existing(_ registry: borrowing Registry) throws(KeyValueError) -> MemoryCache? {
            if let cache = registry.caches[id] { return cache }
            let count = registry.names[location]?.count ?? 0
            guard count < limits.maximumCachesPerLocation else {
                throw KeyValueError(.limitExceeded, "\(location) has \(count) memory caches, the most it may have")
            }
            return nil
        }
        if let cache = try registry.withLock({ registry throws(KeyValueError) in try existing(registry) }) {
            return (cache, false, cache.resize(capacity))
        }
        // The fixed cost is reserved outside the registry's lock (making
        // room evicts from other caches); a cache made meanwhile under the
        // same name wins, and this one goes.
        let fresh = MemoryCache(capacity: capacity, budget: budget, owner: Self.owner(of: location))
        do {
            try fresh.reserveOverhead(Self.overhead(of: id))
        } catch {
            fresh.close()
            throw error
        }
        let (cache, created) = try registry.withLock { registry throws(KeyValueError) -> (MemoryCache, Bool) in
            if let cache = try existing(registry) { return (cache, false) }
            registry.caches[id] = fresh
            registry.names[location, default: []].insert(name)
            return (fresh, true)
        }
        if !created { fresh.close() }
        // Resizing takes the cache's lock, not the registry's: other caches'
        // lookups need not wait for the evictions. A cache deleted meanwhile
        // comes back closed, as if deleted right after: writes to it answer
        // .unknownCache.
        return (cache, created, created ? 0 : cache.resize(capacity))
    }

    /// The cache `name` in `location`; `.unknownCache` when there is none.
    /// On the path of every cache request: one lock, one dictionary probe.
    public func cache(_ name: String, in location: DatabaseLocation) throws(KeyValueError) -> MemoryCache {
        let id = CacheID(location: location, name: name)
        guard let cache = registry.withLock({ $0.caches[id] }) else {
            throw KeyValueError(.unknownCache, "\(location) has no memory cache named '\(name)'")
        }
        return cache
    }

    /// Deletes the cache `name` in `location`, releasing its bytes; false
    /// when there was none. A caller still holding it finds it empty and
    /// its writes refused (`.unknownCache`).
    @discardableResult
    public func delete(_ name: String, in location: DatabaseLocation) -> Bool {
        guard let cache = registry.withLock({ $0.remove(CacheID(location: location, name: name)) }) else { return false }
        cache.close()
        return true
    }

    /// The caches of `location`, by name.
    public func list(in location: DatabaseLocation) -> [(name: String, capacity: Int, count: Int)] {
        let caches = registry.withLock { registry in
            (registry.names[location] ?? []).compactMap { name in registry.caches[CacheID(location: location, name: name)].map { (name, $0) } }
        }
        return caches.sorted { $0.0 < $1.0 }.map { name, cache in
            let info = cache.info
            return (name, info.capacity, info.count)
        }
    }

    /// Deletes the caches of a storage's locations, for its reset, and
    /// answers how many. `storage` nil is the default storage; `user` nil
    /// takes the storage's common location and every user's in it, a user
    /// only that user's location. Locations bound to a file are never taken.
    @discardableResult
    public func drop(storage: String?, user: UserID?) -> Int {
        let dropped = registry.withLock { registry -> [MemoryCache] in
            let ids = registry.caches.keys.filter { $0.location.isIn(storage: storage, user: user) }
            return ids.compactMap { registry.remove($0) }
        }
        for cache in dropped { cache.close() }
        return dropped.count
    }

    /// Removes the expired entries of the caches in the same scope as
    /// `drop(storage:user:)`, and answers how many and their bytes.
    @discardableResult
    public func purgeExpired(storage: String?, user: UserID?, now: Double) -> (entries: Int, bytes: Int) {
        purge(now: now) { $0.isIn(storage: storage, user: user) }
    }

    /// Removes the expired entries of every cache: what a periodic sweep does.
    @discardableResult
    public func purgeExpired(now: Double) -> (entries: Int, bytes: Int) {
        purge(now: now) { _ in true }
    }

    private func purge(now: Double, where inScope: (DatabaseLocation) -> Bool) -> (entries: Int, bytes: Int) {
        let caches = registry.withLock { registry in registry.caches.filter { inScope($0.key.location) }.map(\.value) }
        return caches.reduce(into: (entries: 0, bytes: 0)) { total, cache in
            let purged = cache.purgeExpired(now: now)
            total.entries += purged.entries
            total.bytes += purged.bytes
        }
    }
}
