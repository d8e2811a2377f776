import Foundation
import Testing

/// `daogate serve` checks its settings against the file descriptor limit
/// before serving, and a server out of descriptors at run time answers 503
/// `overloaded` with `Retry-After`, never 500, and recovers.
@Suite struct DescriptorLimitTests {
    /// `daogate serve` under `prlimit --nofile=SOFT:HARD`, on a fresh folder.
    final class LimitedServer {
        let process = Process()
        let output = LiveServer.Output()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-limit-\(UUID().uuidString)")
        var data: URL { folder.appendingPathComponent("data") }

        init(soft: Int, hard: Int, arguments: [String] = []) throws {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let key = folder.appendingPathComponent("daogate.key")
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: key)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.currentDirectoryURL = LiveServer.root
            process.arguments = ["--nofile=\(soft):\(hard)", LiveServer.binary, "serve", "--modules", "modules",
                                 "--data", data.path, "--port", "0", "--key-file", key.path, "--threads", "2"] + arguments
            process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            pipe.fileHandleForReading.readabilityHandler = { [output] handle in output.append(handle.availableData) }
            try process.run()
        }

        deinit {
            if process.isRunning { process.terminate(); process.waitUntilExit() }
            try? FileManager.default.removeItem(at: folder)
        }

        /// Waits until the server listens (true) or exits (false), for at most 20 s.
        func started() -> Bool {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if output.text.contains("daogate listening on") { return true }
                if !process.isRunning {
                    Thread.sleep(forTimeInterval: 0.1)  // the last output
                    return false
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }

        /// The soft limit of the running server, from `/proc`.
        var softLimit: Int? {
            let limits = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)
            let line = limits?.split(separator: "\n").first { $0.hasPrefix("Max open files") }
            return line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first.flatMap { Int($0) }
        }
    }

    @Test func aLimitTheSettingsDoNotFitRefusesToStartNamingThem() throws {
        let server = try LimitedServer(soft: 256, hard: 256)
        try #require(!server.started(), "it started: \(server.output.text)")
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 1)
        let log = server.output.text
        // The default budget, 3/4 of the hard limit less the connections, is at least 64.
        #expect(log.contains("--max-open-descriptors 64"), "\(log)")
        #expect(log.contains("ulimit -n"), "\(log)")
        #expect(log.contains("HTTP connections"), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: server.data.path), "nothing was created")
    }

    @Test func theSoftLimitIsRaisedWhereTheHardOneAllows() throws {
        let server = try LimitedServer(soft: 256, hard: 4096)
        #expect(server.started(), "\(server.output.text)")
        #expect(server.softLimit == 4096)
        #expect(server.output.text.contains("raised the file descriptor limit from 256 to 4096"))
    }

    @Test func settingsThatFitTheLimitStart() throws {
        // 100 descriptors for the databases, one more database per thread at 7 (2 threads: a writer and 2
        // readers) and a temporary file, 1024 connections and 36 more: 1176 in all. --max-open-databases stays accepted.
        let server = try LimitedServer(soft: 1200, hard: 1200, arguments: ["--max-open-descriptors", "100", "--max-open-databases", "8"])
        #expect(server.started(), "\(server.output.text)")
        #expect(server.softLimit == 1200)
        let refused = try LimitedServer(soft: 1200, hard: 1200, arguments: ["--max-open-descriptors", "200"])
        #expect(!refused.started())
        #expect(refused.output.text.contains("lower --max-open-descriptors to 124 at most"), "\(refused.output.text)")
    }

    /// Sets the running server's soft limit to its open descriptors plus `extra`, counted once they are
    /// steady (the connection of the start's last `/healthz` may still be closing: a users' rollback file
    /// needs one descriptor, so one counted too many would let a database open).
    func limit(_ server: LiveServer, extra: Int) throws {
        let pid = server.process.processIdentifier
        func count() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count }
        var open = try count()
        var steady = 0
        let deadline = Date().addingTimeInterval(5)
        while steady < 5 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            let now = try count()
            steady = now == open ? steady + 1 : 0
            open = now
        }
        try run("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(open + extra):"])
    }

    /// One curl, one connection: each request (curl's arguments after the URL's path), then `/healthz`; the heads of the answers.
    func send(_ server: LiveServer, _ requests: [[String]]) throws -> [String] {
        var arguments: [String] = []
        for request in requests {
            arguments += ["-s", "--max-time", "10", "-o", "/dev/null", "-D", "-", server.base + request[0]] + request.dropFirst() + ["--next"]
        }
        arguments += ["-s", "--max-time", "10", "-o", "/dev/null", "-D", "-", server.base + "/healthz"]
        return try run("/usr/bin/curl", arguments).components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
    }

    /// A select for each user, in their own database.
    func calls(_ server: LiveServer, users: [String]) throws -> [String] {
        try send(server, users.map { ["/dao/Messages/unreadCount", "-X", "POST", "-H", "X-User-Id: \($0)"] })
    }

    @Test func runningOutOfDescriptorsIsA503ThatPassesNotA500() throws {
        let server = try LiveServer()
        // Room for the connection's socket only: no database can open, and none is open to give way.
        try limit(server, extra: 1)
        let json = "Content-Type: application/json"
        let starved = try send(server, [
            ["/dao/Messages/unreadCount", "-X", "POST", "-H", "X-User-Id: starved-1"],
            ["/dao/Messages/insertMessage", "-H", "X-User-Id: starved-2", "-H", json,
             "--data-binary", #"{"model": {"time": 1, "content": "a", "uin": 2, "read": false}}"#],
            ["/dao/Books/addBook", "-H", json, "--data-binary", #"{"title": "t"}"#],
            ["/kv/user/b/k", "-X", "PUT", "-H", "X-User-Id: starved-3", "-H", json, "--data-binary", #"{"value": 1}"#],
        ])
        #expect(starved.count == 5)
        for head in starved.prefix(4) {
            #expect(head.hasPrefix("HTTP/1.1 503"), "\(head)")
            #expect(head.contains("Retry-After: 1"), "\(head)")
        }
        #expect(starved.last?.hasPrefix("HTTP/1.1 200") == true)
        #expect(!server.log.contains("status=500"))
        try run("/usr/bin/prlimit", ["--pid", "\(server.process.processIdentifier)", "--nofile=4096:"])
        let reply = try server.curl("/dao/Messages/unreadCount", method: "POST", headers: ["X-User-Id: starved-1"])
        #expect(reply.status == 200)
        #expect(try server.curl("/healthz").status == 200)
    }

    @Test func idleDatabasesGiveWayWhenDescriptorsRunOut() throws {
        let server = try LiveServer()
        _ = try calls(server, users: (1...6).map { "idle-\($0)" })
        // Room for the socket and not one more database with its reader: idle ones must close for each new one.
        try limit(server, extra: 3)
        let heads = try calls(server, users: (1...6).map { "new-\($0)" })
        #expect(heads.count == 7)
        #expect(heads.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(heads)")
    }
}
