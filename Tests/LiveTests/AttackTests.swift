#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The HTTP-layer attacks of issue 9 against a real `daogate serve`: encoded NULs in paths, headers sent twice,
/// request smuggling, slow clients and the settings that bound them.
@Suite struct AttackTests {
    static let nulPaths: [(method: String, path: String, body: String?)] = [
        ("DELETE", "/kv/common/scratch%00/k1", nil),
        ("DELETE", "/lru/memory/common/m2%00/entries/x", nil),
        ("GET", "/kv/common/scratch%00zz/k1", nil),
        ("PUT", "/kv/common/scratch/k1%00b", #"{"value": "evil"}"#),
        ("POST", "/dao/Demo/insertItem%00zzz", #"["evil"]"#),
        ("DELETE", "/modules/Demo%00/table", nil),
    ]

    @Test func anEncodedNULNeitherShortensARouteNorReachesAnotherResource() throws {
        let server = try LiveServer()
        for key in ["k1", "k2", "k3"] {
            #expect(try server.curl("/kv/common/scratch/\(key)", method: "PUT", body: #"{"value": "\#(key)"}"#).status == 200)
        }
        #expect(try server.curl("/lru/memory/common/m2", method: "PUT", body: #"{"capacity": 10}"#).status == 200)
        #expect(try server.curl("/lru/memory/common/m2/entries", body: #"{"entries": {"x": 1, "y": 2}}"#).status == 200)
        #expect(try server.curl("/dao/Demo/insertItem", body: #"["kept"]"#).status == 200)
        for (method, path, body) in Self.nulPaths {
            let reply = try server.curl(path, method: method, body: body)
            #expect(reply.status == 400 && reply.code == "invalid_path", "\(method) \(path): \(reply.body)")
        }
        let keys = try server.curl("/kv/common/scratch").json?["keys"] as? [[String: Any]]
        #expect(keys?.compactMap { $0["key"] as? String }.sorted() == ["k1", "k2", "k3"])
        #expect(try server.curl("/kv/common/scratch/k1").json?["value"] as? String == "k1")
        #expect(try server.curl("/lru/memory/common/m2").json?["count"] as? Int == 2)
        #expect(try server.curl("/dao/Demo/getItem", body: #"[1]"#).body == #"{"result":"kept"}"#)
        #expect(try server.curl("/dao/Demo/getItem", body: #"[2]"#).body == #"{"result":null}"#)
    }

    @Test func twoUserIdsAreRefused() throws {
        let server = try LiveServer()
        let reply = try server.curl("/kv/user/b/k", method: "PUT", body: #"{"value": 1}"#, headers: ["X-User-Id: ann", "X-User-Id: bob"])
        #expect(reply.status == 400 && reply.code == "duplicate_header", "\(reply.body)")
        for user in ["ann", "bob"] {
            #expect(try server.curl("/kv/user/b/k", headers: ["X-User-Id: \(user)"]).status == 404)
        }
    }

    /// The smuggled request would delete a key; it never runs, and the refusal is a problem like any other.
    @Test(arguments: [
        ("Content-Length: 0\r\nContent-Length: 47\r\n", "", 400, "invalid_request"),
        ("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n", 400, "invalid_request"),
        ("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n", 501, "unsupported_transfer_coding"),
    ])
    func aSmuggledRequestNeverRuns(head: String, prefix: String, status: Int, code: String) throws {
        let server = try LiveServer()
        #expect(try server.curl("/kv/common/smug/k", method: "PUT", body: #"{"value": 1}"#).status == 200)
        let smuggled = "DELETE /kv/common/smug/k HTTP/1.1\r\nHost: x\r\n\r\n"
        let socket = try LiveSocket(port: server.port)
        let start = Date()
        #expect(socket.send("POST /healthz HTTP/1.1\r\nHost: x\r\n\(head)\r\n\(prefix)\(smuggled)"))
        let answer = try #require(socket.readToEnd())
        #expect(Date().timeIntervalSince(start) < 2)
        #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(answer)")
        #expect(answer.contains("application/problem+json") && answer.contains(#""code":"\#(code)""#), "\(answer)")
        #expect(!answer.contains("\"deleted\""))
        #expect(try server.curl("/kv/common/smug/k").status == 200)
    }

    /// HTTP/2 (or 0.9) on the request line is answered by libmicrohttpd with 505 and closed; nothing runs.
    @Test func anotherMajorVersionIs505() throws {
        let server = try LiveServer()
        #expect(try server.curl("/kv/common/v/k", method: "PUT", body: #"{"value": 1}"#).status == 200)
        let socket = try LiveSocket(port: server.port)
        #expect(socket.send("DELETE /kv/common/v/k HTTP/2.0\r\nHost: x\r\n\r\n"))
        #expect(socket.readToEnd()?.hasPrefix("HTTP/1.1 505 ") == true)
        #expect(try server.curl("/kv/common/v/k").status == 200)
    }

    @Test func theConnectionLimitsAndDeadlinesAreSettings() throws {
        // The header deadline is long enough that the two held connections outlive the tries below on a machine
        // busy with the whole suite: a test thread kept off the cores for the deadline saw them cut before it
        // tried, and every third connection answered.
        let deadline = 10.0
        let server = try LiveServer(arguments: ["--max-connections-per-address", "2"],
                                    environment: ["DAOGATE_HEADER_TIMEOUT": "\(Int(deadline))"])
        let held = try (0..<2).map { _ in try LiveSocket(port: server.port, receiveTimeout: Int(deadline) + 5) }
        for socket in held { #expect(socket.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")) }
        // A third connection from the same address is closed as it comes, once the server has accepted both
        // (on a loaded machine that may take a while: tried again until then, within the header deadline).
        let opened = Date()
        var refused = false
        while !refused && Date().timeIntervalSince(opened) < deadline - 2 {
            Thread.sleep(forTimeInterval: 0.25)
            let third = try LiveSocket(port: server.port)
            _ = third.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            refused = third.readToEnd().map { !$0.contains("200") } ?? true
        }
        #expect(refused)
        // The two held ones are cut at the header deadline, trickling or not.
        let start = Date()
        _ = held[0].send("X-More: 1\r\n")
        for socket in held { #expect(socket.readToEnd() == "") }
        #expect(Date().timeIntervalSince(start) < deadline + 1.5)
        #expect(try server.curl("/healthz").status == 200)
    }

    @Test func limitsThatCannotHoldStopTheStart() throws {
        #expect(throws: LiveError.self) {
            _ = try LiveServer(arguments: ["--max-connections", "8", "--max-connections-per-address", "9"])
        }
        #expect(throws: LiveError.self) { _ = try LiveServer(environment: ["DAOGATE_BODY_TIMEOUT": "-1"]) }
    }
}

/// A TCP socket connected to `port` on 127.0.0.1, `configure`d before it connects.
func connectToLoopback(port: Int, configure: (Int32) -> Void = { _ in }) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    configure(descriptor)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { close(descriptor); throw LiveError("cannot connect to port \(port)") }
    return descriptor
}

/// A TCP connection to the live server on 127.0.0.1, for the bytes curl will not send.
final class LiveSocket {
    private let descriptor: Int32

    /// `receiveTimeout`: how long `readToEnd` waits for the server's close, in seconds.
    init(port: Int, receiveTimeout: Int = 5) throws {
        descriptor = try connectToLoopback(port: port) { descriptor in
            var limit = timeval(tv_sec: receiveTimeout, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    deinit { close(descriptor) }

    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// What the server sends until it closes the connection (a reset counts as a close); nil if it keeps it
    /// open past the receive timeout (5 s unless the socket was made with another).
    func readToEnd() -> String? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count > 0 { received += chunk[..<count]; continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return nil }
            return String(decoding: received, as: UTF8.self)
        }
    }
}
