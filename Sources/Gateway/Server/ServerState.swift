import DAODialect
import DAOEngine
import DAOKeyValue
import Foundation
import HTTPTransport
import Synchronization

/// The long-lived state of a serving daogate, one per process (PostgREST's
/// `AppState`): what every module set shares — the configuration, the
/// key-value store, the caches, the change streams, the counters and the
/// events — held once, and the module set in use (`ModuleSet`), an immutable
/// value that a reload swaps whole. A request reads the set once
/// (`Gateway.respond`), so calls already running finish on the old set and
/// the next ones start on the new.
public final class ServerState: Sendable {
    public let configuration: GatewayConfiguration
    public let events: EventLog
    let metrics = Metrics()
    /// The access log's digest of each user, computed once per id.
    let userDigests = UserDigests()
    /// The key-value store, in the engine's files.
    let kv: KVStore
    /// The LRU caches: in memory, and in tables of the engine's files.
    let memoryCaches: MemoryCaches
    let diskCaches: DiskCaches
    /// The open `GET /changes` streams.
    let changeStreams: ChangeStreams
    /// The module set in use.
    private let current: Mutex<ModuleSet>
    /// Held while a reload reads and swaps: reloads run one at a time.
    private let reloading = Mutex<Void>(())
    /// How the TLS certificate and key are read again (`reloadsCertificate`); nil: plain HTTP.
    private let certificate = Mutex<CertificateReload?>(nil)
    /// Cleared at the server's shutdown (`stopWatching`): the threads that watch files and peers end.
    private let watching = Atomic<Bool>(true)

    /// The state of a server answering with `engine`'s modules.
    init(engine: Engine, events: EventLog, configuration: GatewayConfiguration) throws {
        self.configuration = configuration
        self.events = events
        self.kv = KVStore(engine: engine, cipher: engine.configuration.cipher, clock: configuration.clock)
        self.memoryCaches = MemoryCaches(limits: configuration.memoryCaches)
        self.diskCaches = DiskCaches(engine: engine, cipher: engine.configuration.cipher, clock: configuration.clock,
                                     maximumCapacity: configuration.maximumDiskCacheCapacity)
        self.changeStreams = ChangeStreams(feed: engine.changes, limits: configuration.changeStreams)
        self.current = Mutex(try ModuleSet(engine: engine, authentication: configuration.authentication))
    }

    /// The module set in use now. A request reads it once.
    public var modules: ModuleSet { current.withLock { $0 } }

    /// Has `reload` read the certificate and key of `server` again (`HTTPServer.reloadCertificate`).
    public func reloadsCertificate(of server: HTTPServer, file: String) {
        certificate.withLock { $0 = CertificateReload(server: server, file: file) }
    }

    /// Reads again everything the server reads from files — the TLS certificate and key, the JWT keys, the key
    /// folder (`--key-dir`), then the module folder — each part keeping what it had when its files have a
    /// problem; records the one outcome in the log and for `GET /events`. SIGHUP, `POST /admin/reload` and the
    /// JWT key files' watcher all call it; reloads run one at a time.
    @discardableResult
    public func reload(reason: String) -> ServerReload {
        reloading.withLock { _ in
            var report = ServerReload(reason: reason)
            if let certificate = certificate.withLock({ $0 }) {
                do {
                    try certificate.server.reloadCertificate()
                    report.parts.append(.init(applied: true, "reloaded the TLS certificate \(certificate.file)"))
                } catch {
                    report.parts.append(.init(applied: false, "kept the current TLS certificate: \(error)"))
                }
            }
            if case .jwt(let verifier) = configuration.authentication {
                do {
                    let keys = try verifier.reload()
                    report.parts.append(.init(applied: true, "\(keys.keys.count) JWT key\(keys.keys.count == 1 ? "" : "s") loaded",
                                              warnings: keys.skipped.map { "JWT key skipped: \($0)" }))
                } catch {
                    report.parts.append(.init(applied: false, "the JWT keys were not reloaded, the previous ones stay in use: \(error)"))
                }
            }
            if let keyring = modules.engine.configuration.cipher?.keyring, let directory = keyring.directory {
                do {
                    let ring = try Keyring.load(directory: directory)
                    try modules.engine.checkKeys(ring)
                    keyring.replace(with: ring)
                    report.parts.append(.init(applied: true, "\(ring.keys.count) encryption key\(ring.keys.count == 1 ? "" : "s") loaded (\(ring.ids.joined(separator: ", "))); new values use \(ring.current)"))
                } catch {
                    report.parts.append(.init(applied: false, "the key folder was not reloaded, the keys in use stay: \(error)"))
                }
            }
            report.modules = reloadModules(reason: reason)
            events.record(report)
            return report
        }
    }

    /// Loads the module folder again with the checks of a start (`ModuleSet.load`, then the engine's: the
    /// tables' owners, the encryption keys); a set without problem replaces the one in use at once, and the
    /// OpenAPI document with it. A refused set changes nothing.
    private func reloadModules(reason: String) -> ModuleReload {
        var report = ModuleReload(reason: reason)
        guard let directory = configuration.modulesDirectory else {
            report.problems = [LoadError(file: "<none>", line: 0, message: "the server was started without a module folder")]
            return report
        }
        let loaded = ModuleSet.load(directory)
        report.problems = loaded.problems
        guard report.problems.isEmpty else { return report }
        let old = modules
        do {
            let next = try ModuleSet(engine: try old.engine.replacingModules(loaded.modules),
                                     authentication: configuration.authentication)
            report.compare(old.engine.modules, next.engine.modules)
            report.warnings = loaded.warnings
            current.withLock { $0 = next }
        } catch {
            report.problems = [LoadError(file: directory, line: 0, message: "\(error)")]
        }
        return report
    }

    /// Calls `reload` when one of the JWT key files changes (checked every second), with the reason
    /// "a JWT key file changed"; nothing without jwt authentication.
    public func watchKeyFiles() {
        guard case .jwt(let verifier) = configuration.authentication else { return }
        Thread.detachNewThread { [self] in
            while isWatching {
                Thread.sleep(forTimeInterval: 1)
                if isWatching, verifier.keyFilesChanged { reload(reason: "a JWT key file changed") }
            }
        }
    }

    /// Whether the watching threads (`watchKeyFiles`, `Gateway.watchShardEpochs`) go on.
    var isWatching: Bool { watching.load(ordering: .relaxed) }

    /// Ends the watching threads at their next turn (a server's shutdown): they reload and check nothing more.
    public func stopWatching() {
        watching.store(false, ordering: .relaxed)
    }
}

/// The server whose certificate a reload reads again, and the file named in the log.
struct CertificateReload: Sendable {
    let server: HTTPServer
    let file: String
}
