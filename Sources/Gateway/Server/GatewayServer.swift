import DAODialect
import DAOEngine
import DAOValue
import Foundation
import HTTPTransport
import Logging
import Sharding
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the start reads from files besides the modules, each at its step of `GatewayServer.start()`: a file
/// with a problem stops the start there, with the error thrown here. `daogate serve`'s `Settings` reads them
/// from its options, and its errors name the options; the defaults read nothing.
public protocol StartFiles: Sendable {
    /// Who calls; in jwt mode the JWT keys are read (and logged) here, the start's first step.
    func authentication(logger: Logger) throws -> Authentication
    /// The cipher of encrypted values (a key folder, a key file, a key in the environment); nil: none.
    func cipher() throws -> Cipher?
    /// Global arguments by module.
    func globalArguments() throws -> [String: [String: Value]]
    /// The admin bearer token; nil: admin operations are disabled.
    func adminToken() throws -> String?
    /// The shard this server is, its map read; nil: no shard.
    func shard() throws -> Shard?
}

extension StartFiles {
    public func authentication(logger: Logger) throws -> Authentication { .trustedHeader }
    public func cipher() throws -> Cipher? { nil }
    public func globalArguments() throws -> [String: [String: Value]] { [:] }
    public func adminToken() throws -> String? { nil }
    public func shard() throws -> Shard? { nil }
}

/// Nothing read from files: trusted headers, no cipher, no globals, no admin token, no shard.
public struct NoStartFiles: StartFiles {
    public init() {}
}

/// A serving daogate, as one object configured, started, run until a signal, and shut down (Hummingbird's
/// `Application`, Vapor's `Application`): the modules loaded and checked, the data folder locked, the engine,
/// the gateway behind its layers (CORS), the access log, the HTTP server and the metrics server, the shard's
/// epoch checks, the purge sweep, the reloads. `daogate serve` builds one from its options and calls `run()`;
/// a test calls `start()` and `shutdown()` in process.
///
/// A start step that fails throws `StartFailure` (what `daogate serve` prints as `daogate: …`, exit 1); a file
/// of `StartFiles` that fails throws that file's own error. A failed start gives back what it took (the lock,
/// the engine's files), as `shutdown()` does.
public final class GatewayServer: Sendable {
    /// How a server is set up: plain values (the CLI resolves them from its options and environment) and the
    /// files the start reads (`files`).
    public struct Configuration: Sendable {
        /// The folder of module files, read at start and by each reload.
        public var modules: String
        /// The engine: the data folder (`dataDirectory`), SQLite's settings, the budgets of open files. Its cipher
        /// is `files.cipher()`'s.
        public var engine: Engine.Configuration
        /// The API's address, workers, limits, deadlines and TLS.
        public var http: HTTPServerConfiguration
        /// How the gateway answers; its authentication, admin token, shard, module folder and `separateMetrics`
        /// are set by the start (from `files`, `modules` and `metrics`). Its `accessLog` turns the access log on.
        public var gateway: GatewayConfiguration
        /// What the start reads from files besides the modules.
        public var files: any StartFiles
        /// `GET /metrics` on an address of its own; nil: on the API's address, to the admin only.
        public var metrics: MetricsAddress?
        /// Browser origins answered with CORS headers (each as browsers send it); empty: no CORS layer.
        public var corsOrigins: [String] = []
        /// The background sweep's schedule.
        public var purge = PurgePolicy()
        /// When it changes, the current-version storage is reset.
        public var deploymentVersion = daogateVersion
        /// Where the access log's lines go (standard output unless a test gives a file), and how often they are
        /// written out at least (`AccessLogWriter`); the shutdown writes what remains.
        public var accessLogDescriptor: Int32 = STDOUT_FILENO
        public var accessLogInterval: Duration = .seconds(1)
        /// How long the shutdown waits for the API's requests in flight.
        public var gracePeriod: Duration = .seconds(10)

        /// The modules of `modules` with data in `data`, and the libraries' defaults (127.0.0.1:8080, trusted
        /// headers on loopback).
        public init(modules: String, data: String, http: HTTPServerConfiguration = HTTPServerConfiguration(),
                    gateway: GatewayConfiguration = GatewayConfiguration(), files: any StartFiles = NoStartFiles()) {
            self.modules = modules
            self.engine = Engine.Configuration(dataDirectory: data)
            self.http = http
            self.gateway = gateway
            self.files = files
        }

        /// The data folder.
        public var data: String { engine.dataDirectory }
    }

    /// The metrics server's address, and whether it asks for the admin's credentials (beyond loopback).
    public struct MetricsAddress: Sendable {
        public var host: String
        public var port: UInt16
        public var requiresAdmin: Bool

        public init(host: String, port: UInt16, requiresAdmin: Bool) {
            self.host = host
            self.port = port
            self.requiresAdmin = requiresAdmin
        }
    }

    /// Why the start stopped at one of its own steps.
    public enum StartFailure: Error, CustomStringConvertible {
        /// The module folder has problems (the dialect's, then SQLite's): nothing was opened.
        case modules(folder: String, problems: [LoadError])
        /// A step failed: the descriptor limit, the data folder's lock, the engine, the deployment version, the
        /// listening sockets.
        case step(any Error)

        public var description: String {
            switch self {
            case .modules(let folder, let problems):
                "\(problems.count) problem\(problems.count == 1 ? "" : "s") in \(folder); not serving"
            case .step(let error): "\(error)"
            }
        }
    }

    public let configuration: Configuration
    private let logger: Logger
    private let running = Mutex<Running?>(nil)

    /// What a started server holds until its shutdown.
    private struct Running: Sendable {
        let gateway: Gateway
        let engine: Engine
        let lock: DataFolderLock
        let server: HTTPServer
        let metricsServer: HTTPServer?
        let sweep: PurgeSweep
        let accessLogWriter: AccessLogWriter?
    }

    /// A server that will start as `configuration` says, logging to `logger` (the access log takes its level).
    public init(configuration: Configuration, logger: Logger = Logger(label: "daogate")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The API's base URL (`http://host:port`) once started.
    public var url: String? { running.withLock { $0?.server.url } }
    /// The API's port once started (the one picked for port 0).
    public var port: UInt16? { running.withLock { $0?.server.port } }

    /// `daogate serve`: blocks the termination signals (before any thread starts, so that none takes them), starts,
    /// reloads at each SIGHUP (`ServerState.reload`), and shuts down gracefully at SIGTERM or SIGINT.
    public func run() throws {
        // Before any thread starts (the access log's writer among them): a thread that does not block SIGHUP would
        // take one sent while the main thread is busy reloading, and die of it.
        HTTPServer.blockTerminationSignals()
        try start()
        guard let state = running.withLock({ $0?.gateway.state }) else { return }
        let signal = HTTPServer.waitForTerminationSignal { state.reload(reason: "SIGHUP") }
        logger.notice("signal \(signal): finishing in-flight requests", source: Self.logSource)
        shutdown()
    }

    /// The start sequence, in its order: the JWT keys, the modules (loaded and checked), the cipher, the
    /// descriptor limit, the data folder and its lock, the user-digest key, the engine, the global arguments,
    /// the deployment version, the gateway and its layers, the access log, the servers, the shard's epoch check,
    /// the sweep; then the lines people and scripts read (the first, `daogate listening on URL`, is what scripts
    /// and tests parse), and the reloads of the certificate and the JWT key files.
    public func start() throws {
        let logger = self.logger
        let configuration = self.configuration
        let files = configuration.files
        let data = configuration.data
        // The JWT keys are read before anything else is opened: a bad key file stops the start at once.
        let authentication = try files.authentication(logger: logger)

        let loaded = ModuleSet.load(configuration.modules)
        guard loaded.problems.isEmpty else { throw StartFailure.modules(folder: configuration.modules, problems: loaded.problems) }
        // Full table scans are warnings, not errors: `daogate check --plans` lists them too.
        for warning in loaded.warnings { logger.warning("\(warning)", source: Self.logSource) }
        let cipher = try files.cipher()
        if let ring = cipher?.keyring.snapshot {
            let keys = ring.ids.map { "\($0) (\(ring.keys[$0]!.fingerprint))" }.joined(separator: ", ")
            logger.info("encryption keys \(keys); new values use \(ring.current)", source: Self.logSource)
        }
        var engineConfiguration = configuration.engine
        engineConfiguration.cipher = cipher
        let http = configuration.http
        let outcome = try step { try DescriptorLimit.ensure(engine: engineConfiguration, threads: http.threads,
                                                            connections: http.connectionLimit) }
        if case .raised(let from, let to) = outcome {
            logger.notice("raised the file descriptor limit from \(from) to \(to)", source: Self.logSource)
        }
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let lock = try step { try DataFolderLock.take(folder: data) }
        // From here on, a failed start gives the lock back, and the engine's files once it has them.
        var engine: Engine?
        do {
            UserDigest.setKey(try UserDigest.loadOrMakeKey(in: data))
            let events = EventLog(logger: logger)
            let opened = try step { try Engine(modules: loaded.modules, configuration: engineConfiguration, observer: events) }
            engine = opened
            for (module, values) in try files.globalArguments() {
                try opened.setGlobalArguments(values, module: module)
            }
            if try step({ try opened.prepareCurrentVersionStorage(version: configuration.deploymentVersion) }) {
                logger.notice("deployment version \(configuration.deploymentVersion): the current-version storage was reset", source: Self.logSource)
            }
            var gatewayConfiguration = configuration.gateway
            gatewayConfiguration.adminToken = try files.adminToken()
            gatewayConfiguration.shard = try files.shard()
            gatewayConfiguration.authentication = authentication
            gatewayConfiguration.modulesDirectory = configuration.modules
            gatewayConfiguration.separateMetrics = configuration.metrics != nil
            let gateway = try Gateway(engine: opened, events: events, configuration: gatewayConfiguration)
            let running = try serve(gateway, engine: opened, lock: lock)
            self.running.withLock { $0 = running }
            announce(loaded.modules.count, running)
            // One reload reads again what the server reads from files: SIGHUP, POST /admin/reload and a change of
            // the JWT key files all call it.
            if let tls = http.tls { gateway.state.reloadsCertificate(of: running.server, file: tls.certificateFile) }
            gateway.state.watchKeyFiles()
        } catch {
            engine?.shutdown()
            lock.release()
            throw error
        }
    }

    /// The gateway behind its layers, on its servers, with its sweep: started, or nothing left running.
    private func serve(_ gateway: Gateway, engine: Engine, lock: DataFolderLock) throws(StartFailure) -> Running {
        let configuration = self.configuration
        // CORS is a layer around the gateway, present only when origins are listed.
        let responder: any HTTPResponder = configuration.corsOrigins.isEmpty
            ? gateway : CORSResponder(wrapping: gateway, policy: Gateway.corsPolicy(origins: Set(configuration.corsOrigins)))
        // The access log is buffered (see AccessLogWriter) and written out after the server's last request.
        let accessLogWriter = gateway.configuration.accessLog
            ? AccessLogWriter(descriptor: configuration.accessLogDescriptor, interval: configuration.accessLogInterval) : nil
        accessLogWriter?.start()
        let logLevel = logger.logLevel
        let server = HTTPServer(
            configuration: configuration.http,
            responder: responder,
            accessLog: accessLogWriter.map { writer in
                Logger(label: "daogate.access") { AccessLogHandler(label: $0, writer: writer, logLevel: logLevel) }
            })
        let metricsServer = configuration.metrics.map { address in
            HTTPServer(configuration: HTTPServerConfiguration(host: address.host, port: address.port, threads: 1,
                                                              maximumBodySize: 0, connectionLimit: 16, connectionsPerAddress: 16),
                       responder: gateway.metricsResponder(requiresAdmin: address.requiresAdmin))
        }
        // A shard compares its map's epoch with its peers' before it serves, then every few seconds.
        gateway.watchShardEpochs()
        try step {
            do {
                try server.start()
                try metricsServer?.start()
            } catch {
                server.shutdown(gracePeriod: .zero)
                gateway.state.stopWatching()
                accessLogWriter?.stop()
                throw error
            }
        }
        let sweep = PurgeSweep(gateway: gateway, policy: configuration.purge, logger: logger)
        sweep.start()
        return Running(gateway: gateway, engine: engine, lock: lock, server: server, metricsServer: metricsServer,
                       sweep: sweep, accessLogWriter: accessLogWriter)
    }

    /// The log's lines on what is served, the Litestream warning, and the printed lines.
    private func announce(_ moduleCount: Int, _ running: Running) {
        let configuration = self.configuration
        let engine = configuration.engine
        logger.info("serving \(moduleCount) modules from \(configuration.modules), data in \(configuration.data)", source: Self.logSource)
        logger.info("worker threads: \(configuration.http.threads) (processors this process may use: \(AvailableProcessors.count))", source: Self.logSource)
        logger.info("open database files held to \(engine.maximumOpenDescriptors) descriptors and \(engine.maximumOpenBytes) bytes; users' files: \(engine.userJournal.rawValue) journal", source: Self.logSource)
        // Litestream replicates WAL only: a rollback journal's commits never reach the replica.
        let litestreamMarker = configuration.data + "/" + Self.litestreamMarker
        if engine.userJournal != .wal, FileManager.default.fileExists(atPath: litestreamMarker) {
            let written = (try? String(contentsOfFile: litestreamMarker, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            logger.warning("the data folder has a Litestream configuration (\(written), from daogate litestream-config) but users' files use a \(engine.userJournal.rawValue) journal: Litestream replicates WAL databases only, so users' writes are not replicated; serve with --user-journal wal", source: Self.logSource)
        }
        // The first line is what scripts and tests parse; the others are for people.
        let url = running.server.url
        print("daogate listening on \(url)")
        if configuration.gateway.explorer { print("daogate API explorer on \(url)/docs") }
        print("daogate API on \(url)/dao/{module}/{method}")
        print("daogate OpenAPI description on \(url)/openapi.json")
        if !configuration.corsOrigins.isEmpty { print("daogate CORS origins: \(configuration.corsOrigins.joined(separator: ", "))") }
        if let metricsServer = running.metricsServer { print("daogate metrics on \(metricsServer.url)/metrics") }
        fflush(nil)
    }

    /// The graceful stop: the API's requests in flight finish (up to `gracePeriod`), the metrics server and the
    /// sweep stop, the access log is written out, the watching threads end, the databases close, and the data
    /// folder's lock is given back. A second call, or one before `start()`, does nothing.
    public func shutdown() {
        let taken = running.withLock { state -> Running? in
            let taken = state
            state = nil
            return taken
        }
        guard let running = taken else { return }
        running.server.shutdown(gracePeriod: configuration.gracePeriod)
        running.metricsServer?.shutdown(gracePeriod: .seconds(1))
        running.sweep.stop()
        running.accessLogWriter?.stop()
        running.gateway.state.stopWatching()
        running.engine.shutdown()
        running.lock.release()
        logger.notice("stopped", source: Self.logSource)
        fflush(nil)
    }

    /// The source of the server's log lines, `[daogate]`, as when the command wrote them (swift-log's default is
    /// the calling module's name, `Gateway`).
    static let logSource = "daogate"

    /// The marker `daogate litestream-config` leaves in the data folder (holding the configurations' paths).
    public static let litestreamMarker = "litestream-config"

    /// A step of the start whose failure stops it as `StartFailure.step`.
    private func step<T>(_ body: () throws -> T) throws(StartFailure) -> T {
        do {
            return try body()
        } catch {
            throw .step(error)
        }
    }
}
