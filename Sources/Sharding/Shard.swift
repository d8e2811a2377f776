import DAOEngine
import DAOValue
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
/// and the requests in flight per bucket: the writes, which a freeze waits for, and the reads, which with the
/// writes the removal of a bucket given away waits for (`drain`); and whether a peer has a newer map
/// (`checkPeers`), in which case the shard serves none of its spaces until its own map catches up.
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
        /// The reads in flight per bucket, which the removal of a bucket given away waits for (`drain`).
        var reads: [Int: Int] = [:]
        /// Buckets given away in a reload, and when: within `handoverGrace` they are a moment's 503.
        var givenAway: [Int: ContinuousClock.Instant] = [:]
        /// A peer's newer map epoch, while this shard's map is older: its spaces are refused (421) until its map catches up.
        var behind: NewerMap?
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
            // A shard behind its peers served none of its buckets: nothing it gives away now was in flight here.
            for bucket in state.map.owners.indices where state.behind == nil && bucket < map.owners.count
                && state.map.owners[bucket] == name && map.owners[bucket] != name {
                state.givenAway[bucket] = now
            }
            for bucket in map.owners.indices where map.owners[bucket] == name { state.givenAway[bucket] = nil }
            state.map = map
            if let behind = state.behind, map.epoch >= behind.epoch { state.behind = nil }
        }
        return map
    }

    // MARK: The peers' epochs

    /// A newer map than this shard's, as a peer answered it.
    public struct NewerMap: Equatable, Sendable {
        /// The newest epoch a peer answered.
        public var epoch: Int64
        /// The shard that answered it (its name in this shard's map).
        public var shard: String
    }

    /// What a check of the peers' epochs found, and what it changed.
    public struct EpochCheck: Sendable {
        /// The shards of this shard's map that answered, and those that did not (down, slow, refusing the token).
        public var answered: [String] = []
        public var unanswered: [String] = []
        /// The map file read again because a peer's epoch was newer, when it was newer than the map in use.
        public var reloaded: ShardMap?
        /// The newer map a peer has, while this shard's map is older; nil when this shard's map is current.
        public var behind: NewerMap?
        /// Whether this check changed the shard's state (now behind, or current again): what is logged, once.
        public var changed = false
    }

    /// Asks every other shard of the map its epoch (`GET /shard`, the admin token, `timeout` seconds each, all
    /// at once). If any answers an epoch newer than this shard's map, the map file is read again (it may have
    /// been rewritten already: a shared file, a move's commit); if it is still older, the shard stops serving
    /// the spaces it believes it owns (`Admission.behind`) until its map is at least that epoch. While behind,
    /// every check reads the map file again, peers answering or not. A peer that does not answer changes
    /// nothing: a shard starts when the others are down.
    @discardableResult
    public func checkPeers(token: String?, timeout: Int = 2) -> EpochCheck {
        let wasBehind = behind != nil
        var check = EpochCheck()
        check.reloaded = try? reloadIfFileNewer(than: behind?.epoch)
        let map = self.map
        let peers = map.shards.filter { $0.key != name }.sorted { $0.key < $1.key }
        let epochs = Mutex([String: Int64]())
        DispatchQueue.concurrentPerform(iterations: peers.count) { index in
            var client = ShardClient(address: peers[index].value, token: token)
            client.timeout = timeout
            // A peer whose name does not resolve is down for this check: the start is not held up asking again.
            client.resolutionPatience = .zero
            // Only the shard the map names there counts (an address given to another deployment's shard does not).
            if let status = try? client.status(), status[member: "shard"]?.stringValue == peers[index].key,
               case .integer(let epoch)? = status[member: "epoch"] {
                epochs.withLock { $0[peers[index].key] = epoch }
            }
        }
        let answers = epochs.withLock { $0 }
        check.answered = answers.keys.sorted()
        check.unanswered = peers.map(\.key).filter { answers[$0] == nil }
        let newest = answers.max { ($0.value, $1.key) < ($1.value, $0.key) }
        if let newest, newest.value > self.map.epoch, let reloaded = try? reloadIfFileNewer(than: newest.value) {
            check.reloaded = reloaded
        }
        state.withLock { state in
            var behind = state.behind
            if let newest, newest.value > state.map.epoch, newest.value > behind?.epoch ?? -1 {
                behind = NewerMap(epoch: newest.value, shard: newest.key)
            }
            if let current = behind, state.map.epoch >= current.epoch { behind = nil }
            state.behind = behind
            check.behind = behind
        }
        check.changed = wasBehind != (check.behind != nil)
        return check
    }

    /// The newer map a peer has, while this shard's is older; nil when current.
    public var behind: NewerMap? { state.withLock { $0.behind } }

    /// Reads the map file again and takes it (`reload`) when it is newer than the map in use; nil when it is
    /// not, or when `epoch` is nil (nothing newer is known, and a map file is otherwise read on `POST /shard/reload`).
    private func reloadIfFileNewer(than epoch: Int64?) throws(ShardMapError) -> ShardMap? {
        guard epoch != nil else { return nil }
        let file = try ShardMap(contentsOf: mapPath)
        guard file.epoch > map.epoch else { return nil }
        return try reload()
    }

    /// What the shard does with a request for a bucket.
    public enum Admission: Equatable, Sendable {
        /// Served; counted in flight until `finish`.
        case admitted
        /// Another shard owns the bucket (421).
        case misdirected(owner: String, epoch: Int64)
        /// Another shard owns the bucket since this one read the map, moments ago (503, retried to the owner).
        case handedOver(owner: String, epoch: Int64)
        /// A write to a bucket being moved (503).
        case frozen
        /// A space this shard's map gives it, while a peer has a newer map (421): the space may be another's now.
        case behind(NewerMap, mapEpoch: Int64)
    }

    /// Admits a request for a space: its bucket (nil for the common space and anywhere) and what the shard
    /// does with it. An admitted request for a bucket is counted in flight until `finish(bucket:write:)`.
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
            if let behind = state.behind { return .behind(behind, mapEpoch: state.map.epoch) }
            guard write else {
                state.reads[bucket, default: 0] += 1
                return .admitted
            }
            if state.frozen.contains(bucket) { return .frozen }
            state.writes[bucket, default: 0] += 1
            return .admitted
        }
    }

    /// The end of an admitted request for a bucket.
    public func finish(bucket: Int, write: Bool) {
        state.withLock { state in
            if write {
                state.writes[bucket, default: 1] -= 1
                if state.writes[bucket] == 0 { state.writes[bucket] = nil }
            } else {
                state.reads[bucket, default: 1] -= 1
                if state.reads[bucket] == 0 { state.reads[bucket] = nil }
            }
        }
    }

    /// Waits until no request this shard admitted for a bucket is in flight: once the map gives the bucket away
    /// nothing more is admitted for it, and a read admitted just before, which would open (and so create) a
    /// user's file, ends before the bucket's files are removed (`POST /shard/archive`).
    public func drain(_ bucket: Int, timeout: Duration) throws(ShardError) {
        let deadline = ContinuousClock.now + timeout
        while inFlight(bucket) != (reads: 0, writes: 0) {
            guard ContinuousClock.now < deadline else {
                throw .busy("requests for bucket \(bucket) admitted before the map gave it away did not finish within \(timeout); try again")
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// The requests admitted for a bucket and not yet finished: reads and writes.
    public func inFlight(_ bucket: Int) -> (reads: Int, writes: Int) {
        state.withLock { ($0.reads[bucket] ?? 0, $0.writes[bucket] ?? 0) }
    }

    /// Whether this shard serves the common space.
    func admitCommon() -> Admission {
        state.withLock { state in
            guard state.map.common == name else { return .misdirected(owner: state.map.common, epoch: state.map.epoch) }
            if let behind = state.behind { return .behind(behind, mapEpoch: state.map.epoch) }
            return .admitted
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
