import DAOEngine
import DAOStorage
import DAOValue
import HTTPTransport
import Synchronization

/// Set while a rekey runs in this process: one at a time.
private let rekeyRunning = Atomic<Bool>(false)

extension Gateway {
    /// `POST /admin/rekey` (admin): reads the key folder again, then writes
    /// every encrypted value again with its target key (`RekeyJob`), in this
    /// process, through the databases' one writer, while the server serves;
    /// answers the summary. `daogate rekey` calls it when a server holds the data folder.
    func rekeyRoute(_ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        guard request.body.isEmpty else { throw Problem(400, "invalid_body", "POST /admin/rekey takes no body") }
        let engine = currentEngine
        guard let cipher = engine.configuration.cipher else {
            throw Problem(409, "rekey_unavailable", "this server has no encryption key (--key-dir or --key-file): nothing is encrypted")
        }
        guard rekeyRunning.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw Problem(409, "rekey_running", "a rekey is already running on this server")
        }
        defer { rekeyRunning.store(false, ordering: .releasing) }
        if let directory = cipher.keyring.directory {
            do {
                let ring = try Keyring.load(directory: directory)
                try engine.checkKeys(ring)
                cipher.keyring.replace(with: ring)
            } catch {
                throw Problem(409, "keys_refused", "the key folder \(directory) was not loaded, nothing was rekeyed: \(error)")
            }
        }
        let logger = events.logger
        let report: RekeyReport
        do {
            report = try RekeyJob(engine: engine, cipher: cipher).run { report, location in
                logger?.info("rekey: \(location) done; \(report.databases) databases, \(report.reencrypted) re-encrypted, \(report.encrypted) encrypted, \(report.failed) failed")
            }
        } catch let error as EngineError {
            throw Problem(error)
        } catch {
            throw Problem(500, "storage_failed", "the rekey stopped: \(error)")
        }
        logger?.notice("rekey to \(report.currentKey): \(report.databases) databases, \(report.reencrypted) re-encrypted, \(report.encrypted) encrypted, \(report.failed) failed")
        return json(report.value)
    }
}
