import DAOEngine
import Foundation
import Gateway
import HTTPTransport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The library's server (`GatewayServer`), started in process as `daogate serve` starts it, on port 0 with a
/// temporary data folder and the repository's modules, and called over its socket with curl.
@Suite struct GatewayServerTests {
    /// The one file the start reads here: the cipher of the modules' encrypted properties.
    struct Key: StartFiles {
        let key: Cipher
        func cipher() throws -> Cipher? { key }
    }

    /// One key for every server of a test, as one deployment has.
    let files: Key
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-server-\(UUID().uuidString)")
    var data: String { folder.appendingPathComponent("data").path }
    var accessLog: String { folder.appendingPathComponent("access.log").path }

    init() throws {
        files = Key(key: Cipher(key: try .generate()))
    }

    /// The server's configuration: loopback, any free port, two workers, no sweep; access-log lines go to
    /// `descriptor` and are written out only when a buffer fills or the server stops (an interval of an hour).
    func configuration(accessLogDescriptor descriptor: Int32) -> GatewayServer.Configuration {
        var configuration = GatewayServer.Configuration(
            modules: GatewayFixture.modulesDirectory, data: data,
            http: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), files: files)
        configuration.accessLogDescriptor = descriptor
        configuration.accessLogInterval = .seconds(3600)
        configuration.purge.every = nil
        return configuration
    }

    /// curl's status and body for `url`, a JSON body POSTed when given.
    func curl(_ url: String, json body: String? = nil) throws -> (status: Int, body: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-w", "\n%{http_code}", url]
            + (body.map { ["-H", "Content-Type: application/json", "--data-binary", $0] } ?? [])
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    func accessLogText() -> String {
        (try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? ""
    }

    @Test func aServerStartedInProcessAnswersOnItsSocketAndItsShutdownFreesTheFolderAndWritesTheAccessLog() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let descriptor = open(accessLog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }

        let server = GatewayServer(configuration: configuration(accessLogDescriptor: descriptor))
        try server.start()
        let url = try #require(server.url)
        #expect(server.port != 0)
        let health = try curl(url + "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok","modules":5}"#)
        let inserted = try curl(url + "/dao/Demo/insertItem", json: #"["over a socket"]"#)
        #expect(inserted.status == 200, "\(inserted.body)")
        let read = try curl(url + "/dao/Demo/getItem", json: "[1]")
        #expect(read.status == 200)
        #expect(read.body == #"{"result":"over a socket"}"#)

        // While it serves, the data folder is its own: a second server on it stops at the lock.
        let second = GatewayServer(configuration: configuration(accessLogDescriptor: descriptor))
        do {
            try second.start()
            Issue.record("a second server started on a data folder in use")
            second.shutdown()
        } catch let failure as GatewayServer.StartFailure {
            #expect("\(failure)".contains("another daogate serves this data folder"), "\(failure)")
        }
        #expect(try curl(url + "/healthz").status == 200)
        // The access log's lines wait in their buffers (an hour's interval, far from full)…
        #expect(!accessLogText().contains("path=/healthz"))

        server.shutdown()
        #expect(server.url == nil)
        // …and the shutdown wrote them out, every request's.
        let lines = accessLogText().split(separator: "\n")
        #expect(lines.filter { $0.contains("path=/healthz ") }.count == 2, "\(lines)")
        #expect(lines.contains { $0.contains("path=/dao/Demo/insertItem ") && $0.contains("status=200") }, "\(lines)")
        #expect(lines.contains { $0.contains("path=/dao/Demo/getItem ") }, "\(lines)")
        server.shutdown()  // a second shutdown does nothing

        // The folder is free again: the next server takes it, and finds the data the first one wrote.
        let next = GatewayServer(configuration: configuration(accessLogDescriptor: descriptor))
        try next.start()
        defer { next.shutdown() }
        let nextURL = try #require(next.url)
        #expect(try curl(nextURL + "/dao/Demo/getItem", json: "[1]").body == #"{"result":"over a socket"}"#)
    }

    /// A module folder with a problem stops the start before anything is opened: no data folder, no lock.
    @Test func aModuleFolderWithAProblemStopsTheStartBeforeTheDataFolderIsTouched() throws {
        let modules = folder.appendingPathComponent("modules")
        try FileManager.default.createDirectory(at: modules, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try #"<module name="Broken"><select id="x" result="int">select</select></module>"#
            .write(to: modules.appendingPathComponent("Broken.xml"), atomically: true, encoding: .utf8)
        var configuration = configuration(accessLogDescriptor: STDOUT_FILENO)
        configuration.modules = modules.path
        let server = GatewayServer(configuration: configuration)
        do {
            try server.start()
            Issue.record("a module folder with a problem was served")
            server.shutdown()
        } catch let failure as GatewayServer.StartFailure {
            guard case .modules(let folder, let problems) = failure else {
                Issue.record("not the modules' failure: \(failure)")
                return
            }
            #expect(folder == modules.path)
            #expect(!problems.isEmpty)
            #expect("\(failure)".hasSuffix("in \(modules.path); not serving"))
        }
        #expect(!FileManager.default.fileExists(atPath: data))
    }
}
