import ArgumentParser
import DAOValue
import Foundation
import Gateway
import Sharding

/// `daogate failover SHARD --to SPARE`: a lost shard's buckets to a spare, from the lost shard's Litestream replica.
///
/// 0. the preconditions, before anything changes: the lost shard does not answer (a shard that answers is moved
///    with `move-bucket`, which loses no write), the spare answers as the shard the map names and takes the
///    admin token, HAProxy knows its map file, the map's folder is writable;
/// 1. the restore: every database of the lost shard's buckets (and, if it held the common space, the common
///    files) from its replica into the spare's data folder (`--spare-data`: the command runs on the spare's
///    machine), each checked. Anything the spare had of those buckets goes (it served none of them);
/// 2. the commit: the shard map gives those buckets (and the common space) to the spare, epoch one higher;
/// 3. the spare reads the map, HAProxy's map is updated (runtime API and file), the other shards read the map.
///    The lost shard, if it comes back, answers 421 for those buckets: from the new map if it reads it, else
///    because its peers answer a newer epoch than its own copy of the map (`Shard.checkPeers`).
///
/// Interrupted before the commit, the same command starts again (the restore is overwritten); after it, the
/// same command completes steps 3 (the map then gives the lost shard no bucket).
struct Failover: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move every bucket of a lost shard to a spare shard, restoring them from its Litestream replica (see docs/scaling.md)."
    )

    @Argument(help: "The lost shard (a name in the shard map).")
    var shard: String

    @Option(help: "The spare shard that takes its buckets (a name in the shard map, serving).")
    var to: String

    @Option(help: "The shard map file (the shards' --shard-map).")
    var shardMap: String

    @Option(help: "The lost shard's replica (what its litestream-config was given).")
    var replica: String

    @Option(help: "The spare's data folder, on this machine (failover runs beside the spare).")
    var spareData: String

    @Option(help: "A file holding the shards' admin token (DAOGATE_ADMIN_TOKEN_FILE; or the token itself in DAOGATE_ADMIN_TOKEN).")
    var adminTokenFile: String?

    @Option(help: "HAProxy's runtime API socket (a unix socket path).")
    var haproxySocket: String?

    @Option(help: "HAProxy's buckets.map, in any spelling of the path its configuration names.")
    var haproxyMap: String?

    @OptionGroup var restoring: RestoreOptions

    func validate() throws {
        _ = try Replica(replica)
        guard (haproxySocket == nil) == (haproxyMap == nil) else { throw ValidationError("--haproxy-socket and --haproxy-map go together") }
        guard shard != to else { throw ValidationError("the spare is another shard than the lost one") }
    }

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let token = try Settings.adminToken(file: OptionSource(environment).text(adminTokenFile, "admin-token-file"),
                                            environment: environment)
        let started = ContinuousClock.now
        var progress = TerminalProgress(command: "failover")
        var map: ShardMap
        do { map = try ShardMap(contentsOf: shardMap) } catch { throw RunFailure("\(error)") }
        guard let lostAddress = map.shards[shard] else { throw RunFailure("the shard map \(shardMap) has no shard \(shard)") }
        guard let spareAddress = map.shards[to] else { throw RunFailure("the shard map \(shardMap) has no shard \(to)") }
        let spare = ShardClient(address: spareAddress, token: token)
        let buckets = map.owners.indices.filter { map.owners[$0] == shard }
        let common = map.common == shard
        let committed = buckets.isEmpty && !common

        // 0. Preconditions.
        func unchanged(_ what: String) -> RunFailure { RunFailure("\(what); nothing was changed") }
        try MoveBucket.checkShard(spare, named: to, unchanged)
        var haproxyTarget: (name: String, file: String)?
        if let haproxySocket, let haproxyMap {
            haproxyTarget = try MoveBucket.haproxyMap(haproxyMap, socket: haproxySocket, unchanged)
        }
        var summary: [String: Value] = ["shard": .string(shard), "to": .string(to)]
        if !committed {
            if (try? ShardClient(address: lostAddress, token: token).json("GET", "/healthz")) != nil {
                throw unchanged("shard \(shard) at \(lostAddress) answers: a failover is for a shard that is gone (move a live shard's buckets with daogate move-bucket, which loses no write)")
            }
            if access((URL(fileURLWithPath: shardMap).resolvingSymlinksInPath().path as NSString).deletingLastPathComponent, W_OK) != 0 {
                throw unchanged("the shard map's folder (\(shardMap)) is not writable")
            }
            // 1. The restore: nothing is committed yet, the same command starts again.
            progress.line("[1/3] restoring \(buckets.count) bucket\(buckets.count == 1 ? "" : "s")\(common ? " and the common space" : "") of shard \(shard) from \(try Replica(replica).text) into \(spareData)")
            let owned = Set(buckets)
            let restored: Restore.Summary
            do {
                restored = try Restore.restore(from: try Replica(replica), into: spareData, choosing: { relative in
                    if let location = Restore.userLocation(relative) {
                        return owned.contains(ShardMap.bucket(of: location.user.rawValue, buckets: map.buckets))
                    }
                    return common
                }, timestamp: nil, force: true, litestream: restoring.program, parallel: restoring.parallel, command: "failover")
            } catch {
                throw unchanged("the restore failed: \(error)")
            }
            summary["databases"] = .integer(Int64(restored.files.count))
            summary["bytes"] = .integer(restored.bytes)
            summary["restoreSeconds"] = .double(restored.seconds)
            summary["buckets"] = .integer(Int64(buckets.count))
            // 2. The commit, if nobody changed the map meanwhile.
            guard (try? ShardMap(contentsOf: shardMap)) == map else { throw unchanged("the shard map changed during the restore") }
            for bucket in buckets { map.owners[bucket] = to }
            if common { map.common = to }
            map.epoch += 1
            do { try map.write(to: shardMap) } catch { throw unchanged(error.description) }
            progress.line("[2/3] committed: the shard map gives shard \(shard)'s buckets to shard \(to) (epoch \(map.epoch))")
        } else {
            progress.line("[2/3] the shard map gives shard \(shard) nothing (epoch \(map.epoch)): finishing the failover")
        }
        // 3. After the commit: a failure is completed by the same command.
        func completeLater(_ what: String) -> RunFailure {
            RunFailure("\(what); shard \(shard)'s buckets are committed to shard \(to) (shard map epoch \(map.epoch)): run the same command again to complete the failover")
        }
        summary["epoch"] = .integer(map.epoch)
        do {
            try spare.reloadMap()
        } catch {
            throw completeLater("shard \(to) did not reload the map: \(error)")
        }
        if let haproxySocket, let haproxyTarget {
            do {
                try Data(HAProxyConfiguration.bucketsMap(map).utf8).write(to: URL(fileURLWithPath: haproxyTarget.file), options: .atomic)
                // Every bucket of the spare (idempotent, so a second run completes a first), 200 commands at a time.
                let commands = map.owners.indices.filter { map.owners[$0] == to }.map { "set map \(haproxyTarget.name) \($0) \(to)" }
                for start in stride(from: 0, to: commands.count, by: 200) {
                    try HAProxyRuntime(socket: haproxySocket).run(commands[start..<min(start + 200, commands.count)].joined(separator: "; "))
                }
            } catch {
                throw completeLater("HAProxy's map was not updated: \(error)")
            }
            progress.line("[3/3] shard \(to) serves them, and HAProxy routes them there")
        }
        var pending: [String] = []
        for (name, address) in map.shards.sorted(by: { $0.key < $1.key }) where name != to && name != shard {
            do {
                try ShardClient(address: address, token: token).reloadMap()
            } catch {
                printToStandardError("daogate failover: shard \(name): \(error); run the same command again once it answers")
                pending.append(name)
            }
        }
        if common {
            printToStandardError("daogate failover: the common space moved to shard \(to): HAProxy routes it by its configuration; write it again with daogate haproxy-config and reload HAProxy")
        }
        summary["seconds"] = .double((ContinuousClock.now - started).seconds)
        summary["pending"] = .array(pending.map { .string($0) })
        var object = OrderedObject()
        for key in summary.keys.sorted() { object[key] = summary[key] }
        print(String(decoding: Value.object(object).jsonBytes(), as: UTF8.self))
        if !pending.isEmpty { throw ExitCode(2) }
    }
}
