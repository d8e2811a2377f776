import ArgumentParser
import DAODialect
import Foundation
import Gateway
import Sharding

/// `daogate haproxy-config`: HAProxy's configuration and maps for a sharded deployment, from the routes' spaces,
/// the modules and the shard map, so that the proxy routes as the shards check.
struct HAProxyConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haproxy-config",
        abstract: "Write HAProxy's configuration and maps for shards of daogate (see docs/scaling.md).",
        discussion: """
            Writes haproxy.cfg, buckets.map (bucket → shard), common-paths.lst and common-prefixes.lst (what goes \
            to the common shard) and unavailable.http (the 503 of a shard that is down) into --out, and names \
            each file it wrote on standard error. Generate them again whenever the modules or the shard map change.
            """
    )

    @Option(help: "The folder of module files.")
    var modules: String = "modules"

    @Option(help: "The shard map file.")
    var shardMap: String

    @Option(help: "The folder to write the files into.")
    var out: String

    @Option(help: "Where HAProxy listens (bind), HOST:PORT.")
    var listen: String = "0.0.0.0:8080"

    @Option(help: "How the shards know the user: trusted-header (X-User-Id) or jwt (the token's user claim).")
    var auth: String = "trusted-header"

    @Option(help: "The token's claim naming the user, in jwt mode (as the shards' --jwt-user-claim).")
    var jwtUserClaim: String = "sub"

    @Option(help: "The folder HAProxy reads the files from (default: --out, made absolute); for a container, where they are mounted.")
    var configDirectory: String?

    @Option(help: "The runtime API's unix socket (default: haproxy.sock in the config folder).")
    var runtimeSocket: String?

    func validate() throws {
        switch auth {
        case "trusted-header": break
        case "jwt":
            guard jwtUserClaim.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw ValidationError("the user claim must be letters, digits and _ for HAProxy's JSON path")
            }
        default: throw ValidationError("auth must be jwt or trusted-header, not \(auth)")
        }
    }

    func run() throws {
        let (loaded, errors) = ModuleLoader.loadDirectory(modules)
        guard errors.isEmpty else {
            for error in errors { printToStandardError(error.description) }
            throw RunFailure("\(errors.count) problem\(errors.count == 1 ? "" : "s") in the modules of \(modules); nothing was written")
        }
        let map: ShardMap
        do {
            map = try ShardMap(contentsOf: shardMap)
        } catch {
            throw RunFailure("\(error)")  // it names the file
        }
        let user: HAProxyConfiguration.UserSource = auth == "jwt" ? .jwtClaim(jwtUserClaim) : .header
        let directory = configDirectory ?? URL(fileURLWithPath: out).standardizedFileURL.path
        let generator = HAProxyConfiguration(map: map, routing: Gateway.shardRouting(modules: loaded), listen: listen, user: user, directory: directory,
                                             runtimeSocket: runtimeSocket ?? directory + "/haproxy.sock")
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        } catch {
            throw RunFailure("cannot make the folder \(out): \(error)")
        }
        var written: [String] = []
        for file in generator.files {
            let path = URL(fileURLWithPath: out).appendingPathComponent(file.name).path
            do {
                try Data(file.content.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw RunFailure("cannot write \(path): \(error)")
            }
            written.append(path)
        }
        // What it wrote, on standard error (standard output stays empty): the files, and what to do with them.
        for path in written { printToStandardError("haproxy-config: wrote \(path)") }
        printToStandardError("haproxy-config: \(written.count) files for \(map.shards.count) shards and \(map.buckets) buckets; "
            + "HAProxy reads them from \(directory)")
    }
}
