import DAOEngine
import Foundation
import Synchronization

/// Where a request's data lives, as HAProxy routes it (`daogate haproxy-config`) and a shard admits it.
public enum ShardSpace: Equatable, Sendable {
    /// No storage, or the shard's own (health, the description, the module list, admin reports).
    case anywhere
    /// The common space: common modules, bound files, `/kv/common`, common caches, a user-less purge or reset.
    case common
    /// A user's space.
    case user(String)
}

/// Why a shard refused a freeze.
public enum ShardError: Error, Sendable, CustomStringConvertible {
    /// The freeze marker could not be written.
    case storageFailed(String)
    /// Writes in flight did not finish in time; the bucket stays frozen.
    case busy(String)

    public var description: String {
        switch self {
        case .storageFailed(let detail), .busy(let detail): detail
        }
    }
}

/// One shard of a sharded deployment (`daogate serve --shard NAME --shard-map FILE`):
/// which buckets it owns (the map, read at start and on `POST /shard/reload`),
/// which of them are frozen for a move (writes refused with 503, reads go on),
/// and the writes in flight per bucket, which a freeze waits for.
///
/// A freeze is kept on disk (`shard/frozen-N` in the data folder) until the
/// bucket is archived or unfrozen, so a shard restarted in the middle of a
/// move still refuses the bucket's writes: no write lands on a copy that is
/// about to be left behind.
public final class Shard: Sendable {
    public let name: String
    public let mapPath: String
    /// The data folder (freeze markers, archives, imports in progress).
    public let dataFolder: DataFolder

    /// How long a bucket this shard gave away (in a reload) is answered 503 `bucket_moving` with `Retry-After`
    /// rather than 421: a request HAProxy routed here just before its map changed, and still queued when this
    /// shard read the new map, is retried through the proxy to the new owner instead of refused.
    let handoverGrace: Duration

    struct State {
        var map: ShardMap
        var frozen: Set<Int>
        var writes: [Int: Int] = [:]
        /// Buckets given away in a reload, and when: within `handoverGrace` they are a moment's 503.
        var givenAway: [Int: ContinuousClock.Instant] = [:]
    }

    let state: Mutex<State>

    public init(name: String, mapPath: String, dataDirectory: String, handoverGrace: Duration = .seconds(5)) throws(ShardMapError) {
        let map = try ShardMap(contentsOf: mapPath)
        guard map.shards[name] != nil else {
            throw ShardMapError("the shard map \(mapPath) has no shard named \(name) (it names \(map.shards.keys.sorted().joined(separator: ", ")))")
        }
        self.name = name
        self.mapPath = mapPath
        self.dataFolder = DataFolder(root: dataDirectory)
        self.handoverGrace = handoverGrace
        var frozen = Set<Int>()
        for file in (try? FileManager.default.contentsOfDirectory(atPath: dataFolder.shardState)) ?? [] {
            if let bucket = DataFolder.frozenBucket(marker: file) { frozen.insert(bucket) }
        }
        state = Mutex(State(map: map, frozen: frozen))
    }

    public var map: ShardMap { state.withLock { $0.map } }

    /// Reads the map file again; the map's shard must still be named in it.
    @discardableResult
    public func reload() throws(ShardMapError) -> ShardMap {
        let map = try ShardMap(contentsOf: mapPath)
        guard map.shards[name] != nil else { throw ShardMapError("the shard map \(mapPath) no longer names shard \(name)") }
        let now = ContinuousClock.now
        state.withLock { state in
            state.givenAway = state.givenAway.filter { now - $0.value < handoverGrace }
            for bucket in state.map.owners.indices where bucket < map.owners.count
                && state.map.owners[bucket] == name && map.owners[bucket] != name {
                state.givenAway[bucket] = now
            }
            for bucket in map.owners.indices where map.owners[bucket] == name { state.givenAway[bucket] = nil }
            state.map = map
        }
        return map
    }

    /// What the shard does with a request for a bucket.
    public enum Admission: Equatable, Sendable {
        /// Served; a write is counted in flight until `finish`.
        case admitted
        /// Another shard owns the bucket (421).
        case misdirected(owner: String, epoch: Int64)
        /// Another shard owns the bucket since this one read the map, moments ago (503, retried to the owner).
        case handedOver(owner: String, epoch: Int64)
        /// A write to a bucket being moved (503).
        case frozen
    }

    /// Admits a request for a space: its bucket (nil for the common space and anywhere) and what the shard
    /// does with it. An admitted write is counted in flight until `finish(bucket:)`.
    public func admit(_ space: ShardSpace, write: Bool) -> (bucket: Int?, admission: Admission) {
        switch space {
        case .anywhere: return (nil, .admitted)
        case .common: return (nil, admitCommon())
        case .user(let user):
            let bucket = ShardMap.bucket(of: user, buckets: map.buckets)
            return (bucket, admit(bucket: bucket, write: write))
        }
    }

    func admit(bucket: Int, write: Bool) -> Admission {
        state.withLock { state in
            guard state.map.owners[bucket] == name else {
                if let given = state.givenAway[bucket], ContinuousClock.now - given < handoverGrace {
                    return .handedOver(owner: state.map.owners[bucket], epoch: state.map.epoch)
                }
                return .misdirected(owner: state.map.owners[bucket], epoch: state.map.epoch)
            }
            guard write else { return .admitted }
            if state.frozen.contains(bucket) { return .frozen }
            state.writes[bucket, default: 0] += 1
            return .admitted
        }
    }

    /// The end of an admitted write.
    public func finish(bucket: Int) {
        state.withLock { state in
            state.writes[bucket, default: 1] -= 1
            if state.writes[bucket] == 0 { state.writes[bucket] = nil }
        }
    }

    /// Whether this shard serves the common space.
    func admitCommon() -> Admission {
        state.withLock { state in
            state.map.common == name ? .admitted : .misdirected(owner: state.map.common, epoch: state.map.epoch)
        }
    }

    private func markerPath(_ bucket: Int) -> String { dataFolder.freezeMarker(bucket: bucket) }

    /// Freezes a bucket's writes (kept on disk) and waits until those in flight are done.
    public func freeze(_ bucket: Int, timeout: Duration) throws(ShardError) {
        do {
            try FileManager.default.createDirectory(atPath: dataFolder.shardState, withIntermediateDirectories: true)
        } catch {
            throw .storageFailed("cannot write \(markerPath(bucket)): \(error.localizedDescription)")
        }
        guard FileManager.default.createFile(atPath: markerPath(bucket), contents: Data()) else {
            throw .storageFailed("cannot write \(markerPath(bucket))")
        }
        state.withLock { _ = $0.frozen.insert(bucket) }
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ $0.writes[bucket] ?? 0 }) > 0 {
            guard ContinuousClock.now < deadline else {
                throw .busy("writes to bucket \(bucket) did not finish within \(timeout); the bucket stays frozen, try again")
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// Lets a bucket's writes in again (a move abandoned, or done).
    public func unfreeze(_ bucket: Int) {
        try? FileManager.default.removeItem(atPath: markerPath(bucket))
        state.withLock { _ = $0.frozen.remove(bucket) }
    }

    public func isFrozen(_ bucket: Int) -> Bool { state.withLock { $0.frozen.contains(bucket) } }
    public var frozenBuckets: [Int] { state.withLock { $0.frozen.sorted() } }
}
