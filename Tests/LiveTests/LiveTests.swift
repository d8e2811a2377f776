import Foundation
import Testing

/// The product as users meet it: `daogate serve` on a loopback port, called with curl.
@Suite(.serialized) struct LiveTests {
    /// Every kind of bad input: a clear 4xx, never a 5xx, and no database touched that should not be.
    @Test func badInputGetsAClearErrorAndChangesNothing() throws {
        let server = try LiveServer(arguments: ["--max-body-size", "4096"])
        let cases: [(String, LiveServer.Reply, Int, String)] = [
            ("malformed JSON", try server.curl("/dao/Demo/getItem", body: "{\"index\": "), 400, "invalid_json"),
            ("trailing garbage", try server.curl("/dao/Demo/getItem", body: "[1] [2]"), 400, "invalid_json"),
            ("a string body", try server.curl("/dao/Demo/getItem", body: "\"1\""), 400, "invalid_body"),
            ("a number body", try server.curl("/dao/Demo/getItem", body: "1"), 400, "invalid_body"),
            ("wrong Content-Type", try server.curl("/dao/Demo/getItem", body: "[1]", headers: ["Content-Type: text/plain"]), 415, "unsupported_media_type"),
            ("form-encoded body", try server.curl("/dao/Demo/getItem", body: "index=1", json: false), 415, "unsupported_media_type"),
            ("unknown module", try server.curl("/dao/Nope/getItem", body: "[1]"), 404, "unknown_module"),
            ("unknown method", try server.curl("/dao/Demo/nope", body: "[1]"), 404, "unknown_method"),
            ("unknown route", try server.curl("/../../etc/passwd"), 404, "not_found"),
            ("GET on a method", try server.curl("/dao/Demo/getItem"), 405, "method_not_allowed"),
            ("missing $ argument", try server.curl("/dao/Books/addBook", body: #"{"year": 1}"#), 400, "missing_argument"),
            ("null $ argument", try server.curl("/dao/Books/addBook", body: #"{"title": null}"#), 400, "missing_argument"),
            ("wrong type", try server.curl("/dao/Demo/getItem", body: #"{"index": "one"}"#), 400, "wrong_type"),
            ("unknown argument", try server.curl("/dao/Demo/getItem", body: #"{"idx": 1}"#), 400, "unknown_argument"),
            ("too many arguments", try server.curl("/dao/Demo/getItem", body: "[1, 2]"), 400, "unknown_argument"),
            ("user-dependent without X-User-Id", try server.curl("/dao/Messages/unreadCount", method: "POST"), 400, "user_required"),
            ("empty user id", try server.curl("/dao/Messages/unreadCount", method: "POST", headers: ["X-User-Id;"]), 400, "invalid_user"),
            ("10 KB user id", try server.curl("/dao/Messages/unreadCount", method: "POST",
                                              headers: ["X-User-Id: " + String(repeating: "x", count: 10_240)]), 400, "invalid_user"),
            ("template without a table", try server.curl("/dao/ChatMessages/latest", body: "[1]", headers: ["X-User-Id: u"]), 400, "invalid_table"),
            ("invalid table name", try server.curl("/dao/ChatMessages/latest", body: "[1]",
                                                   headers: ["X-User-Id: u", "X-Table-Name: t; drop table x"]), 400, "invalid_table"),
            ("keyword table name", try server.curl("/dao/ChatMessages/latest", body: "[1]",
                                                   headers: ["X-User-Id: u", "X-Table-Name: select"]), 400, "invalid_table"),
            ("raw-text injection", try server.curl("/dao/Books/sorted", body: #"{"orderBy": "1; drop table books"}"#), 400, "unsafe_inline"),
            ("invalid storage", try server.curl("/dao/Demo/getItem", body: "[1]", headers: ["X-Storage: ../x"]), 400, "invalid_storage"),
            ("oversized body", try server.curl("/dao/Demo/insertItem", body: "[\"" + String(repeating: "a", count: 8000) + "\"]"), 413, "body_too_large"),
            ("oversized chunked body", try server.curl("/dao/Demo/insertItem", body: "[\"" + String(repeating: "a", count: 8000) + "\"]",
                                                       headers: ["Transfer-Encoding: chunked", "Content-Type: application/json"]), 413, "body_too_large"),
            ("destructive operation on a shared database", try server.curl("/modules/Demo/table", method: "DELETE"), 401, "admin_required"),
            ("admin token sent to a server without one", try server.curl("/modules/Demo/table", method: "DELETE",
                                                                       headers: ["Authorization: Bearer guess"]), 403, "admin_disabled"),
        ]
        for (what, reply, status, code) in cases {
            #expect(reply.status == status, "\(what): \(reply.status) \(reply.body)")
            #expect(reply.code == code, "\(what): \(reply.body)")
            #expect(reply.headers["content-type"] == "application/problem+json", "\(what)")
        }
        #expect(try server.curl("/dao/Books/addBook", body: #"{"title": "A", "year": 2000, "isbn": "1"}"#).status == 200)
        let conflict = try server.curl("/dao/Books/addBook", body: #"{"title": "B", "year": 2001, "isbn": "1"}"#)
        #expect(conflict.status == 409)
        #expect(conflict.code == "constraint_violation")
        #expect(try server.curl("/dao/Books/titlesFrom", body: "[0]").body == #"{"result":["A"]}"#)
        // A hostile but valid id gets a database of its own, inside users/.
        #expect(try server.curl("/dao/Messages/unreadCount", method: "POST", headers: ["X-User-Id: ../../etc/passwd"]).status == 200)
        let databases = try FileManager.default.subpathsOfDirectory(atPath: server.data.path).filter { $0.hasSuffix(".db") }.sorted()
        #expect(databases.count == 2)
        #expect(databases.first == "common.db")
        #expect(databases.last?.hasPrefix("users/x-") == true)
    }

    /// HTTP forbids NUL in a header value; libmicrohttpd ends the value there, so
    /// the server sees the prefix — an id the client could have sent itself.
    /// No 5xx, and the database reached is that prefix's own, inside users/.
    @Test func aNulByteInAHeaderEndsTheValueWithout5xx() throws {
        let server = try LiveServer()
        let response = try rawRequest(port: server.port, Array("POST /dao/Messages/unreadCount HTTP/1.1\r\nHost: x\r\nX-User-Id: a".utf8)
            + [0] + Array("/../../b\r\nContent-Length: 0\r\n\r\n".utf8))
        let status = Int(response.split(separator: " ").dropFirst().first ?? "") ?? 0
        #expect(status == 200 || (400..<500).contains(status), "\(response)")
        #expect(try server.curl("/healthz").status == 200)
        let databases = try FileManager.default.subpathsOfDirectory(atPath: server.data.path).filter { $0.hasSuffix(".db") }
        #expect(databases.allSatisfy { $0 == "users/p-a.db" }, "\(databases)")
    }

    @Test func theOpenAPICommandWritesWhatTheServerServes() throws {
        let server = try LiveServer()
        let served = try server.curl("/openapi.json")
        #expect(served.status == 200)
        #expect(served.headers["content-type"] == "application/json")
        let modules = LiveServer.root.appendingPathComponent("modules").path
        #expect(try run(LiveServer.binary, ["openapi", "--modules", modules]) == served.body)
        let file = server.folder.appendingPathComponent("daogate.json")
        try run(LiveServer.binary, ["openapi", "--modules", modules, "--out", file.path])
        #expect(try String(contentsOf: file, encoding: .utf8) == served.body)
    }

    @Test func keepAliveReusesTheConnection() throws {
        let server = try LiveServer()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-v", "-o", "/dev/null", server.base + "/healthz", "-o", "/dev/null", server.base + "/healthz"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text.contains("Re-using existing connection"))
    }

    @Test func theAccessLogHasOneLinePerRequestAndNoUserID() throws {
        let server = try LiveServer()
        _ = try server.curl("/dao/Messages/unreadCount", method: "POST", headers: ["X-User-Id: ann-secret-id"])
        _ = try server.curl("/dao/Demo/getItem", body: "[1]")
        #expect(server.stop() == 0)
        let log = server.log
        #expect(log.contains("/dao/Messages/unreadCount"))
        #expect(log.contains("/dao/Demo/getItem"))
        #expect(log.contains("user#"))
        #expect(!log.contains("ann-secret-id"))
    }

    /// The access log is buffered and written every second: a graceful stop right after the requests still
    /// writes every request's line.
    @Test func aGracefulStopWritesEveryAccessLogLine() throws {
        let server = try LiveServer()
        let count = 60
        let urls = (1...count).map { "\(server.base)/dao/Demo/getItem?n=\($0)" }
        let statuses = try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}\\n", "-H", "Content-Type: application/json",
                                                 "-d", "[1]"] + urls)
        #expect(statuses.split(separator: "\n").count == count)
        #expect(server.stop() == 0)
        let lines = server.log.split(separator: "\n").filter { $0.contains("daogate.access") && $0.contains("path=/dao/Demo/getItem ") }
        #expect(lines.count == count, "\(server.log)")
        #expect(lines.allSatisfy { $0.contains(" method=POST ") && $0.contains(" status=200 ") && $0.hasSuffix("] request") })
    }

    /// An open user's file costs what its connections hold, not a bulk page-cache allocation per connection
    /// (SQLite's default of 20 pages each): measured 237 kB of RSS per open user with it, 91 kB without.
    @Test func anOpenUserCostsLessThan160KBOfMemory() throws {
        let server = try LiveServer(arguments: ["--access-log", "off", "--max-open-databases", "1000"])
        func touch(_ users: ClosedRange<Int>) throws {
            // One curl, one connection; `--next` starts each request's options afresh.
            var arguments: [String] = []
            for user in users {
                if user != users.lowerBound { arguments.append("--next") }
                arguments += ["-s", "-o", "/dev/null", "-w", "%{http_code}\\n", "-X", "POST", "-H", "X-User-Id: u\(user)",
                              "\(server.base)/dao/Messages/unreadCount"]
            }
            let statuses = try run("/usr/bin/curl", arguments).split(separator: "\n")
            #expect(statuses.count == users.count && statuses.allSatisfy { $0 == "200" })
        }
        func residentKilobytes() throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return try #require(Int(line.split(separator: " ")[1]))
        }
        try touch(1...20)
        let before = try residentKilobytes()
        try touch(21...420)
        let perUser = Double(try residentKilobytes() - before) / 400
        #expect(perUser < 160, "\(perUser) kB per open user")
    }

    /// The digest key lives in the data folder, readable by its owner only,
    /// so a user's digest is the same across restarts.
    @Test func theUserDigestIsKeyedAndStableAcrossRestarts() throws {
        let server = try LiveServer()
        _ = try server.curl("/dao/Messages/unreadCount", method: "POST", headers: ["X-User-Id: ann"])
        let key = server.data.appendingPathComponent("digest.key")
        let attributes = try FileManager.default.attributesOfItem(atPath: key.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((attributes[.size] as? NSNumber)?.intValue == 32)
        let restarted = try server.restarted()
        _ = try restarted.curl("/dao/Messages/unreadCount", method: "POST", headers: ["X-User-Id: ann"])
        #expect(restarted.stop() == 0)
        let digests = (server.log + restarted.log).matches(of: /user#([0-9a-f]+)/).map { String($0.1) }
        #expect(digests.count >= 2)
        #expect(Set(digests).count == 1)
        #expect(digests.first?.count == 32)
    }

    @Test func shutdownFinishesTheRequestInFlightAndClosesTheDatabases() throws {
        let server = try LiveServer()
        #expect(try server.curl("/dao/Demo/insertItem", body: #"["first"]"#).status == 200)
        // Headers and half a body arrive; the signal comes; then the rest of the body.
        let socket = try connect(port: server.port)
        defer { close(socket) }
        send(socket, Array("POST /dao/Demo/insertItem HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n[\"sec".utf8))
        Thread.sleep(forTimeInterval: 0.3)
        server.process.terminate()
        Thread.sleep(forTimeInterval: 0.3)
        send(socket, Array("ond\"]".utf8))
        let response = receive(socket)
        #expect(response.hasPrefix("HTTP/1.1 200"), "\(response)")
        #expect(response.contains(#"{"ok":true,"changes":1,"lastInsertRowId":2}"#))
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: server.data.path).filter { $0.hasSuffix("-wal") }
        #expect(leftovers.isEmpty, "the WAL was not checkpointed and removed: \(leftovers)")
    }

    @Test func settingsComeFromTheEnvironment() throws {
        let server = try LiveServer(environment: ["DAOGATE_MAX_BODY_SIZE": "64", "DAOGATE_ACCESS_LOG": "off"])
        #expect(try server.curl("/dao/Demo/insertItem", body: "[\"" + String(repeating: "a", count: 100) + "\"]").status == 413)
        #expect(server.stop() == 0)
        #expect(!server.log.contains("/dao/Demo/insertItem"))
        #expect(throws: LiveError.self) { try LiveServer(environment: ["DAOGATE_LOG_LEVEL": "chatty"]) }
    }

    @Test func aBrokenModuleKeepsTheServerFromStarting() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-broken-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"<module name="M"><select id="a">selec 1</select></module>"#.utf8).write(to: folder.appendingPathComponent("m.xml"))
        do {
            _ = try LiveServer(modules: folder.path)
            Issue.record("the server started")
        } catch {
            #expect("\(error)".contains("m.xml:1: SQLite: near \"selec\": syntax error"))
        }
    }
}

// MARK: Raw sockets, to send bytes curl will not

func connect(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard status == 0 else { throw LiveError("cannot connect to port \(port)") }
    return fd
}

func send(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
}

/// Reads until the peer closes, or a complete response with a Content-Length has arrived.
func receive(_ fd: Int32) -> String {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        received += buffer[..<count]
        let text = String(decoding: received, as: UTF8.self)
        if let split = text.range(of: "\r\n\r\n"),
           let length = text[..<split.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") })
            .flatMap({ Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }),
           text.utf8.count - text[..<split.upperBound].utf8.count >= length {
            break
        }
    }
    return String(decoding: received, as: UTF8.self)
}

func rawRequest(port: Int, _ bytes: [UInt8]) throws -> String {
    let fd = try connect(port: port)
    defer { close(fd) }
    send(fd, bytes)
    return receive(fd)
}
