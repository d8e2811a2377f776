#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// HAProxy's runtime API, a unix socket taking one command per connection: how a bucket move and a failover
/// change the proxy's bucket map (`set map`) without a reload.
public struct HAProxyRuntime: Sendable {
    /// The socket's path (`stats socket` in the generated configuration).
    public let socket: String
    /// How long a command's answer (and the sending of it) may take before it is a failure: an HAProxy that
    /// accepts the connection and never answers does not hold a bucket move or a failover for ever.
    public let timeout: Duration

    public init(socket: String, timeout: Duration = .seconds(10)) {
        self.socket = socket
        self.timeout = timeout
    }

    /// A command HAProxy did not take, or a socket that does not answer.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// One command, whose answer must be empty (success).
    public func run(_ command: String) throws(Failure) {
        let text = try answer(command)
        guard text.isEmpty else { throw Failure("HAProxy refused '\(command)': \(text)") }
    }

    /// The map HAProxy knows as `path`, in any spelling: `show map` lists each map by the path its
    /// configuration gave; both sides are resolved (relative paths, `..`, symlinks). Returns the name to give
    /// `set map` (HAProxy's own spelling) and the file to write (the resolved path), after checking it is writable.
    public func map(_ path: String) throws(Failure) -> (name: String, file: String) {
        let listing: String
        do {
            listing = try answer("show map")
        } catch {
            throw Failure("HAProxy's runtime API does not answer: \(error)")
        }
        let wanted = Self.resolved(path)
        // Lines are `ID (FILE) pattern loaded from file 'FILE' …`; comment lines start with '#'.
        var known: [String] = []
        for line in listing.split(separator: "\n") where !line.hasPrefix("#") {
            guard let open = line.firstIndex(of: "("), let close = line[open...].firstIndex(of: ")") else { continue }
            let name = String(line[line.index(after: open)..<close])
            known.append(name)
            if Self.resolved(name) == wanted {
                guard access((wanted as NSString).deletingLastPathComponent, W_OK) == 0 else {
                    throw Failure("HAProxy's map file \(wanted) is in a folder this user cannot write")
                }
                return (name, wanted)
            }
        }
        throw Failure("HAProxy knows no map file \(path) (resolved: \(wanted)); it knows \(known.isEmpty ? "none" : known.joined(separator: ", "))")
    }

    /// A path made absolute, `..` and symlinks resolved (as far as they exist).
    public static func resolved(_ path: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        if let real = realpath(path, &buffer) { return String(cString: real) }
        return URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// One command, and its answer (trimmed).
    public func answer(_ command: String) throws(Failure) -> String {
        let path = socket
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure("cannot make a unix socket") }
        defer { close(socket) }
        let (seconds, attoseconds) = timeout.components
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw Failure("the socket path \(path) is too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw Failure("cannot connect to HAProxy's runtime API at \(path): \(String(cString: strerror(errno)))") }
        let line = Array((command + "\n").utf8)
        guard send(socket, line, line.count, Int32(MSG_NOSIGNAL)) == line.count else { throw Failure("cannot write to \(path)") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                throw Failure("HAProxy's runtime API at \(path) did not answer '\(command.prefix(80))' within \(timeout)")
            }
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
