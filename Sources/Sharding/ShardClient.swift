#if canImport(Glibc)
import Glibc
#endif
import DAOValue
import Foundation

public struct ShardClientError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The answer was longer than the request's limit.
    public let tooLarge: Bool
    public init(_ description: String, tooLarge: Bool = false) {
        self.description = description
        self.tooLarge = tooLarge
    }
}

/// The HTTP/1.1 client shards and `daogate move-bucket` talk to each other with: one request per connection
/// (`Connection: close`), plain HTTP on the shards' network, the admin token as bearer. Small on purpose: the
/// admin operations of a move are a handful of requests.
public struct ShardClient: Sendable {
    /// `host:port`.
    public let address: String
    public let token: String?
    public var timeout: Int = 60

    public init(address: String, token: String?) {
        self.address = address
        self.token = token
    }

    public struct Response: Sendable {
        public var status: Int
        public var body: [UInt8]
    }

    /// A request whose answer must be a 2xx JSON object; anything else is an error carrying the answer.
    public func json(_ method: String, _ path: String, _ body: Value? = nil) throws -> Value {
        let response = try request(method, path, body: body?.jsonBytes(), limit: Self.jsonLimit)
        guard (200..<300).contains(response.status), let value = try? Value(parsingJSON: response.body) else {
            throw ShardClientError("\(method) \(address)\(path) answered \(response.status): \(String(decoding: response.body.prefix(400), as: UTF8.self))")
        }
        return value
    }

    /// The largest JSON answer taken (a bucket's file list, a status).
    public static let jsonLimit = 16 << 20

    /// One request; an answer (head and body) longer than `limit` bytes is abandoned with `ShardClientError.tooLarge`.
    public func request(_ method: String, _ path: String, body: [UInt8]? = nil, limit: Int = .max) throws -> Response {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw ShardClientError("\(address) is not host:port")
        }
        let host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let socket = try Self.connect(host: host, port: port, timeout: timeout, patience: resolutionPatience)
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(address)\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        let message = Array((head + "\r\n").utf8) + (body ?? [])
        var sent = 0
        while sent < message.count {
            let written = message[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw ShardClientError("sending to \(address) failed: errno \(errno)") }
            sent += written
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw ShardClientError("reading from \(address) failed: errno \(errno)") }
            received += buffer[0..<count]
            // The head's few bytes ride on the limit: whatever the body says of itself, the download stops here.
            guard received.count <= limit &+ 65536 else {
                throw ShardClientError("\(method) \(address)\(path) answered more than \(limit) bytes; the download was abandoned", tooLarge: true)
            }
        }
        return try Self.parse(received, from: address)
    }

    static func parse(_ bytes: [UInt8], from address: String) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            throw ShardClientError("\(address) sent no complete HTTP response")
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\r\n")
        let statusParts = head.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw ShardClientError("\(address) sent no status line") }
        var body = Array(bytes[(end + 4)...])
        for line in head.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[0].lowercased(), value = parts[1].trimmingCharacters(in: .whitespaces)
            if name == "content-length", let length = Int(value), length <= body.count { body = Array(body.prefix(length)) }
            if name == "transfer-encoding", value.lowercased() == "chunked" { body = try dechunk(body) }
        }
        return Response(status: status, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].firstIndex(of: 13), let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                .split(separator: ";")[0], radix: 16) else { throw ShardClientError("a malformed chunk") }
            if size == 0 { break }
            let start = lineEnd + 2
            guard start + size <= bytes.count else { throw ShardClientError("a truncated chunk") }
            output += bytes[start..<(start + size)]
            index = start + size + 2
        }
        return output
    }

    /// How long a name that does not resolve is asked again before the request fails; nil: until the request's
    /// `timeout`, zero: once (the epoch checks, for which a peer not found is a peer down). A container network's
    /// name server answers for a container only while it runs, and podman's (aardvark-dns) leaves queries
    /// unanswered for moments while containers join or leave the network, so that the resolver falls through to
    /// the host's, which knows no such name, for more than 5 s at a time here: a move or an import would fail on a shard
    /// that is there. Never longer than the request's `timeout`.
    public var resolutionPatience: Duration?

    private static func connect(host: String, port: UInt16, timeout: Int, patience: Duration?) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let deadline = ContinuousClock.now + min(patience ?? .seconds(timeout), .seconds(timeout))
        var pauseMilliseconds = 100
        var status = getaddrinfo(host, String(port), &hints, &list)
        // Not found, not now, or the name server failed: asked again. A bad flag or family would not change.
        while status == EAI_NONAME || status == EAI_AGAIN || status == EAI_FAIL,
              ContinuousClock.now + .milliseconds(pauseMilliseconds) < deadline {
            Thread.sleep(forTimeInterval: Double(pauseMilliseconds) / 1000)
            pauseMilliseconds = min(pauseMilliseconds * 2, 1000)
            status = getaddrinfo(host, String(port), &hints, &list)
        }
        guard status == 0, let first = list else {
            throw ShardClientError("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            let socket = Glibc.socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if socket >= 0 {
                var limit = timeval(tv_sec: timeout, tv_usec: 0)
                setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                if Glibc.connect(socket, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return socket }
                close(socket)
            }
            entry = info.pointee.ai_next
        }
        throw ShardClientError("cannot connect to \(host):\(port)")
    }
}
