#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import DAOValue
import Foundation
import Gateway

/// `daogate move-bucket`: moves one bucket of users from its shard to another while traffic runs.
///
/// 1. the target imports the bucket: it freezes it on the source (writes 503 `bucket_moving`, reads go on;
///    the freeze is kept on the source's disk), fetches a consistent copy of each file (`VACUUM INTO`),
///    checks each (`PRAGMA integrity_check`) and installs it;
/// 2. the commit: the shard map is written with the bucket on the target and the epoch one higher (a rename:
///    the map names one owner before and one after);
/// 3. the target reads the map (it serves the bucket), HAProxy's map is updated on its runtime API (`set map`,
///    no reload) and in its file, and the other shards read the map (the source answers 421 for the bucket);
/// 4. every other shard that still has the bucket frozen removes its files (copies stay under `archive/`).
///
/// Interrupted before the commit, the source still owns the bucket (frozen until the move is run again, or
/// `POST /shard/unfreeze`); after it, the target does. Running the same command again finishes either way.
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

    @Option(help: "HAProxy's buckets.map, as its configuration names it (from daogate haproxy-config).")
    var haproxyMap: String?

    func validate() throws {
        guard (haproxySocket == nil) == (haproxyMap == nil) else { throw ValidationError("--haproxy-socket and --haproxy-map go together") }
        guard bucket >= 0 else { throw ValidationError("the bucket is a number from 0") }
    }

    func run() throws {
        let token = try adminToken()
        let started = ContinuousClock.now
        var progress = TerminalProgress(command: "move-bucket")
        var map = try readMap()
        guard (0..<map.buckets).contains(bucket) else {
            throw RunFailure("the shard map \(shardMap) has buckets 0 to \(map.buckets - 1), not \(bucket)")
        }
        guard let targetAddress = map.shards[to] else {
            throw RunFailure("the shard map \(shardMap) has no shard \(to) (its shards: \(map.shards.keys.sorted().joined(separator: ", ")))")
        }
        let target = ShardClient(address: targetAddress, token: token)
        var summary: [String: Value] = ["bucket": .integer(Int64(bucket)), "to": .string(to)]
        if map.owners[bucket] != to {
            let source = map.owners[bucket]
            summary["from"] = .string(source)
            progress.status("[1/4] shard \(to) imports bucket \(bucket) from shard \(source) (its writes wait meanwhile)")
            let imported: Value
            do {
                imported = try target.json("POST", "/shard/import", ["bucket": .integer(Int64(bucket)), "from": .string(map.shards[source]!)])
            } catch {
                throw RunFailure("shard \(to) did not import bucket \(bucket) from shard \(source); nothing was committed: \(error)")
            }
            let files = imported[member: "files"]?.arrayValue?.count ?? 0
            let bytes = imported[member: "bytes"] ?? 0
            summary["files"] = .integer(Int64(files))
            summary["bytes"] = bytes
            progress.line("[1/4] shard \(to) imported bucket \(bucket) from shard \(source): \(files) database\(files == 1 ? "" : "s"), "
                + TerminalProgress.bytes(bytes.integerValue ?? 0))
            // The commit: only if nobody changed the map meanwhile.
            let current = try readMap()
            guard current == map else { throw RunFailure("the shard map \(shardMap) changed during the move; nothing was committed, run it again") }
            map.owners[bucket] = to
            map.epoch += 1
            do {
                try map.write(to: shardMap)
            } catch {
                throw RunFailure("\(error); nothing was committed")
            }
            progress.line("[2/4] committed: the shard map gives bucket \(bucket) to shard \(to) (epoch \(map.epoch))")
        } else {
            progress.line("[2/4] the shard map already gives bucket \(bucket) to shard \(to) (epoch \(map.epoch)): finishing the move")
        }
        summary["epoch"] = .integer(map.epoch)
        do {
            _ = try target.json("POST", "/shard/reload")
        } catch {
            throw RunFailure("shard \(to) did not read the shard map (the move is committed; run it again to finish): \(error)")
        }
        if let haproxySocket, let haproxyMap {
            do {
                try Data(HAProxyConfiguration.bucketsMap(map).utf8).write(to: URL(fileURLWithPath: haproxyMap), options: .atomic)
            } catch {
                throw RunFailure("cannot write HAProxy's map \(haproxyMap) (the move is committed; run it again to finish): \(error)")
            }
            try Self.haproxy(socket: haproxySocket, command: "set map \(haproxyMap) \(bucket) \(to)")
            progress.line("[3/4] shard \(to) serves bucket \(bucket), and HAProxy routes it there")
        } else {
            progress.line("[3/4] shard \(to) serves bucket \(bucket)")
        }
        var pending: [String] = []
        let others = map.shards.sorted(by: { $0.key < $1.key }).filter { $0.key != to }
        for (index, (name, address)) in others.enumerated() {
            progress.status("[4/4] the other shards read the map: \(index) of \(others.count)")
            let shard = ShardClient(address: address, token: token)
            do {
                let status = try shard.json("POST", "/shard/reload")
                if status[member: "frozen"]?.arrayValue?.contains(.integer(Int64(bucket))) == true {
                    _ = try shard.json("POST", "/shard/archive", ["bucket": .integer(Int64(bucket))])
                    progress.line("[4/4] shard \(name) archived its copy of bucket \(bucket)")
                }
            } catch {
                printToStandardError("daogate move-bucket: shard \(name): \(error); run the move again once it answers")
                pending.append(name)
            }
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        progress.line("[4/4] \(others.count - pending.count) of \(others.count) other shards read the map; "
            + (pending.isEmpty ? "done" : "pending: \(pending.joined(separator: ", "))") + " in \((seconds * 100).rounded() / 100) s")
        summary["seconds"] = .double(seconds)
        summary["pending"] = .array(pending.map { .string($0) })
        var object = OrderedObject()
        for key in summary.keys.sorted() { object[key] = summary[key] }
        print(String(decoding: Value.object(object).jsonBytes(), as: UTF8.self))
        if !pending.isEmpty { throw ExitCode(2) }
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
        let file = adminTokenFile ?? environment["DAOGATE_ADMIN_TOKEN_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        return try Settings.adminToken(file: file, environment: environment)
    }

    /// One command on HAProxy's runtime API; its answer must be empty (success) or it is an error.
    static func haproxy(socket path: String, command: String) throws {
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw RunFailure("cannot make a unix socket") }
        defer { close(socket) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw RunFailure("the socket path is too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw RunFailure("cannot connect to HAProxy's runtime API at \(path): \(String(cString: strerror(errno)))") }
        let line = Array((command + "\n").utf8)
        guard send(socket, line, line.count, Int32(MSG_NOSIGNAL)) == line.count else { throw RunFailure("cannot write to \(path)") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        let text = String(decoding: answer, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.isEmpty else { throw RunFailure("HAProxy refused '\(command)': \(text)") }
    }
}
