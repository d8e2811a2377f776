import ArgumentParser
import DAODialect
import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Gateway
import Sharding

/// `daogate rekey`: every encrypted value written again with the keyring's current key (or its module's own).
///
/// A data folder is one process's (`DataFolderLock`: users' files are opened
/// without SQLite's file locks), so the rekey runs where the folder's writer
/// is. With no server on the folder, here: it takes the folder's lock for the
/// time it runs. With a server on it, in the server: `POST /admin/rekey` at
/// `--server`, as its admin, which rekeys through the server's own writers
/// while it serves.
struct Rekey: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-encrypt every encrypted value with the keyring's current key (a module's own key for its table).",
        discussion: """
            Visits every database file of the data folder: the crypt columns of module tables, encrypted KV \
            entries and encrypted disk-cache entries, in every storage and every user's file. A value already \
            written with its target key is skipped, so a stopped run is continued by running it again. When a \
            server serves the data folder, the rekey runs in it (POST /admin/rekey at --server, with the admin \
            token), with the server's key folder. Progress goes to standard error, one JSON summary to standard \
            output; the exit status is 1 when a value did not decrypt (the summary lists them). See docs/keys.md.
            """
    )

    @Option(help: "The folder of database files (DAOGATE_DATA; default ./data).")
    var data: String?

    @Option(help: "The folder of module files (DAOGATE_MODULES; default ./modules).")
    var modules: String?

    @Option(help: "The keyring folder: ID.key files and 'current' (DAOGATE_KEY_DIR).")
    var keyDir: String?

    @Option(help: "HOST:PORT of the server that serves the data folder, when one does (plain HTTP, e.g. 127.0.0.1:8080).")
    var server: String?

    @Option(help: "A file holding the server's admin token (DAOGATE_ADMIN_TOKEN_FILE; or the token itself in DAOGATE_ADMIN_TOKEN).")
    var adminTokenFile: String?

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let source = OptionSource(environment)
        let data = source.text(self.data, "data") ?? "data"
        let modulesFolder = source.text(modules, "modules") ?? "modules"
        guard let keyDir = source.text(keyDir, "key-dir") else {
            throw ValidationError("rekey needs the keyring: --key-dir DIR (\(OptionSource.variable("key-dir")))")
        }
        let ring: Keyring.Snapshot
        do {
            ring = try Keyring.load(directory: keyDir)
        } catch {
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        guard FileManager.default.fileExists(atPath: data) else {
            printToStandardError("daogate: no data folder \(data)")
            throw ExitCode(1)
        }
        let summary: Value
        do {
            try DataFolderLock.take(folder: data)
            summary = try rekeyHere(data: data, modules: modulesFolder, keyDir: keyDir, ring: ring)
        } catch let error as DataFolderLockError {
            guard let server else {
                printToStandardError("daogate: \(error)")
                printToStandardError("daogate: a server serves \(data): give --server HOST:PORT and its admin token to rekey through it")
                throw ExitCode(1)
            }
            summary = try rekeyThroughServer(server, environment: environment, ring: ring)
        }
        print(String(decoding: summary.jsonBytes(), as: UTF8.self))
        if (summary[member: "failed"]?.integerValue ?? 0) > 0 { throw ExitCode(1) }
    }

    /// The rekey in this process, which holds the data folder's lock.
    private func rekeyHere(data: String, modules: String, keyDir: String, ring: Keyring.Snapshot) throws -> Value {
        let (loaded, problems) = ModuleLoader.loadDirectory(modules)
        guard problems.isEmpty else {
            for problem in problems { printToStandardError(problem.description) }
            printToStandardError("daogate: \(problems.count) problem\(problems.count == 1 ? "" : "s") in \(modules); nothing rekeyed")
            throw ExitCode(1)
        }
        UserDigest.setKey(try UserDigest.loadOrMakeKey(in: data))
        let cipher = Cipher(keyring: Keyring(ring, directory: keyDir))
        let engine: Engine
        do {
            engine = try Engine(modules: loaded, configuration: Engine.Configuration(dataDirectory: data, cipher: cipher))
        } catch {
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        defer { engine.shutdown() }
        printToStandardError("rekey: new values use key \(ring.current); keys \(ring.ids.joined(separator: ", "))")
        let report = try RekeyJob(engine: engine, cipher: cipher).run { report, location in
            printToStandardError("rekey: \(report.databases) \(location): \(report.reencrypted) re-encrypted, \(report.encrypted) encrypted, \(report.failed) failed")
        }
        return report.value
    }

    /// The rekey in the server that holds the data folder.
    private func rekeyThroughServer(_ address: String, environment: [String: String], ring: Keyring.Snapshot) throws -> Value {
        let file = OptionSource(environment).text(adminTokenFile, "admin-token-file")
        var client = ShardClient(address: address, token: try Settings.adminToken(file: file, environment: environment))
        client.timeout = 24 * 3600
        printToStandardError("rekey: a server holds the data folder; rekeying through it, at \(address)")
        // The rekey is one request; its progress is polled beside it.
        final class Outcome: @unchecked Sendable {
            let lock = NSLock()
            var result: Result<Value, any Error>?
        }
        let outcome = Outcome()
        let request = Thread { [client] in
            let result = Result { try client.json("POST", "/admin/rekey") }
            outcome.lock.withLock { outcome.result = result }
        }
        request.start()
        var shown = -1
        var poller = client
        poller.timeout = 10
        while outcome.lock.withLock({ outcome.result }) == nil {
            Thread.sleep(forTimeInterval: 1)
            guard let status = try? poller.json("GET", "/admin/rekey"), status[member: "running"] == .bool(true),
                  let databases = status[member: "databases"]?.integerValue, Int(databases) != shown else { continue }
            shown = Int(databases)
            printToStandardError("rekey: \(databases) databases: \(status[member: "reencrypted"]?.integerValue ?? 0) re-encrypted, \(status[member: "encrypted"]?.integerValue ?? 0) encrypted, \(status[member: "failed"]?.integerValue ?? 0) failed")
        }
        let summary: Value
        switch outcome.lock.withLock({ outcome.result })! {
        case .success(let value): summary = value
        case .failure(let error):
            printToStandardError("daogate: \(error)")
            throw ExitCode(1)
        }
        if let current = summary[member: "currentKey"]?.stringValue, current != ring.current {
            printToStandardError("daogate: the server's current key is \(current), the key folder's is \(ring.current): is the server's --key-dir this one?")
            print(String(decoding: summary.jsonBytes(), as: UTF8.self))
            throw ExitCode(1)
        }
        printToStandardError("rekey: \(summary[member: "databases"]?.integerValue ?? 0) databases done")
        return summary
    }
}
