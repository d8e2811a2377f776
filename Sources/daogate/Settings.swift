import ArgumentParser
import DAOEngine
import SQLiteDatabase
import DAOKeyValue
import DAOValue
import Foundation
import Gateway
import HTTPTransport
import JWT
import Logging

/// The serve options resolved: the command line, else the environment, else the default. The files they name
/// (keys, token, globals, shard map) are read by the server's start, through `StartFiles`.
struct Settings: StartFiles {
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
    /// The change-feed group (`--changes-…`).
    var changeStreams: ChangeStreamLimits
    var changeWindow: Int

    init(_ options: Serve, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let source = OptionSource(environment)
        (changeStreams, changeWindow) = try options.changes.resolved(environment: environment)
        modules = source.text(options.modules, "modules") ?? "modules"
        data = source.text(options.data, "data") ?? "data"
        // Defaults are the libraries' own.
        let server = HTTPServerConfiguration()
        let caches = MemoryCaches.Limits()
        let gateway = GatewayConfiguration()
        host = source.text(options.host, "host") ?? server.host
        port = try source.number(options.port, "port", server.port, 0...65535)
        threads = try source.number(options.threads, "threads", server.threads, 1...1024)
        keyFile = source.text(options.keyFile, "key-file")
        keyDir = source.text(options.keyDir, "key-dir")
        if keyDir != nil, keyFile != nil || source.environmentValue("key") != nil {
            throw ValidationError("--key-dir (\(OptionSource.variable("key-dir"))) is a keyring; --key-file and \(OptionSource.variable("key")) are its one-key form: give one of them")
        }
        adminTokenFile = source.text(options.adminTokenFile, "admin-token-file")
        globalsFile = source.text(options.globals, "globals")
        maximumBodySize = try source.number(options.maxBodySize, "max-body-size", server.maximumBodySize, 1...(1 << 30))
        maximumOpenDatabases = try source.number(options.maxOpenDatabases, "max-open-databases",
                                          Engine.Configuration(dataDirectory: "").maximumOpenDatabases, 1...100_000)
        timeout = try source.number(options.timeout, "timeout", server.connectionTimeout, 1...86_400)
        maximumConnections = try source.number(options.maxConnections, "max-connections", server.connectionLimit, threads...1_000_000)
        maximumOpenDescriptors = try source.number(options.maxOpenDescriptors, "max-open-descriptors",
                                            DescriptorLimit.defaultDatabaseDescriptors(connections: maximumConnections), 16...10_000_000)
        maximumOpenBytes = try source.number(options.maxOpenBytes, "max-open-bytes", 400 << 20, (1 << 20)...(1 << 50))
        maximumConnectionsPerAddress = try source.number(options.maxConnectionsPerAddress, "max-connections-per-address",
                                                  min(server.connectionsPerAddress, maximumConnections), 0...maximumConnections)
        headerTimeout = try source.number(options.headerTimeout, "header-timeout", Int(server.headerTimeout.components.seconds), 0...86_400)
        bodyTimeout = try source.number(options.bodyTimeout, "body-timeout", Int(server.bodyTimeout.components.seconds), 0...86_400)
        deploymentVersion = source.text(options.deploymentVersion, "deployment-version") ?? daogateVersion
        memoryCaches = MemoryCaches.Limits(
            maximumCapacity: try source.number(options.memoryCacheMaxCapacity, "memory-cache-max-capacity", caches.maximumCapacity, 1...100_000_000),
            maximumCachesPerLocation: try source.number(options.memoryCachesPerSpace, "memory-caches-per-space", caches.maximumCachesPerLocation, 1...10_000),
            budgetBytes: try source.number(options.memoryCacheBytes, "memory-cache-bytes", caches.budgetBytes, 0...(1 << 40)))
        if options.memoryCacheUserBytes != nil || source.environmentValue("memory-cache-user-bytes") != nil {
            memoryCaches.userBudgetBytes = try source.number(options.memoryCacheUserBytes, "memory-cache-user-bytes", 0,
                                                      0...memoryCaches.budgetBytes)
        }
        maximumDiskCacheCapacity = try source.number(options.diskCacheMaxCapacity, "disk-cache-max-capacity", gateway.maximumDiskCacheCapacity, 1...1_000_000_000)
        purge = PurgePolicy()
        if let every = source.text(options.purgeEvery, "purge-every") {
            let seconds = try DurationText.seconds(every, option: "--purge-every (\(OptionSource.variable("purge-every")))")
            purge.every = seconds > 0 ? seconds : nil
        }
        if let age = source.text(options.purgeOlderThan, "purge-older-than") {
            purge.olderThan = try DurationText.seconds(age, option: "--purge-older-than (\(OptionSource.variable("purge-older-than")))")
        }
        let journal = source.text(options.userJournal, "user-journal")?.lowercased() ?? JournalMode.rollback.rawValue
        guard let parsedJournal = JournalMode(rawValue: journal) else {
            throw ValidationError("user journal must be rollback or wal, not \(journal)")
        }
        userJournal = parsedJournal
        switch source.text(options.synchronous, "synchronous")?.lowercased() ?? "normal" {
        case "normal": synchronous = .normal
        case "full": synchronous = .full
        case let other: throw ValidationError("synchronous must be normal or full, not \(other)")
        }
        let level = source.text(options.logLevel, "log-level")?.lowercased() ?? "info"
        guard let parsedLevel = Logger.Level(rawValue: level) else {
            throw ValidationError("log level must be trace, debug, info, notice, warning, error or critical, not \(level)")
        }
        logLevel = parsedLevel
        switch source.text(options.accessLog, "access-log")?.lowercased() ?? "on" {
        case "on", "true", "yes", "1": accessLog = true
        case "off", "false", "no", "0": accessLog = false
        case let other: throw ValidationError("access log must be on or off, not \(other)")
        }
        switch source.text(options.docs, "docs")?.lowercased() ?? "on" {
        case "on", "true", "yes", "1": explorer = true
        case "off", "false", "no", "0": explorer = false
        case let other: throw ValidationError("docs must be on or off, not \(other)")
        }
        let origins = source.list(options.corsOrigin, "cors-origin")
        corsOrigins = []
        for origin in origins {
            do {
                let checked = try CORSPolicy.origin(origin)
                if !corsOrigins.contains(checked) { corsOrigins.append(checked) }
            } catch {
                throw ValidationError("\(error) (--cors-origin, \(OptionSource.variable("cors-origin")))")
            }
        }
        switch (source.text(options.tlsCert, "tls-cert"), source.text(options.tlsKey, "tls-key")) {
        case (let certificate?, let key?):
            let priorities = source.text(options.tlsPriorities, "tls-priorities") ?? TLSConfiguration.defaultPriorities
            do throws(HTTPServerError) { try TLSConfiguration.checkPriorities(priorities) } catch {
                throw ValidationError("--tls-priorities (\(OptionSource.variable("tls-priorities"))): \(error.message)")
            }
            tls = TLSConfiguration(certificateFile: certificate, keyFile: key, priorities: priorities)
        case (nil, nil):
            guard source.text(options.tlsPriorities, "tls-priorities") == nil else {
                throw ValidationError("--tls-priorities (\(OptionSource.variable("tls-priorities"))) needs --tls-cert and --tls-key: without them daogate serves plain HTTP")
            }
            tls = nil
        case (_?, nil): throw ValidationError("--tls-cert needs --tls-key (\(OptionSource.variable("tls-key"))), the certificate's private key")
        case (nil, _?): throw ValidationError("--tls-key needs --tls-cert (\(OptionSource.variable("tls-cert"))), the key's certificate")
        }
        if options.maxDatabaseSize != nil || source.environmentValue("max-database-size") != nil {
            // 64 KiB: the pages a fresh database with the KV and cache tables needs, with room to spare.
            maximumDatabaseBytes = try source.number(options.maxDatabaseSize, "max-database-size", 0, (64 * 1024)...(1 << 50))
        }
        maximumCommonBytes = maximumDatabaseBytes
        if options.maxCommonSize != nil || source.environmentValue("max-common-size") != nil {
            maximumCommonBytes = try source.number(options.maxCommonSize, "max-common-size", 0, (64 * 1024)...(1 << 50))
        }
        maximumStoragesPerUser = try source.number(options.maxStoragesPerUser, "max-storages-per-user",
                                            Engine.Configuration(dataDirectory: "").maximumStoragesPerUser ?? 16, 1...100_000)
        if let listen = source.text(options.metricsListen, "metrics-listen") {
            guard let address = Self.hostAndPort(listen) else {
                throw ValidationError("the metrics address must be HOST:PORT ([::1]:9100 for IPv6), not \(listen)")
            }
            metricsListen = address
        }
        self.environment = environment
        shardName = source.text(options.shard, "shard")
        shardMap = source.text(options.shardMap, "shard-map")
        guard (shardName == nil) == (shardMap == nil) else { throw ValidationError("--shard and --shard-map go together") }

        authMode = source.text(options.auth, "auth")?.lowercased()
        jwt = JWTSettings()
        jwt.secretFile = source.text(options.jwtSecretFile, "jwt-secret-file")
        jwt.keysFile = source.text(options.jwtKeys, "jwt-keys")
        let userClaim = source.text(options.jwtUserClaim, "jwt-user-claim")
        jwt.userClaim = userClaim ?? jwt.userClaim
        jwt.audience = source.text(options.jwtAudience, "jwt-audience")
        jwt.issuer = source.text(options.jwtIssuer, "jwt-issuer")
        jwt.leeway = try source.number(options.jwtLeeway, "jwt-leeway", jwt.leeway, 0...86_400)
        if let claim = source.text(options.jwtAdminClaim, "jwt-admin-claim") {
            let parts = claim.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("the JWT admin claim is NAME=VALUE (for example role=admin), not \(claim)")
            }
            jwt.adminClaim = (parts[0], parts[1])
        }
        let jwtOptionGiven = jwt.secretFile != nil || jwt.keysFile != nil || jwt.audience != nil || jwt.issuer != nil
            || jwt.adminClaim != nil || userClaim != nil || source.text(options.jwtLeeway.map { String($0) }, "jwt-leeway") != nil
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
                    + "(behind a proxy that authenticates and sets X-User-Id); or \(OptionSource.variable("auth"))")
            }
        case let other?:
            throw ValidationError("auth must be jwt or trusted-header, not \(other)")
        }
        // Secure by default, as for the API's address: metrics beyond loopback
        // are asked for an admin's credentials, so there must be one.
        let adminConfigured = adminTokenFile != nil || source.environmentValue("admin-token") != nil
            || (authMode == "jwt" && jwt.adminClaim != nil)
        if let metrics = metricsListen, !Self.isLoopback(metrics.host), !adminConfigured {
            throw ValidationError("metrics on \(metrics.host), beyond loopback, are served to an admin only, and none is configured: "
                + "give --admin-token-file (Prometheus sends it as its bearer token)"
                + " or, with --auth jwt, --jwt-admin-claim; or listen for metrics on loopback")
        }
    }

    /// The library server's configuration: the engine's, the HTTP server's and the gateway's settings, the
    /// metrics address, CORS, the sweep, the deployment version; and these settings as the files the start reads
    /// (`StartFiles`), whose errors name the options.
    var serverConfiguration: GatewayServer.Configuration {
        var configuration = GatewayServer.Configuration(modules: modules, data: data, http: httpConfiguration,
                                                        gateway: gatewayConfiguration, files: self)
        configuration.engine = engineConfiguration
        configuration.metrics = metricsListen.map {
            GatewayServer.MetricsAddress(host: $0.host, port: $0.port, requiresAdmin: !Self.isLoopback($0.host))
        }
        configuration.corsOrigins = corsOrigins
        configuration.purge = purge
        configuration.deploymentVersion = deploymentVersion
        return configuration
    }

    /// The engine's configuration: the data folder, SQLite's settings, the budgets of open files (the cipher is
    /// the start's, `cipher()`).
    var engineConfiguration: Engine.Configuration {
        var configuration = Engine.Configuration(
            dataDirectory: data,
            database: DatabaseConfiguration(synchronous: synchronous, maximumReaders: max(2, threads),
                                            maximumDatabaseBytes: maximumDatabaseBytes),
            maximumOpenDatabases: maximumOpenDatabases, maximumOpenDescriptors: maximumOpenDescriptors,
            maximumOpenBytes: maximumOpenBytes)
        configuration.userJournal = userJournal
        configuration.maximumCommonBytes = maximumCommonBytes
        configuration.maximumStoragesPerUser = maximumStoragesPerUser
        configuration.changeWindow = changeWindow
        return configuration
    }

    /// The HTTP server's configuration: the address, the workers, the limits and deadlines, TLS.
    var httpConfiguration: HTTPServerConfiguration {
        HTTPServerConfiguration(
            host: host, port: port, threads: threads,
            maximumBodySize: maximumBodySize, connectionTimeout: timeout,
            connectionLimit: maximumConnections, connectionsPerAddress: maximumConnectionsPerAddress,
            headerTimeout: .seconds(headerTimeout), bodyTimeout: .seconds(bodyTimeout),
            tls: tls)
    }

    /// The gateway's configuration (the admin token, the shard and the authentication are the start's, from the
    /// files it reads).
    var gatewayConfiguration: GatewayConfiguration {
        var configuration = GatewayConfiguration(memoryCaches: memoryCaches, maximumDiskCacheCapacity: maximumDiskCacheCapacity,
                                                 accessLog: accessLog)
        configuration.changeStreams = changeStreams
        configuration.explorer = explorer
        return configuration
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
            throw RunFailure("the JWT keys (--jwt-secret-file or \(OptionSource.variable("jwt-secret-file")), --jwt-keys or \(OptionSource.variable("jwt-keys"))): \(error)")
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
            return try CipherKey.fromEnvironment(OptionSource.variable("key")).map { Cipher(key: $0) }
        } catch {
            // The variable to set, named: in a container the file comes from DAOGATE_KEY_FILE.
            throw RunFailure("the encryption key (--key-dir or \(OptionSource.variable("key-dir")), --key-file or \(OptionSource.variable("key-file")), or \(OptionSource.variable("key"))): \(error)")
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
            token = environment[OptionSource.variable("admin-token")]?.trimmingCharacters(in: .whitespacesAndNewlines)
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
