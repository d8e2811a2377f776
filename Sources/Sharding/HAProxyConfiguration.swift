/// What HAProxy sends to the common shard rather than by the user's bucket: derived from the space each route
/// declares and from the modules (`Gateway.shardRouting`), the same declarations a shard admits requests by.
public struct ShardRouting: Sendable, Equatable {
    /// Paths of the common space, whole (still percent-encoded, as HAProxy sees them; a path spelled otherwise
    /// reaches a user's shard, which answers 421).
    public var commonPaths: [String]
    /// Prefixes of the common space's paths.
    public var commonPrefixes: [String]
    /// Paths whose space the `X-Space` header names (`/transaction`): common with `X-Space: common`.
    public var spaceHeaderPaths: [String]
    /// Paths whose space the `space` query parameter names (`/changes`): common with `?space=common`.
    public var spaceQueryPaths: [String]

    public init(commonPaths: [String], commonPrefixes: [String], spaceHeaderPaths: [String], spaceQueryPaths: [String]) {
        self.commonPaths = commonPaths
        self.commonPrefixes = commonPrefixes
        self.spaceHeaderPaths = spaceHeaderPaths
        self.spaceQueryPaths = spaceQueryPaths
    }
}

/// The HAProxy configuration of a sharded deployment, generated from the routes' spaces, the modules and the
/// shard map (as the OpenAPI document is generated from the routes and modules), so the proxy routes exactly
/// as the shards check:
///
/// - the common space (`ShardRouting`: a common module's `/dao/M/…` and `/modules/M…`, `/kv/common/…`, the
///   common caches, `/transaction` with `X-Space: common`, `/changes?space=common`), and any request without
///   a user, goes to the map's common shard;
/// - anything else goes by its user's bucket, `crc32(user) mod B`, looked up in `buckets.map` (kept current by
///   `set map` on the runtime socket during a move, without a reload).
///
/// A shard that is down answers, through the proxy, 503 `shard_unavailable` with `Retry-After: 1` (its users
/// only); the proxy never sends a user to another shard (no redispatch: each backend has one server).
public struct HAProxyConfiguration {
    public enum UserSource: Sendable {
        /// `X-User-Id`, as an authenticating proxy in front of HAProxy sets it.
        case header
        /// The payload claim of the bearer JWT (HAProxy reads it without verifying; the shard verifies it).
        case jwtClaim(String)
    }

    public var map: ShardMap
    /// What goes to the common shard (`Gateway.shardRouting`).
    public var routing: ShardRouting
    /// Where HAProxy listens, `host:port` (`bind`).
    public var listen: String
    public var user: UserSource
    /// The folder HAProxy reads the generated files from (the map, the path lists, the error page).
    public var directory: String
    /// The runtime API's unix socket (`set map` during a move).
    public var runtimeSocket: String
    /// Connections HAProxy opens to one shard at most: below the shard's `--max-connections-per-address`.
    public var serverConnections = 100

    public init(map: ShardMap, routing: ShardRouting, listen: String, user: UserSource, directory: String, runtimeSocket: String) {
        self.map = map
        self.routing = routing
        self.listen = listen
        self.user = user
        self.directory = directory
        self.runtimeSocket = runtimeSocket
    }

    /// The file names and their contents, all to be written in `directory`.
    public var files: [(name: String, content: String)] {
        [("haproxy.cfg", configuration), ("buckets.map", Self.bucketsMap(map)),
         ("common-paths.lst", Self.list(routing.commonPaths)), ("common-prefixes.lst", Self.list(routing.commonPrefixes)),
         ("unavailable.http", Self.unavailablePage)]
    }

    /// The HAProxy map of bucket → shard (a `map_int` file).
    public static func bucketsMap(_ map: ShardMap) -> String {
        "# bucket shard, shard map epoch \(map.epoch); kept current by daogate move-bucket (set map)\n"
            + map.owners.enumerated().map { "\($0.offset) \($0.element)\n" }.joined()
    }

    /// A list file: one line each.
    static func list(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }

    /// What a client gets when its shard is down (or died with its request in flight: whether that write
    /// happened is then unknown, as with any lost connection).
    static let unavailablePage = [
        "HTTP/1.1 503 Service Unavailable", "Content-Type: application/problem+json", "Cache-Control: no-store",
        "Retry-After: 1", "Connection: close", "",
        #"{"type":"about:blank","title":"Service Unavailable","status":503,"code":"shard_unavailable","detail":"the shard holding this data does not answer; try again"}"#,
    ].joined(separator: "\r\n")

    public var configuration: String {
        let userFetch = switch user {
        case .header: "req.fhdr(x-user-id)"
        case .jwtClaim(let claim): "http_auth_bearer,jwt_payload_query('$.\(claim)')"
        }
        var lines = [
            "# Generated by daogate haproxy-config from the modules and the shard map (epoch \(map.epoch)).",
            "# Do not edit: generate it again. See docs/scaling.md.",
            "global",
            "    stats socket \(runtimeSocket) mode 600 level admin",
            "    maxconn 4000",
            "",
            "defaults",
            "    mode http",
            "    timeout connect 2s",
            "    timeout client 75s",
            "    timeout server 75s",
            "    timeout http-keep-alive 10s",
            "    timeout queue 10s",
            "    retries 2",
            "    option http-keep-alive",
            "    errorfile 502 \(directory)/unavailable.http",
            "    errorfile 503 \(directory)/unavailable.http",
            "    errorfile 504 \(directory)/unavailable.http",
            "",
            "frontend daogate",
            "    bind \(listen)",
            "    http-request set-var(txn.user) \(userFetch)",
        ]
        if case .header = user {
            // daogate percent-decodes X-User-Id (a Swift client sends ann%40example.com for ann@example.com),
            // so HAProxy buckets the decoded id too.
            lines.append("    http-request set-var(txn.user) req.fhdr(x-user-id),url_dec if { req.fhdr(x-user-id) -m sub % }")
        }
        lines += [
            "    acl has_user var(txn.user) -m found",
            "    acl common_path path -f \(directory)/common-paths.lst",
            "    acl common_prefix path_beg -f \(directory)/common-prefixes.lst",
        ]
        // A path's ACL is named by the path (`/transaction` → `transaction`).
        func acl(_ path: String) -> String { path.dropFirst().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined() }
        lines += routing.spaceHeaderPaths.map { "    acl \(acl($0)) path \($0)" }
        if !routing.spaceHeaderPaths.isEmpty { lines.append("    acl space_common req.hdr(x-space) -m str common") }
        for path in routing.spaceQueryPaths {
            lines += ["    acl \(acl(path)) path \(path)", "    acl \(acl(path))_common urlp(space) -m str common"]
        }
        lines.append("    use_backend \(map.common) if common_path || common_prefix")
        lines += routing.spaceHeaderPaths.map { "    use_backend \(map.common) if \(acl($0)) space_common" }
        lines += routing.spaceQueryPaths.map { "    use_backend \(map.common) if \(acl($0)) \(acl($0))_common" }
        lines += [
            "    use_backend \(map.common) if !has_user",
            "    use_backend %[var(txn.user),crc32,mod(\(map.buckets)),map_int(\(directory)/buckets.map,\(map.common))]",
            "    default_backend \(map.common)",
        ]
        // A shard named by a host name (a container's, on its network) may come back at another address: HAProxy
        // resolves it again at run time through the system's resolvers instead of only when it starts.
        let named = map.shards.values.contains { Self.isHostName($0) }
        if named {
            lines += ["", "resolvers system", "    parse-resolv-conf", "    hold valid 1s", "    hold obsolete 5s"]
        }
        for name in map.shards.keys.sorted() {
            let address = map.shards[name]!
            let resolution = Self.isHostName(address) ? " resolvers system init-addr last,libc,none" : ""
            lines += [
                "",
                "backend \(name)",
                "    option httpchk GET /healthz",
                "    server \(name) \(address) check inter 1s fall 2 rise 1 maxconn \(serverConnections)\(resolution)",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether a shard's `host:port` names its host rather than giving an IPv4 or a bracketed IPv6 address.
    static func isHostName(_ address: String) -> Bool {
        let host = address.split(separator: ":", omittingEmptySubsequences: false).dropLast().joined(separator: ":")
        if host.hasPrefix("[") { return false }
        return !host.isEmpty && !host.allSatisfy { $0 == "." || $0.isASCII && $0.isNumber }
    }
}
