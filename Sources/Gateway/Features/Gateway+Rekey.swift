import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport
import Synchronization

/// The rekey of this process: whether one runs (one at a time), and the report of the running or last one.
private let rekeyState = Mutex<(running: Bool, report: RekeyReport?)>((false, nil))

extension Gateway {
    /// `POST /admin/rekey` (admin): reads the key folder again, then writes
    /// every encrypted value again with its target key (`RekeyJob`), in this
    /// process, through the databases' one writer, while the server serves;
    /// answers the summary. `daogate rekey` calls it when a server holds the data folder.
    func rekeyRoute(_ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        guard request.body.isEmpty else { throw Problem(.invalidBody, "POST /admin/rekey takes no body") }
        let engine = self.engine
        guard let cipher = engine.configuration.cipher else {
            throw Problem(.rekeyUnavailable, "this server has no encryption key (--key-dir or --key-file): nothing is encrypted")
        }
        let started = rekeyState.withLock { state in
            guard !state.running else { return false }
            state = (true, nil)
            return true
        }
        guard started else { throw Problem(.rekeyRunning, "a rekey is already running on this server") }
        defer { rekeyState.withLock { $0.running = false } }
        if let directory = cipher.keyring.directory {
            do {
                let ring = try Keyring.load(directory: directory)
                try engine.checkKeys(ring)
                cipher.keyring.replace(with: ring)
            } catch {
                throw Problem(.keysRefused, "the key folder \(directory) was not loaded, nothing was rekeyed: \(error)")
            }
        }
        let logger = events.logger
        let report: RekeyReport
        do {
            report = try RekeyJob(engine: engine, cipher: cipher).run { report, location in
                rekeyState.withLock { $0.report = report }
                logger?.info("rekey: \(location) done; \(report.databases) databases, \(report.reencrypted) re-encrypted, \(report.encrypted) encrypted, \(report.failed) failed")
            }
        } catch let error as EngineError {
            throw Problem(error)
        } catch {
            throw Problem(.storageFailed, "the rekey stopped: \(error)")
        }
        rekeyState.withLock { $0.report = report }
        logger?.notice("rekey to \(report.currentKey): \(report.databases) databases, \(report.reencrypted) re-encrypted, \(report.encrypted) encrypted, \(report.failed) failed")
        return json(report.value)
    }

    /// `GET /admin/rekey` (admin): whether a rekey runs, and the counts of the running or last one so far.
    func rekeyStatus() -> HTTPResponse {
        let (running, report) = rekeyState.withLock { $0 }
        var object: OrderedObject = ["running": .bool(running)]
        if case .object(let members)? = report?.value {
            for (name, value) in members { object[name] = value }
        }
        return json(.object(object))
    }
}
