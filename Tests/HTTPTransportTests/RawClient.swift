#if canImport(Glibc)
import Glibc
#endif

/// Why a test client's socket call failed.
struct ClientError: Error, CustomStringConvertible {
    var description: String
}

/// A blocking TCP client on POSIX sockets, so a test controls every byte it sends.
final class RawClient {
    private let socket: Int32
    private var pending: [UInt8] = []

    /// Connects to `host` (a numeric IPv4 or IPv6 address) on `port`, from the local address `source` when given
    /// (another loopback address, say); reads and writes give up after `timeout` seconds.
    init(host: String = "127.0.0.1", port: UInt16, source: String? = nil, timeout: Int = 10) throws {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list?.pointee else {
            throw ClientError(description: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let socket = Glibc.socket(info.ai_family, info.ai_socktype, 0)
        guard socket >= 0 else { throw ClientError(description: "socket: \(String(cString: strerror(errno)))") }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(socket)
                throw ClientError(description: "bind to \(source): \(String(cString: strerror(errno)))")
            }
        }
        guard connect(socket, info.ai_addr, info.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw ClientError(description: "connect to \(host):\(port): \(reason)")
        }
        self.socket = socket
    }

    deinit {
        close(socket)
    }

    /// Sends every byte, or throws.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ClientError(description: "send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Reads one response; `head` says it answers a HEAD request, so no body follows whatever its Content-Length says.
    func readResponse(head: Bool = false) throws -> RawResponse {
        while true {
            let response = try readOneResponse(head: head)
            if response.status >= 200 { return response }
        }
    }

    /// Everything the server sends until it closes the connection.
    func readUntilClosed() throws -> [UInt8] {
        while try fill() {}
        defer { pending = [] }
        return pending
    }

    /// Whether the server closes the connection, without sending anything, before the read timeout.
    func waitForClose() -> Bool {
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, 0) == 0
    }

    /// Closes the sending side, so the server reads end of file.
    func shutdownWrite() {
        shutdown(socket, Int32(SHUT_WR))
    }

    /// Reads what the socket has into `pending`; false at end of file.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let received = recv(socket, &chunk, chunk.count, 0)
        if received < 0 {
            throw ClientError(description: "recv: \(String(cString: strerror(errno)))")
        }
        pending.append(contentsOf: chunk[..<received])
        return received > 0
    }

    private func readOneResponse(head: Bool) throws -> RawResponse {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if let end = pending.firstRange(of: separator)?.upperBound {
                headEnd = end
                break
            }
            guard try fill() else { throw ClientError(description: "connection closed before a response head") }
        }
        guard let headEnd else { throw ClientError(description: "no response head") }
        let lines = String(decoding: pending[..<(headEnd - 4)], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        pending.removeFirst(headEnd)
        let statusLine = lines[0].split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw ClientError(description: "bad status line \(lines[0])")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        if head || status < 200 || status == 204 || status == 304 { return response }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            while pending.count < length {
                guard try fill() else { throw ClientError(description: "connection closed inside a body") }
            }
            response.body = Array(pending[..<length])
            pending.removeFirst(length)
        } else {
            response.body = try readUntilClosed()
        }
        return response
    }
}

/// A response as the test client parsed it.
struct RawResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// The first header field named `name`, compared without case.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
