import ArgumentParser
import DAODialect
import DAOEngine
import DAOStorage
import DAOValue
import Foundation
import Gateway
import HTTPTransport
import JWT
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
            folder (--key-dir) and the module folder again (a module set with a problem is refused, and the one in use stays).
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

    @Option(help: "Worker threads (DAOGATE_THREADS; default: twice the number of cores).")
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
        _ = try changes.resolved()
    }

    func run() throws {
        let settings = try Settings(self)
        let changeFeed = try changes.resolved()
        // Before any thread starts (the access log's writer among them): a thread that does not block SIGHUP would
        // take one sent while the main thread is busy reloading, and die of it.
        HTTPServer.blockTerminationSignals()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = settings.logLevel
            return handler
        }
        let logger = Logger(label: "daogate")
        // The JWT keys are read before anything else is opened: a bad key file stops the start at once.
        let authentication = try settings.authentication(logger: logger)

        let (loaded, loadErrors) = ModuleLoader.loadDirectory(settings.modules)
        let problems = loadErrors + SQLCheck.check(loaded)
        guard problems.isEmpty else {
            for problem in problems { printToStandardError(problem.description) }
            printToStandardError("daogate: \(problems.count) problem\(problems.count == 1 ? "" : "s") in \(settings.modules); not serving")
            throw ExitCode(1)
        }
        // Full table scans are warnings, not errors: `daogate check --plans` lists them too.
        for warning in SQLCheck.plans(loaded) { logger.warning("\(warning)") }
        let cipher = try settings.cipher()
        if let ring = cipher?.keyring.snapshot {
            let keys = ring.ids.map { "\($0) (\(ring.keys[$0]!.fingerprint))" }.joined(separator: ", ")
            logger.info("encryption keys \(keys); new values use \(ring.current)")
        }
        var engineConfiguration = Engine.Configuration(
            dataDirectory: settings.data,
            database: DatabaseConfiguration(synchronous: settings.synchronous, maximumReaders: max(2, settings.threads),
                                            maximumDatabaseBytes: settings.maximumDatabaseBytes),
            maximumOpenDatabases: settings.maximumOpenDatabases, maximumOpenDescriptors: settings.maximumOpenDescriptors,
            maximumOpenBytes: settings.maximumOpenBytes, cipher: cipher)
        engineConfiguration.userJournal = settings.userJournal
        engineConfiguration.maximumCommonBytes = settings.maximumCommonBytes
        engineConfiguration.maximumStoragesPerUser = settings.maximumStoragesPerUser
        engineConfiguration.changeWindow = changeFeed.window
        let httpConfiguration = HTTPServerConfiguration(
            host: settings.host, port: settings.port, threads: settings.threads,
            maximumBodySize: settings.maximumBodySize, connectionTimeout: settings.timeout,
            connectionLimit: settings.maximumConnections, connectionsPerAddress: settings.maximumConnectionsPerAddress,
            headerTimeout: .seconds(settings.headerTimeout), bodyTimeout: .seconds(settings.bodyTimeout),
            tls: settings.tls)
        do {
            let outcome = try DescriptorLimit.ensure(engine: engineConfiguration, threads: settings.threads,
                                                     connections: httpConfiguration.connectionLimit)
            if case .raised(let from, let to) = outcome {
                logger.notice("raised the file descriptor limit from \(from) to \(to)")
            }
        } catch {
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        try FileManager.default.createDirectory(atPath: settings.data, withIntermediateDirectories: true)
        do {
            try DataFolderLock.take(folder: settings.data)
        } catch {
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        UserDigest.setKey(try UserDigest.loadOrMakeKey(in: settings.data))
        let events = EventLog(logger: logger)
        let engine: Engine
        do {
            engine = try Engine(modules: loaded, configuration: engineConfiguration, observer: events)
        } catch {
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        for (module, values) in try settings.globalArguments() {
            try engine.setGlobalArguments(values, module: module)
        }
        do {
            if try engine.prepareCurrentVersionStorage(version: settings.deploymentVersion) {
                logger.notice("deployment version \(settings.deploymentVersion): the current-version storage was reset")
            }
        } catch {
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        var gatewayConfiguration = GatewayConfiguration(adminToken: try settings.adminToken(),
                                                        memoryCaches: settings.memoryCaches,
                                                        maximumDiskCacheCapacity: settings.maximumDiskCacheCapacity,
                                                        accessLog: settings.accessLog,
                                                        separateMetrics: settings.metricsListen != nil,
                                                        authentication: authentication,
                                                        shard: try settings.shard(),
                                                        modulesDirectory: settings.modules)
        gatewayConfiguration.changeStreams = changeFeed.limits
        gatewayConfiguration.explorer = settings.explorer
        let gateway = try Gateway(engine: engine, events: events, configuration: gatewayConfiguration)
        // CORS is a layer around the gateway, present only when origins are listed.
        let responder: any HTTPResponder = settings.corsOrigins.isEmpty
            ? gateway : CORSResponder(wrapping: gateway, policy: Gateway.corsPolicy(origins: Set(settings.corsOrigins)))
        // The access log is buffered (see AccessLogWriter) and written out after the server's last request.
        let accessLogWriter = settings.accessLog ? AccessLogWriter() : nil
        accessLogWriter?.start()
        let server = HTTPServer(
            configuration: httpConfiguration,
            responder: responder,
            accessLog: accessLogWriter.map { writer in
                Logger(label: "daogate.access") { AccessLogHandler(label: $0, writer: writer, logLevel: settings.logLevel) }
            })
        let metricsServer = settings.metricsListen.map { address in
            HTTPServer(configuration: HTTPServerConfiguration(host: address.host, port: address.port, threads: 1,
                                                              maximumBodySize: 0, connectionLimit: 16, connectionsPerAddress: 16),
                       responder: gateway.metricsResponder(requiresAdmin: !Settings.isLoopback(address.host)))
        }
        do {
            try server.start()
            try metricsServer?.start()
        } catch {
            accessLogWriter?.stop()
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        let sweep = PurgeSweep(gateway: gateway, policy: settings.purge, logger: logger)
        sweep.start()
        logger.info("serving \(loaded.count) modules from \(settings.modules), data in \(settings.data)")
        logger.info("open database files held to \(settings.maximumOpenDescriptors) descriptors and \(settings.maximumOpenBytes) bytes; users' files: \(settings.userJournal.rawValue) journal")
        // Litestream replicates WAL only: a rollback journal's commits never reach the replica.
        let litestreamMarker = settings.data + "/" + LitestreamConfig.marker
        if settings.userJournal != .wal, FileManager.default.fileExists(atPath: litestreamMarker) {
            let configuration = (try? String(contentsOfFile: litestreamMarker, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            logger.warning("the data folder has a Litestream configuration (\(configuration), from daogate litestream-config) but users' files use a \(settings.userJournal.rawValue) journal: Litestream replicates WAL databases only, so users' writes are not replicated; serve with --user-journal wal")
        }
        // The first line is what scripts and tests parse; the others are for people.
        print("daogate listening on \(server.url)")
        if settings.explorer { print("daogate API explorer on \(server.url)/docs") }
        print("daogate API on \(server.url)/dao/{module}/{method}")
        print("daogate OpenAPI description on \(server.url)/openapi.json")
        if !settings.corsOrigins.isEmpty { print("daogate CORS origins: \(settings.corsOrigins.joined(separator: ", "))") }
        if let metricsServer { print("daogate metrics on \(metricsServer.url)/metrics") }
        fflush(nil)

        var reloadKeys: () -> Void = {}
        if case .jwt(let verifier) = authentication {
            reloadKeys = { Self.reload(verifier, logger, reason: "SIGHUP") }
            Self.watchKeyFiles(verifier, logger)
        }
        // SIGHUP reloads what the server reads from files: the TLS certificate and key, the JWT keys, the modules.
        let signal = HTTPServer.waitForTerminationSignal {
            do {
                try server.reloadCertificate()
                if let tls = settings.tls { logger.notice("reloaded the TLS certificate \(tls.certificateFile)") }
            } catch {
                logger.error("kept the current TLS certificate: \(error)")
            }
            reloadKeys()
            if let keyring = cipher?.keyring, keyring.directory != nil { Self.reload(keyring, gateway, logger, reason: "SIGHUP") }
            gateway.reloadModules(reason: "SIGHUP")
        }
        logger.notice("signal \(signal): finishing in-flight requests")
        server.shutdown(gracePeriod: .seconds(10))
        metricsServer?.shutdown(gracePeriod: .seconds(1))
        sweep.stop()
        accessLogWriter?.stop()
        engine.shutdown()
        logger.notice("stopped")
        fflush(nil)
    }
}

extension Serve {
    /// Reloads the JWT keys; a failure keeps the keys in use.
    static func reload(_ verifier: JWTVerifier, _ logger: Logger, reason: String) {
        do {
            let keys = try verifier.reload()
            logger.notice("\(reason): \(keys.keys.count) JWT key\(keys.keys.count == 1 ? "" : "s") loaded")
            for skipped in keys.skipped { logger.warning("JWT key skipped: \(skipped)") }
        } catch {
            logger.error("\(reason): the JWT keys were not reloaded, the previous ones stay in use: \(error)")
        }
    }

    /// Reads the key folder again; a folder with a problem, or without a key a module names, keeps the keys in use.
    static func reload(_ keyring: Keyring, _ gateway: Gateway, _ logger: Logger, reason: String) {
        do {
            let ring = try Keyring.load(directory: keyring.directory!)
            try gateway.currentEngine.checkKeys(ring)
            keyring.replace(with: ring)
            logger.notice("\(reason): \(ring.keys.count) encryption key\(ring.keys.count == 1 ? "" : "s") loaded (\(ring.ids.joined(separator: ", "))); new values use \(ring.current)")
        } catch {
            logger.error("\(reason): the key folder was not reloaded, the keys in use stay: \(error)")
        }
    }

    /// Reloads the JWT keys when one of their files changes (checked every second).
    static func watchKeyFiles(_ verifier: JWTVerifier, _ logger: Logger) {
        Thread.detachNewThread {
            while true {
                Thread.sleep(forTimeInterval: 1)
                do {
                    if let keys = try verifier.reloadIfChanged() {
                        logger.notice("a JWT key file changed: \(keys.keys.count) key\(keys.keys.count == 1 ? "" : "s") loaded")
                        for skipped in keys.skipped { logger.warning("JWT key skipped: \(skipped)") }
                    }
                } catch {
                    logger.error("a JWT key file changed but was not loaded, the previous keys stay in use: \(error)")
                }
            }
        }
    }
}

/// The serve options resolved: the command line, else the environment, else the default.
struct Settings {
    var modules: String
    var data: String
    var host: String
    var port: UInt16
    var threads: Int
    var keyFile: String?
    var keyDir: String?
    var adminTokenFile: String?
    var globalsFile: String?
    var maximumBodySize: Int
    var maximumOpenDatabases: Int
    var maximumOpenDescriptors: Int
    var maximumOpenBytes: Int
    var synchronous: Synchronous
    var userJournal: JournalMode
    var timeout: Int
    var maximumConnections: Int
    var maximumConnectionsPerAddress: Int
    var headerTimeout: Int
    var bodyTimeout: Int
    var deploymentVersion: String
    var memoryCaches: MemoryCaches.Limits
    var maximumDiskCacheCapacity: Int
    var logLevel: Logger.Level
    var accessLog: Bool
    /// `--purge-every` and `--purge-older-than`.
    var purge: PurgePolicy
    var tls: TLSConfiguration?
    var maximumDatabaseBytes: Int?
    var maximumCommonBytes: Int?
    var maximumStoragesPerUser: Int
    var metricsListen: (host: String, port: UInt16)?
    /// `--shard` and `--shard-map`, both or neither.
    var shardName: String?
    var shardMap: String?
    /// `jwt`, `trusted-header`, or nil: trusted-header on loopback only.
    var authMode: String?
    var jwt: JWTSettings
    /// `--docs`: whether the API explorer is served.
    var explorer: Bool
    /// `--cors-origin`, each checked and in the form browsers send.
    var corsOrigins: [String]

    init(_ options: Serve, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        func value(_ option: String?, _ name: String) -> String? {
            option ?? environment[name].flatMap { $0.isEmpty ? nil : $0 }
        }
        func number<T: FixedWidthInteger>(_ option: T?, _ name: String, _ fallback: T, _ range: ClosedRange<T>) throws -> T {
            if let option { guard range.contains(option) else { throw ValidationError("\(name.lowercased()) must be in \(range)") }; return option }
            guard let text = environment[name], !text.isEmpty else { return fallback }
            guard let parsed = T(text), range.contains(parsed) else { throw ValidationError("\(name)=\(text) must be a number in \(range)") }
            return parsed
        }
        modules = value(options.modules, "DAOGATE_MODULES") ?? "modules"
        data = value(options.data, "DAOGATE_DATA") ?? "data"
        // Defaults are the libraries' own.
        let server = HTTPServerConfiguration()
        let caches = MemoryCaches.Limits()
        let gateway = GatewayConfiguration()
        host = value(options.host, "DAOGATE_HOST") ?? server.host
        port = try number(options.port, "DAOGATE_PORT", server.port, 0...65535)
        threads = try number(options.threads, "DAOGATE_THREADS", server.threads, 1...1024)
        keyFile = value(options.keyFile, "DAOGATE_KEY_FILE")
        keyDir = value(options.keyDir, "DAOGATE_KEY_DIR")
        if keyDir != nil, keyFile != nil || !(environment["DAOGATE_KEY"] ?? "").isEmpty {
            throw ValidationError("--key-dir (DAOGATE_KEY_DIR) is a keyring; --key-file and DAOGATE_KEY are its one-key form: give one of them")
        }
        adminTokenFile = value(options.adminTokenFile, "DAOGATE_ADMIN_TOKEN_FILE")
        globalsFile = value(options.globals, "DAOGATE_GLOBALS")
        maximumBodySize = try number(options.maxBodySize, "DAOGATE_MAX_BODY_SIZE", server.maximumBodySize, 1...(1 << 30))
        maximumOpenDatabases = try number(options.maxOpenDatabases, "DAOGATE_MAX_OPEN_DATABASES",
                                          Engine.Configuration(dataDirectory: "").maximumOpenDatabases, 1...100_000)
        timeout = try number(options.timeout, "DAOGATE_TIMEOUT", server.connectionTimeout, 1...86_400)
        maximumConnections = try number(options.maxConnections, "DAOGATE_MAX_CONNECTIONS", server.connectionLimit, threads...1_000_000)
        maximumOpenDescriptors = try number(options.maxOpenDescriptors, "DAOGATE_MAX_OPEN_DESCRIPTORS",
                                            DescriptorLimit.defaultDatabaseDescriptors(connections: maximumConnections), 16...10_000_000)
        maximumOpenBytes = try number(options.maxOpenBytes, "DAOGATE_MAX_OPEN_BYTES", 400 << 20, (1 << 20)...(1 << 50))
        maximumConnectionsPerAddress = try number(options.maxConnectionsPerAddress, "DAOGATE_MAX_CONNECTIONS_PER_ADDRESS",
                                                  min(server.connectionsPerAddress, maximumConnections), 0...maximumConnections)
        headerTimeout = try number(options.headerTimeout, "DAOGATE_HEADER_TIMEOUT", Int(server.headerTimeout.components.seconds), 0...86_400)
        bodyTimeout = try number(options.bodyTimeout, "DAOGATE_BODY_TIMEOUT", Int(server.bodyTimeout.components.seconds), 0...86_400)
        deploymentVersion = value(options.deploymentVersion, "DAOGATE_DEPLOYMENT_VERSION") ?? daogateVersion
        memoryCaches = MemoryCaches.Limits(
            maximumCapacity: try number(options.memoryCacheMaxCapacity, "DAOGATE_MEMORY_CACHE_MAX_CAPACITY", caches.maximumCapacity, 1...100_000_000),
            maximumCachesPerLocation: try number(options.memoryCachesPerSpace, "DAOGATE_MEMORY_CACHES_PER_SPACE", caches.maximumCachesPerLocation, 1...10_000),
            budgetBytes: try number(options.memoryCacheBytes, "DAOGATE_MEMORY_CACHE_BYTES", caches.budgetBytes, 0...(1 << 40)))
        if options.memoryCacheUserBytes != nil || !(environment["DAOGATE_MEMORY_CACHE_USER_BYTES"] ?? "").isEmpty {
            memoryCaches.userBudgetBytes = try number(options.memoryCacheUserBytes, "DAOGATE_MEMORY_CACHE_USER_BYTES", 0,
                                                      0...memoryCaches.budgetBytes)
        }
        maximumDiskCacheCapacity = try number(options.diskCacheMaxCapacity, "DAOGATE_DISK_CACHE_MAX_CAPACITY", gateway.maximumDiskCacheCapacity, 1...1_000_000_000)
        purge = PurgePolicy()
        if let every = value(options.purgeEvery, "DAOGATE_PURGE_EVERY") {
            let seconds = try DurationText.seconds(every, option: "--purge-every (DAOGATE_PURGE_EVERY)")
            purge.every = seconds > 0 ? seconds : nil
        }
        if let age = value(options.purgeOlderThan, "DAOGATE_PURGE_OLDER_THAN") {
            purge.olderThan = try DurationText.seconds(age, option: "--purge-older-than (DAOGATE_PURGE_OLDER_THAN)")
        }
        let journal = value(options.userJournal, "DAOGATE_USER_JOURNAL")?.lowercased() ?? JournalMode.rollback.rawValue
        guard let parsedJournal = JournalMode(rawValue: journal) else {
            throw ValidationError("user journal must be rollback or wal, not \(journal)")
        }
        userJournal = parsedJournal
        switch value(options.synchronous, "DAOGATE_SYNCHRONOUS")?.lowercased() ?? "normal" {
        case "normal": synchronous = .normal
        case "full": synchronous = .full
        case let other: throw ValidationError("synchronous must be normal or full, not \(other)")
        }
        let level = value(options.logLevel, "DAOGATE_LOG_LEVEL")?.lowercased() ?? "info"
        guard let parsedLevel = Logger.Level(rawValue: level) else {
            throw ValidationError("log level must be trace, debug, info, notice, warning, error or critical, not \(level)")
        }
        logLevel = parsedLevel
        switch value(options.accessLog, "DAOGATE_ACCESS_LOG")?.lowercased() ?? "on" {
        case "on", "true", "yes", "1": accessLog = true
        case "off", "false", "no", "0": accessLog = false
        case let other: throw ValidationError("access log must be on or off, not \(other)")
        }
        switch value(options.docs, "DAOGATE_DOCS")?.lowercased() ?? "on" {
        case "on", "true", "yes", "1": explorer = true
        case "off", "false", "no", "0": explorer = false
        case let other: throw ValidationError("docs must be on or off, not \(other)")
        }
        let origins = options.corsOrigin.isEmpty
            ? (environment["DAOGATE_CORS_ORIGIN"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            : options.corsOrigin
        corsOrigins = []
        for origin in origins {
            do {
                let checked = try CORSPolicy.origin(origin)
                if !corsOrigins.contains(checked) { corsOrigins.append(checked) }
            } catch {
                throw ValidationError("\(error) (--cors-origin, DAOGATE_CORS_ORIGIN)")
            }
        }
        switch (value(options.tlsCert, "DAOGATE_TLS_CERT"), value(options.tlsKey, "DAOGATE_TLS_KEY")) {
        case (let certificate?, let key?):
            let priorities = value(options.tlsPriorities, "DAOGATE_TLS_PRIORITIES") ?? TLSConfiguration.defaultPriorities
            do throws(HTTPServerError) { try TLSConfiguration.checkPriorities(priorities) } catch {
                throw ValidationError("--tls-priorities (DAOGATE_TLS_PRIORITIES): \(error.message)")
            }
            tls = TLSConfiguration(certificateFile: certificate, keyFile: key, priorities: priorities)
        case (nil, nil):
            guard value(options.tlsPriorities, "DAOGATE_TLS_PRIORITIES") == nil else {
                throw ValidationError("--tls-priorities (DAOGATE_TLS_PRIORITIES) needs --tls-cert and --tls-key: without them daogate serves plain HTTP")
            }
            tls = nil
        case (_?, nil): throw ValidationError("--tls-cert needs --tls-key (DAOGATE_TLS_KEY), the certificate's private key")
        case (nil, _?): throw ValidationError("--tls-key needs --tls-cert (DAOGATE_TLS_CERT), the key's certificate")
        }
        if options.maxDatabaseSize != nil || !(environment["DAOGATE_MAX_DATABASE_SIZE"] ?? "").isEmpty {
            // 64 KiB: the pages a fresh database with the KV and cache tables needs, with room to spare.
            maximumDatabaseBytes = try number(options.maxDatabaseSize, "DAOGATE_MAX_DATABASE_SIZE", 0, (64 * 1024)...(1 << 50))
        }
        maximumCommonBytes = maximumDatabaseBytes
        if options.maxCommonSize != nil || !(environment["DAOGATE_MAX_COMMON_SIZE"] ?? "").isEmpty {
            maximumCommonBytes = try number(options.maxCommonSize, "DAOGATE_MAX_COMMON_SIZE", 0, (64 * 1024)...(1 << 50))
        }
        maximumStoragesPerUser = try number(options.maxStoragesPerUser, "DAOGATE_MAX_STORAGES_PER_USER",
                                            Engine.Configuration(dataDirectory: "").maximumStoragesPerUser ?? 16, 1...100_000)
        if let listen = value(options.metricsListen, "DAOGATE_METRICS_LISTEN") {
            guard let address = Self.hostAndPort(listen) else {
                throw ValidationError("the metrics address must be HOST:PORT ([::1]:9100 for IPv6), not \(listen)")
            }
            metricsListen = address
        }
        self.environment = environment
        shardName = value(options.shard, "DAOGATE_SHARD")
        shardMap = value(options.shardMap, "DAOGATE_SHARD_MAP")
        guard (shardName == nil) == (shardMap == nil) else { throw ValidationError("--shard and --shard-map go together") }

        authMode = value(options.auth, "DAOGATE_AUTH")?.lowercased()
        jwt = JWTSettings()
        jwt.secretFile = value(options.jwtSecretFile, "DAOGATE_JWT_SECRET_FILE")
        jwt.keysFile = value(options.jwtKeys, "DAOGATE_JWT_KEYS")
        let userClaim = value(options.jwtUserClaim, "DAOGATE_JWT_USER_CLAIM")
        jwt.userClaim = userClaim ?? jwt.userClaim
        jwt.audience = value(options.jwtAudience, "DAOGATE_JWT_AUDIENCE")
        jwt.issuer = value(options.jwtIssuer, "DAOGATE_JWT_ISSUER")
        jwt.leeway = try number(options.jwtLeeway, "DAOGATE_JWT_LEEWAY", jwt.leeway, 0...86_400)
        if let claim = value(options.jwtAdminClaim, "DAOGATE_JWT_ADMIN_CLAIM") {
            let parts = claim.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("the JWT admin claim is NAME=VALUE (for example role=admin), not \(claim)")
            }
            jwt.adminClaim = (parts[0], parts[1])
        }
        let jwtOptionGiven = jwt.secretFile != nil || jwt.keysFile != nil || jwt.audience != nil || jwt.issuer != nil
            || jwt.adminClaim != nil || userClaim != nil || value(options.jwtLeeway.map { String($0) }, "DAOGATE_JWT_LEEWAY") != nil
        switch authMode {
        case "jwt"?:
            guard jwt.secretFile != nil || jwt.keysFile != nil else {
                throw ValidationError("--auth jwt needs keys: --jwt-secret-file (HS256) or --jwt-keys (PEM public keys or a JWKS)")
            }
        case "trusted-header"?, nil:
            if jwtOptionGiven { throw ValidationError("the --jwt-… options take effect with --auth jwt only") }
            if authMode == nil, !Self.isLoopback(host) {
                throw ValidationError("serving on \(host), beyond loopback, needs an authentication mode: "
                    + "--auth jwt (callers send a verified bearer token) or --auth trusted-header "
                    + "(behind a proxy that authenticates and sets X-User-Id); or DAOGATE_AUTH")
            }
        case let other?:
            throw ValidationError("auth must be jwt or trusted-header, not \(other)")
        }
        // Secure by default, as for the API's address: metrics beyond loopback
        // are asked for an admin's credentials, so there must be one.
        let adminConfigured = adminTokenFile != nil || !(environment["DAOGATE_ADMIN_TOKEN"] ?? "").isEmpty
            || (authMode == "jwt" && jwt.adminClaim != nil)
        if let metrics = metricsListen, !Self.isLoopback(metrics.host), !adminConfigured {
            throw ValidationError("metrics on \(metrics.host), beyond loopback, are served to an admin only, and none is configured: "
                + "give --admin-token-file (Prometheus sends it as its bearer token)"
                + " or, with --auth jwt, --jwt-admin-claim; or listen for metrics on loopback")
        }
    }

    /// Whether an address is the loopback interface's: 127.0.0.0/8, ::1, localhost.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// The authentication the gateway applies; the JWT keys are read here (a bad file stops the start).
    func authentication(logger: Logger) throws -> Authentication {
        guard authMode == "jwt" else { return .trustedHeader }
        do {
            let verifier = try JWTVerifier(settings: jwt)
            let keys = verifier.keys
            let algorithms = Set(keys.keys.map(\.algorithm.rawValue)).sorted().joined(separator: ", ")
            logger.info("authentication: jwt, \(keys.keys.count) key\(keys.keys.count == 1 ? "" : "s") (\(algorithms))")
            for skipped in keys.skipped { logger.warning("JWT key skipped: \(skipped)") }
            return .jwt(verifier)
        } catch {
            throw RunFailure("the JWT keys (--jwt-secret-file or DAOGATE_JWT_SECRET_FILE, --jwt-keys or DAOGATE_JWT_KEYS): \(error)")
        }
    }

    /// `host:port`, or `[v6]:port`.
    static func hostAndPort(_ text: String) -> (host: String, port: UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("[") else { return nil }
        return (host, port)
    }

    private let environment: [String: String]

    /// The cipher of encrypted values: the key folder, else the key file or DAOGATE_KEY (the key `default`);
    /// nil when none is set.
    func cipher() throws -> Cipher? {
        do {
            if let keyDir { return Cipher(keyring: Keyring(try Keyring.load(directory: keyDir), directory: keyDir)) }
            if let keyFile { return Cipher(key: try CipherKey.load(file: keyFile)) }
            return try CipherKey.fromEnvironment("DAOGATE_KEY").map { Cipher(key: $0) }
        } catch {
            // The variable to set, named: in a container the file comes from DAOGATE_KEY_FILE.
            throw RunFailure("the encryption key (--key-dir or DAOGATE_KEY_DIR, --key-file or DAOGATE_KEY_FILE, or DAOGATE_KEY): \(error)")
        }
    }

    /// The admin token: the token file, else DAOGATE_ADMIN_TOKEN; nil when neither is set.
    func adminToken() throws -> String? {
        try Self.adminToken(file: adminTokenFile, environment: environment)
    }

    /// The admin token from `file`, else `DAOGATE_ADMIN_TOKEN`: what `serve` and the commands that call a
    /// server as its admin (`move-bucket`) read alike.
    static func adminToken(file adminTokenFile: String?, environment: [String: String]) throws -> String? {
        var token: String?
        if let adminTokenFile {
            guard let data = FileManager.default.contents(atPath: adminTokenFile), let text = String(data: data, encoding: .utf8) else {
                throw RunFailure("cannot read the admin token file \(adminTokenFile)")
            }
            token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            token = environment["DAOGATE_ADMIN_TOKEN"]?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let token, !token.isEmpty else { return nil }
        guard token.utf8.count >= 16 else { throw RunFailure("the admin token must be at least 16 characters") }
        return token
    }

    /// Global arguments from the globals file, by module.
    func globalArguments() throws -> [String: [String: Value]] {
        guard let globalsFile else { return [:] }
        guard let data = FileManager.default.contents(atPath: globalsFile) else {
            throw RunFailure("cannot read the globals file \(globalsFile)")
        }
        guard case .object(let modules) = try Value(parsingJSON: [UInt8](data)) else {
            throw RunFailure("the globals file \(globalsFile) must hold a JSON object of module → {name: value}")
        }
        var result: [String: [String: Value]] = [:]
        for (module, values) in modules {
            guard case .object(let members) = values else {
                throw RunFailure("the globals of \(module) in \(globalsFile) must be a JSON object")
            }
            result[module] = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
        }
        return result
    }
}
