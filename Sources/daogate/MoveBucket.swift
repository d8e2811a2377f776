#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import DAOValue
import Foundation
import Sharding

/// `daogate move-bucket`: moves one bucket of users from its shard to another while traffic runs.
///
/// 0. the preconditions, checked before anything changes: the target answers as that shard and takes the
///    admin token, so does the source, and HAProxy (when given) knows the map file (`show map` lists it, in
///    whatever spelling: both sides are resolved, symlinks and `..` included), which is writable;
/// 1. the target imports the bucket: it freezes it on the source (writes 503 `bucket_moving`, reads go on;
///    the freeze is kept on the source's disk), fetches a consistent copy of each file (`VACUUM INTO`),
///    checks each and installs them. A failure here is rolled back (the source's freeze lifted);
/// 2. the commit, the point of no return: the shard map is written with the bucket on the target and the
///    epoch one higher (a rename: the map names one owner before and one after);
/// 3. the target reads the map (it serves the bucket), HAProxy's map is updated on its runtime API (`set map`,
///    no reload) and in its file, and the other shards read the map (the source answers 421 for the bucket);
/// 4. every other shard that still has the bucket frozen removes its files (copies stay under `archive/`).
///
/// A failure after the commit is completed by running the same command again (it skips the copy once the
/// map names the target); the error says which of the two happened.
struct MoveBucket: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "move-bucket",
        abstract: "Move one bucket of users to another shard, while traffic runs (see docs/scaling.md)."
    )

    @Argument(help: "The bucket (0 to the map's buckets - 1).")
    var bucket: Int

    @Option(help: "The shard to move it to.")
    var to: String

    @Option(help: "The shard map file (the shards' --shard-map).")
    var shardMap: String

    @Option(help: "A file holding the shards' admin token (DAOGATE_ADMIN_TOKEN_FILE; or the token itself in DAOGATE_ADMIN_TOKEN).")
    var adminTokenFile: String?

    @Option(help: "HAProxy's runtime API socket (a unix socket path): the map is updated there without a reload.")
    var haproxySocket: String?

    @Option(help: "HAProxy's buckets.map, in any spelling of the path its configuration names (from daogate haproxy-config).")
    var haproxyMap: String?

    func validate() throws {
        guard (haproxySocket == nil) == (haproxyMap == nil) else { throw ValidationError("--haproxy-socket and --haproxy-map go together") }
        guard bucket >= 0 else { throw ValidationError("the bucket is a number from 0") }
    }

    func run() throws {
        let token = try adminToken()
        let started = ContinuousClock.now
        var progress = TerminalProgress(command: "move-bucket")
        // Each step's line ends with the seconds since the start: a slow step (a shard's name slow to resolve,
        // a large bucket) shows where.
        func seconds() -> Double {
            (ContinuousClock.now - started).seconds
        }
        func at() -> String { String(format: " (%.2f s)", seconds()) }
        var map = try readMap()
        guard (0..<map.buckets).contains(bucket) else {
            throw RunFailure("the shard map \(shardMap) has buckets 0 to \(map.buckets - 1), not \(bucket)")
        }
        guard let targetAddress = map.shards[to] else {
            throw RunFailure("the shard map \(shardMap) has no shard \(to) (its shards: \(map.shards.keys.sorted().joined(separator: ", ")))")
        }
        let target = ShardClient(address: targetAddress, token: token)
        let source = map.owners[bucket]
        let committed = source == to

        // 0. Preconditions: nothing has changed yet.
        func unchanged(_ what: String) -> RunFailure { RunFailure("\(what); nothing was changed") }
        try Self.checkShard(target, named: to, unchanged)
        if !committed { try Self.checkShard(ShardClient(address: map.shards[source]!, token: token), named: source, unchanged) }
        var haproxyTarget: (name: String, file: String)?
        if let haproxySocket, let haproxyMap {
            haproxyTarget = try Self.haproxyMap(haproxyMap, socket: haproxySocket, unchanged)
        }
        if !committed, access((URL(fileURLWithPath: shardMap).resolvingSymlinksInPath().path as NSString).deletingLastPathComponent, W_OK) != 0 {
            throw unchanged("the shard map's folder (\(shardMap)) is not writable")
        }

        var summary: [String: Value] = ["bucket": .integer(Int64(bucket)), "to": .string(to)]
        if !committed {
            summary["from"] = .string(source)
            // 1. The import, rolled back on failure: the source lets the bucket's writes in again.
            progress.status("[1/4] shard \(to) imports bucket \(bucket) from shard \(source) (its writes wait meanwhile)")
            func rolledBack(_ what: String) -> RunFailure {
                let source = ShardClient(address: map.shards[source]!, token: token)
                do {
                    try source.unfreeze(bucket: bucket)
                    return RunFailure("\(what); rolled back: bucket \(bucket) stays on shard \(map.owners[bucket]) and takes writes again")
                } catch {
                    return RunFailure("\(what); not committed, but the rollback failed (\(error)): bucket \(bucket) stays on shard \(map.owners[bucket]), frozen; run the same command again, or POST /shard/unfreeze {\"bucket\": \(bucket)} to it")
                }
            }
            let imported: Value
            do {
                imported = try target.importBucket(bucket, from: source)
            } catch {
                throw rolledBack("the import into shard \(to) failed: \(error)")
            }
            let files = imported[member: "files"]?.arrayValue?.count ?? 0
            let bytes = imported[member: "bytes"] ?? 0
            summary["files"] = .integer(Int64(files))
            summary["bytes"] = bytes
            progress.line("[1/4] shard \(to) imported bucket \(bucket) from shard \(source): \(files) database\(files == 1 ? "" : "s"), "
                + TerminalProgress.bytes(bytes.integerValue ?? 0) + at())
            // 2. The commit: only if nobody changed the map meanwhile.
            guard (try? readMap()) == map else { throw rolledBack("the shard map changed during the move") }
            map.owners[bucket] = to
            map.epoch += 1
            do {
                try map.write(to: shardMap)
            } catch {
                throw rolledBack(error.description)
            }
            progress.line("[2/4] committed: the shard map gives bucket \(bucket) to shard \(to) (epoch \(map.epoch))" + at())
        } else {
            progress.line("[2/4] the shard map already gives bucket \(bucket) to shard \(to) (epoch \(map.epoch)): finishing the move")
        }
        // 3. and 4. After the commit: a failure is completed by the same command.
        func completeLater(_ what: String) -> RunFailure {
            RunFailure("\(what); bucket \(bucket) is committed to shard \(to) (shard map epoch \(map.epoch)): run the same command again to complete the move")
        }
        summary["epoch"] = .integer(map.epoch)
        do {
            try target.reloadMap()
        } catch {
            throw completeLater("shard \(to) did not reload the map: \(error)")
        }
        if let haproxySocket, let haproxyTarget {
            do {
                try Data(HAProxyConfiguration.bucketsMap(map).utf8).write(to: URL(fileURLWithPath: haproxyTarget.file), options: .atomic)
                try HAProxyRuntime(socket: haproxySocket).run("set map \(haproxyTarget.name) \(bucket) \(to)")
            } catch {
                throw completeLater("HAProxy's map was not updated: \(error)")
            }
            progress.line("[3/4] shard \(to) serves bucket \(bucket), and HAProxy routes it there" + at())
        } else {
            progress.line("[3/4] shard \(to) serves bucket \(bucket)" + at())
        }
        var pending: [String] = []
        let others = map.shards.sorted(by: { $0.key < $1.key }).filter { $0.key != to }
        for (index, (name, address)) in others.enumerated() {
            progress.status("[4/4] the other shards read the map: \(index) of \(others.count)")
            let shard = ShardClient(address: address, token: token)
            do {
                let status = try shard.reloadMap()
                if status[member: "frozen"]?.arrayValue?.contains(.integer(Int64(bucket))) == true {
                    try shard.archive(bucket: bucket)
                    progress.line("[4/4] shard \(name) archived its copy of bucket \(bucket)" + at())
                }
            } catch {
                printToStandardError("daogate move-bucket: shard \(name): \(error); bucket \(bucket) is committed to shard \(to): run the same command again once it answers")
                pending.append(name)
            }
        }
        let total = seconds()
        progress.line("[4/4] \(others.count - pending.count) of \(others.count) other shards read the map; "
            + (pending.isEmpty ? "done" : "pending: \(pending.joined(separator: ", "))") + " in \((total * 100).rounded() / 100) s")
        summary["seconds"] = .double(total)
        summary["pending"] = .array(pending.map { .string($0) })
        var object = OrderedObject()
        for key in summary.keys.sorted() { object[key] = summary[key] }
        print(String(decoding: Value.object(object).jsonBytes(), as: UTF8.self))
        if !pending.isEmpty { throw ExitCode(2) }
    }

    /// A shard answers `GET /shard` with the admin token, as the shard the map names at that address.
    static func checkShard(_ client: ShardClient, named name: String, _ unchanged: (String) -> RunFailure) throws {
        let status: Value
        do {
            status = try client.status()
        } catch {
            throw unchanged("shard \(name) at \(client.address) does not serve the move (is it up, and is the admin token its?): \(error)")
        }
        guard case .string(let answered)? = status[member: "shard"], answered == name else {
            throw unchanged("\(client.address) is not shard \(name) (it answers as \(status[member: "shard"]?.stringValue ?? "no shard"))")
        }
    }

    /// The map HAProxy knows as `path` (`HAProxyRuntime.map`), or a failure that changed nothing.
    static func haproxyMap(_ path: String, socket: String, _ unchanged: (String) -> RunFailure) throws -> (name: String, file: String) {
        do {
            return try HAProxyRuntime(socket: socket).map(path)
        } catch {
            throw unchanged(error.description)
        }
    }

    private func readMap() throws -> ShardMap {
        do {
            return try ShardMap(contentsOf: shardMap)
        } catch {
            throw RunFailure("\(error)")  // it names the file
        }
    }

    private func adminToken() throws -> String? {
        let environment = ProcessInfo.processInfo.environment
        let file = OptionSource(environment).text(adminTokenFile, "admin-token-file")
        return try Settings.adminToken(file: file, environment: environment)
    }
}
