import Foundation
import Sharding

/// A shard compares its map's epoch with its peers': at start, at `POST /shard/reload`, and every
/// `shardEpochInterval` after. A shard whose map is older than a peer's (a shard that comes back after a
/// failover with its own, unchanged copy of the map) answers its spaces 421 `misdirected_request` naming the
/// newer epoch, and, while behind, reads its map file again on each check: it serves once the file is current.
///
/// Peers that do not answer change nothing, so a shard starts when the others are down; a shard that starts
/// while no peer knowing the newer map answers serves its old map until one does, at most one interval
/// (plus the peers' timeout) after that peer answers again.
extension Gateway {
    /// How often a shard asks its peers their epoch (and, while behind, reads its map file again).
    public static let shardEpochInterval: Duration = .seconds(5)
    /// How long a peer has to answer, seconds: a peer down or unreachable costs one check this long, no more.
    public static let shardPeerTimeout = 2

    /// One check: while behind, the map file read again; then the peers asked. A change (now behind, now
    /// current again) is logged once, with its reason.
    func checkShardEpochs(_ shard: Shard, reason: String) {
        let logger = events.logger
        let check = shard.checkPeers(token: configuration.adminToken, timeout: Self.shardPeerTimeout)
        if let map = check.reloaded {
            endStreamsElsewhere(shard)
            logger?.notice("\(reason): a peer's shard map is newer: shard \(shard.name) read its map file \(shard.mapPath) again, epoch \(map.epoch)")
        }
        guard check.changed else { return }
        if let newer = check.behind {
            logger?.error("\(reason): shard \(newer.shard) has shard map epoch \(newer.epoch), this shard's map \(shard.mapPath) is epoch \(shard.map.epoch): shard \(shard.name) answers its users' and common spaces 421 misdirected_request until its map file is at least epoch \(newer.epoch) (it reads the file again every \(Self.shardEpochInterval) and on POST /shard/reload)")
        } else {
            logger?.notice("\(reason): shard \(shard.name)'s map is current again (epoch \(shard.map.epoch)); it serves its spaces")
        }
    }

    /// At start, before the server listens: the first check (peers down do not hold the start up beyond their
    /// timeout), then a thread repeating it every `shardEpochInterval` until the server stops (`ServerState.stopWatching`). Nothing on a server that is no shard.
    public func watchShardEpochs() {
        guard let shard = configuration.shard else { return }
        let gateway = self
        gateway.checkShardEpochs(shard, reason: "start")
        let interval = Double(Self.shardEpochInterval.components.seconds)
        Thread.detachNewThread {
            while gateway.state.isWatching {
                Thread.sleep(forTimeInterval: interval)
                if gateway.state.isWatching { gateway.current.checkShardEpochs(shard, reason: "epoch check") }
            }
        }
    }
}
