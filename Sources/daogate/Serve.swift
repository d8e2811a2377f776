import ArgumentParser
import Gateway
import Logging

/// `daogate serve`: the modules of a folder as an HTTP API.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a folder of DAO modules over HTTP.",
        discussion: """
            Every option can also come from an environment variable (DAOGATE_PORT, …); an option given \
            on the command line wins. With no arguments it serves ./modules with data in ./data on \
            127.0.0.1:8080. SIGTERM or SIGINT stops it gracefully: in-flight requests finish and the \
            databases close cleanly. SIGHUP reads the TLS certificate and key, the JWT keys, the key \
            folder (--key-dir) and the module folder again (a module set with a problem is refused, and the one in use stays); \
            POST /admin/reload and a change of a JWT key file do the same reload.
            """
    )

    @Option(help: "The folder of module files (DAOGATE_MODULES; default ./modules).")
    var modules: String?

    @Option(help: "The folder of database files (DAOGATE_DATA; default ./data).")
    var data: String?

    @Option(help: "The address to listen on (DAOGATE_HOST; default 127.0.0.1; 0.0.0.0 or :: for all).")
    var host: String?

    @Option(help: "The port (DAOGATE_PORT; default 8080; 0 for any free port).")
    var port: UInt16?

    @Option(help: "Worker threads (DAOGATE_THREADS; default: twice the processors the server may use: its affinity mask and CPU quota, as a container sets them).")
    var threads: Int?

    @Option(help: "A file holding the 256-bit key of encrypted properties, whose id is 'default' (DAOGATE_KEY_FILE; or the key itself in DAOGATE_KEY). The one-key form of --key-dir.")
    var keyFile: String?

    @Option(help: "A keyring folder: one key per file, ID.key, and a file 'current' naming the key new values are written with (DAOGATE_KEY_DIR). SIGHUP reads it again. See docs/keys.md.")
    var keyDir: String?

    @Option(help: "A file holding the admin bearer token (DAOGATE_ADMIN_TOKEN_FILE; or the token itself in DAOGATE_ADMIN_TOKEN). Without one, admin operations are disabled.")
    var adminTokenFile: String?

    @Option(help: "Who calls: jwt (Authorization: Bearer <JWT>, verified; the user is a claim) or trusted-header (X-User-Id as an authenticating proxy sets it) (DAOGATE_AUTH). Without one, daogate serves on loopback only, trusting X-User-Id.")
    var auth: String?

    @Option(help: "A file holding the HS256 secret, raw bytes, at least 32 (DAOGATE_JWT_SECRET_FILE).")
    var jwtSecretFile: String?

    @Option(help: "A file of PEM public keys or a JWKS, for RS256, ES256 and EdDSA (DAOGATE_JWT_KEYS).")
    var jwtKeys: String?

    @Option(help: "The claim naming the caller's user (DAOGATE_JWT_USER_CLAIM; default sub).")
    var jwtUserClaim: String?

    @Option(help: "The audience a token's aud must name (DAOGATE_JWT_AUDIENCE; default: aud not checked).")
    var jwtAudience: String?

    @Option(help: "The issuer a token's iss must be (DAOGATE_JWT_ISSUER; default: iss not checked).")
    var jwtIssuer: String?

    @Option(help: "NAME=VALUE: a token whose claim NAME is VALUE (or an array holding it) is an admin's (DAOGATE_JWT_ADMIN_CLAIM; default: no token is).")
    var jwtAdminClaim: String?

    @Option(help: "Seconds of clock skew allowed on a token's nbf and iat (DAOGATE_JWT_LEEWAY; default 30).")
    var jwtLeeway: Int?

    @Option(help: "A JSON file of global arguments by module: {\"Module\": {\"name\": value}} (DAOGATE_GLOBALS).")
    var globals: String?

    @Option(help: "The largest request body, in bytes (DAOGATE_MAX_BODY_SIZE; default 1048576).")
    var maxBodySize: Int?

    @Option(help: "Database files open at once, whatever they hold (DAOGATE_MAX_OPEN_DATABASES; default 100000: the descriptor and byte budgets decide).")
    var maxOpenDatabases: Int?

    @Option(help: "File descriptors the open database files may hold; beyond it the least recently used idle ones close (DAOGATE_MAX_OPEN_DESCRIPTORS; default: 3/4 of the hard limit, ulimit -Hn, less the HTTP connections, at most 60000).")
    var maxOpenDescriptors: Int?

    @Option(help: "Bytes of memory the open database files may hold, estimated; beyond it the least recently used idle ones close (DAOGATE_MAX_OPEN_BYTES; default 419430400, 400 MiB).")
    var maxOpenBytes: Int?

    @Option(help: "SQLite's synchronous setting: normal or full (DAOGATE_SYNCHRONOUS; default normal).")
    var synchronous: String?

    @Option(help: "The journal of users' database files: rollback (one descriptor and no -shm per open user; a commit syncs) or wal (readers never wait for a write; three descriptors and a 32 KiB index per open user) (DAOGATE_USER_JOURNAL; default rollback). Common files are always WAL.")
    var userJournal: String?

    @Option(help: "The deployment's version; when it changes, the current-version storage is reset (DAOGATE_DEPLOYMENT_VERSION; default daogate's version).")
    var deploymentVersion: String?

    @Option(help: "Bytes all memory caches may hold together, counting their entries, their lists' storage and each cache's fixed cost; when full, a write evicts the least recently used entries, the writer's own first (DAOGATE_MEMORY_CACHE_BYTES; default 268435456).")
    var memoryCacheBytes: Int?

    @Option(help: "Bytes one user's memory caches (all their storages), or the common spaces' caches, may hold; past it a write evicts that user's least recently used entries, and only an entry larger than this is refused with 507 memory_full (DAOGATE_MEMORY_CACHE_USER_BYTES; default: an eighth of --memory-cache-bytes).")
    var memoryCacheUserBytes: Int?

    @Option(help: "The largest capacity of a memory cache, in entries (DAOGATE_MEMORY_CACHE_MAX_CAPACITY; default 100000).")
    var memoryCacheMaxCapacity: Int?

    @Option(help: "Memory caches one space (common, or a user's) may have (DAOGATE_MEMORY_CACHES_PER_SPACE; default 16).")
    var memoryCachesPerSpace: Int?

    @Option(help: "The largest capacity of a disk cache, in entries (DAOGATE_DISK_CACHE_MAX_CAPACITY; default 1000000).")
    var diskCacheMaxCapacity: Int?

    @Option(help: "Seconds an idle connection stays open (DAOGATE_TIMEOUT; default 30).")
    var timeout: Int?

    @Option(help: "Connections open at once (DAOGATE_MAX_CONNECTIONS; default 1024).")
    var maxConnections: Int?

    @Option(help: "Connections open at once from one client address, 0 for no limit (DAOGATE_MAX_CONNECTIONS_PER_ADDRESS; default 128). Behind a proxy, every connection comes from the proxy's address.")
    var maxConnectionsPerAddress: Int?

    @Option(help: "Seconds a request's headers may take to arrive, from the connection's opening or its previous response, however slowly they trickle; 0 for no limit (DAOGATE_HEADER_TIMEOUT; default 10).")
    var headerTimeout: Int?

    @Option(help: "Seconds a request's body may take to arrive once its headers are in; 0 for no limit (DAOGATE_BODY_TIMEOUT; default 60).")
    var bodyTimeout: Int?

    @Option(help: "A PEM certificate (chain) file: serve HTTPS only, TLS 1.2 and later (DAOGATE_TLS_CERT; needs --tls-key). SIGHUP reloads it.")
    var tlsCert: String?

    @Option(help: "The PEM private key of --tls-cert (DAOGATE_TLS_KEY). SIGHUP reloads it.")
    var tlsKey: String?

    @Option(help: "GnuTLS's priority string for HTTPS: the protocol versions, key exchanges and ciphers allowed (DAOGATE_TLS_PRIORITIES; default: Mozilla's intermediate profile, TLS 1.3 and TLS 1.2 with ECDHE or DHE and AES-GCM or ChaCha20-Poly1305). Checked at start.")
    var tlsPriorities: String?

    @Option(help: "The most bytes one user may store, their databases of every storage (X-Storage) together; a write beyond it is refused with 507 storage_full (DAOGATE_MAX_DATABASE_SIZE; default: no cap).")
    var maxDatabaseSize: Int?

    @Option(help: "The most bytes the common space's databases of every storage may hold together; a write beyond it is refused with 507 storage_full (DAOGATE_MAX_COMMON_SIZE; default: --max-database-size).")
    var maxCommonSize: Int?

    @Option(help: "The custom storages (X-Storage) one user may have data in, the default storage not counted; one more is refused with 409 too_many_storages (DAOGATE_MAX_STORAGES_PER_USER; default 16).")
    var maxStoragesPerUser: Int?

    @Option(help: "Serve GET /metrics on this HOST:PORT of its own, plain HTTP without a token, and not on the API's port (DAOGATE_METRICS_LISTEN; default: on the API's port, to the admin token only).")
    var metricsListen: String?

    @Option(help: "This server's shard name in a sharded deployment (DAOGATE_SHARD; needs --shard-map): it serves only the buckets the map gives it, and answers 421 for others. See docs/scaling.md.")
    var shard: String?

    @Option(help: "The shard map file: buckets to shards, the common shard, an epoch (DAOGATE_SHARD_MAP).")
    var shardMap: String?

    @Option(help: "How often the background sweep runs: it removes expired cache entries and old purgeable entries, and gives space back; a duration (30s, 15m, 1h, 7d) or 0 for never (DAOGATE_PURGE_EVERY; default 1h). See docs/cleanup.md.")
    var purgeEvery: String?

    @Option(help: "Purgeable key-value entries last written this long ago are removed by the sweep; a duration (30s, 15m, 1h, 7d) (DAOGATE_PURGE_OLDER_THAN; default 30d).")
    var purgeOlderThan: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error (DAOGATE_LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(help: "One log line per request: on or off (DAOGATE_ACCESS_LOG; default on).")
    var accessLog: String?

    @Option(help: "The API explorer at GET /docs (and / redirecting there): on or off (DAOGATE_DOCS; default on).")
    var docs: String?

    @Option(help: ArgumentHelp("A browser origin (scheme://host[:port]) whose pages may call the API: CORS preflights are answered and answers carry Access-Control-Allow-Origin; repeat for several (DAOGATE_CORS_ORIGIN, comma-separated; default none: no CORS header).", valueName: "origin"))
    var corsOrigin: [String] = []

    @OptionGroup(title: "Change feed (GET /changes)")
    var changes: ChangeFeedOptions

    /// The options and their variables, checked before anything runs: a wrong one is a usage error (exit 64).
    func validate() throws {
        _ = try Settings(self)
    }

    func run() throws {
        let settings = try Settings(self)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = settings.logLevel
            return handler
        }
        let server = GatewayServer(configuration: settings.serverConfiguration, logger: Logger(label: "daogate"))
        try orStop { try server.run() }
    }
}

/// The server's start, stopped at one of its steps (`GatewayServer.StartFailure`): printed as `daogate: …` (a
/// module folder's problems first, one a line), exit status 1. Any other error (a file of the options) is the
/// command's run-time failure, `daogate serve: …`.
func orStop<T>(_ step: () throws -> T) throws -> T {
    do {
        return try step()
    } catch let failure as GatewayServer.StartFailure {
        if case .modules(_, let problems) = failure {
            for problem in problems { printToStandardError(problem.description) }
        }
        printToStandardError("daogate: \(failure)")
        throw ExitCode(1)
    }
}
