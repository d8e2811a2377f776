import Foundation
import Testing

/// A real `daogate serve` on a free loopback port, with its own data folder
/// and key, started from the package root; stopped with SIGTERM.
final class LiveServer: @unchecked Sendable {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The binary under test: `DAOGATE_BINARY`, else the debug build.
    static var binary: String {
        ProcessInfo.processInfo.environment["DAOGATE_BINARY"] ?? root.appendingPathComponent(".build/debug/daogate").path
    }

    let process = Process()
    let folder: URL
    var data: URL { folder.appendingPathComponent("data") }
    private(set) var port = 0
    private let output = Output()
    /// Whether this server removes its folder when it goes; a restarted one takes it over.
    private var ownsFolder = true
    /// `https` when the server was given a certificate, else `http`.
    private(set) var scheme = "http"
    /// The certificate curl trusts for HTTPS (`--cacert`).
    var trustedCertificate: String?

    /// Starts the server and waits until `/healthz` answers; with `folder`,
    /// on that folder's data and key (a restart).
    /// With `trustedCertificate`, curl trusts that certificate (an HTTPS server's).
    /// With `directory`, the server runs there (relative paths, `modules` included, are read from it).
    /// With `launcher`, that command runs the server (`["/usr/bin/taskset", "-c", "0"]`: confined to processor 0);
    /// it must exec it, so that the process is the server's.
    init(arguments: [String] = [], environment: [String: String] = [:], modules: String = "modules", folder: URL? = nil,
         trustedCertificate: String? = nil, directory: URL? = nil, launcher: [String] = []) throws {
        self.trustedCertificate = trustedCertificate
        self.folder = folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("daogate-live-\(UUID().uuidString)")
        let key = self.folder.appendingPathComponent("daogate.key")
        if folder == nil {
            try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: key)
        }
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.currentDirectoryURL = directory ?? Self.root
        // A test's own key (--key-dir, --key-file) replaces the folder's.
        let keyArguments = arguments.contains("--key-dir") || arguments.contains("--key-file") ? [] : ["--key-file", key.path]
        process.arguments = ["serve", "--modules", modules, "--data", data.path, "--port", "0"] + keyArguments + arguments
        if let command = launcher.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = launcher.dropFirst() + [Self.binary] + (process.arguments ?? [])
        }
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
        variables.merge(environment) { $1 }
        process.environment = variables
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                output.finish()
            } else {
                output.append(data)
            }
        }
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while port == 0 {
            if let match = log.firstMatch(of: /daogate listening on (https?):\/\/[^\s]+:(\d+)/) {
                scheme = String(match.1)
                port = Int(match.2)!
            }
            guard process.isRunning else { throw LiveError("daogate serve exited: \(log)") }
            guard Date() < deadline else { throw LiveError("daogate serve did not start: \(log)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        while (try? curl("/healthz").status) != 200 {
            guard Date() < deadline else { throw LiveError("/healthz never answered: \(log)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        if ownsFolder { try? FileManager.default.removeItem(at: folder) }
    }

    /// Stops this server and starts another on the same data and key.
    func restarted(arguments: [String] = [], environment: [String: String] = [:], modules: String = "modules") throws -> LiveServer {
        #expect(stop() == 0)
        ownsFolder = false
        return try LiveServer(arguments: arguments, environment: environment, modules: modules, folder: folder)
    }

    /// Runs `daogate serve` with `arguments` to its exit (a server expected to refuse to start), with the
    /// environment's `DAOGATE_` variables removed; its status and output.
    static func refusal(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.currentDirectoryURL = root
        process.arguments = ["serve"] + arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// Kills this server (SIGKILL: no graceful stop, as a crash) and starts another on the same data and key.
    func killedAndRestarted(arguments: [String] = [], modules: String = "modules") throws -> LiveServer {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        ownsFolder = false
        return try LiveServer(arguments: arguments, modules: modules, folder: folder)
    }

    /// What the server printed so far (standard output and error).
    var log: String { output.text }

    /// The server's output, appended from the pipe's reading thread.
    final class Output: @unchecked Sendable {
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        private var ended = false
        func append(_ data: Data) { lock.withLock { bytes += data } }
        /// The pipe reached its end: the server exited and everything it wrote is in.
        func finish() { lock.withLock { ended = true } }
        var isFinished: Bool { lock.withLock { ended } }
        var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
    }

    var base: String { "\(scheme)://127.0.0.1:\(port)" }

    /// How long the last `stop()` took from SIGTERM to the process's exit (not counting the wait for its output).
    private(set) var stopSeconds: TimeInterval?

    /// Sends SIGTERM and waits, until its output is read to the end too (the access log's last lines are written
    /// as it stops); returns the exit status. The output's end may come late: a process another test spawns at
    /// that moment can inherit the pipe's writing end, and the pipe ends when both have closed it.
    func stop() -> Int32 {
        let stopping = Date()
        process.terminate()
        process.waitUntilExit()
        stopSeconds = Date().timeIntervalSince(stopping)
        let deadline = Date().addingTimeInterval(5)
        while !output.isFinished && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        return process.terminationStatus
    }

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: String
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
        var code: String? { json?["code"] as? String }
    }

    /// One request with curl: `-i` output parsed into status, headers and body.
    func curl(_ path: String, method: String? = nil, body: String? = nil, headers: [String] = [],
              json: Bool = true) throws -> Reply {
        var arguments = ["-s", "-i", base + path]
        if let trustedCertificate { arguments += ["--cacert", trustedCertificate] }
        if let method { arguments += ["-X", method] }
        for header in headers { arguments += ["-H", header] }
        if let body {
            arguments += ["--data-binary", body]
            if json && !headers.contains(where: { $0.lowercased().hasPrefix("content-type") }) {
                arguments += ["-H", "Content-Type: application/json"]
            }
        }
        let text = try run("/usr/bin/curl", arguments)
        guard let split = text.range(of: "\r\n\r\n") else { throw LiveError("no HTTP response: \(text)") }
        let head = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = head.first, let status = Int(statusLine.split(separator: " ")[1]) else {
            throw LiveError("no status line: \(text)")
        }
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Reply(status: status, headers: fields, body: String(text[split.upperBound...]))
    }
}

/// Runs a program and returns its standard output.
@discardableResult
func run(_ program: String, _ arguments: [String], input: String? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    if let input {
        let pipe = Pipe()
        process.standardInput = pipe
        try process.run()
        pipe.fileHandleForWriting.write(Data(input.utf8))
        try pipe.fileHandleForWriting.close()
    } else {
        try process.run()
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

struct LiveError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
