#if canImport(Glibc)
import Glibc
#endif

/// Where and how an `HTTPServer` listens, and the limits it enforces.
public struct HTTPServerConfiguration: Sendable {
    /// An IPv4 or IPv6 literal, or a name resolved with getaddrinfo; "0.0.0.0" or "::" for all interfaces ("::" takes IPv4 too).
    public var host: String
    /// The TCP port; 0 asks for any free port (read `HTTPServer.port` after `start()`).
    public var port: UInt16
    /// The size of libmicrohttpd's internal thread pool, each thread with its own epoll set.
    public var threads: Int
    /// The largest request body kept, in bytes; a larger one gets 413 (at once by `Content-Length`, or when a chunked body ends).
    public var maximumBodySize: Int
    /// Seconds of inactivity after which a connection is closed, so a slow client cannot hold it forever; 0 for never.
    public var connectionTimeout: Int
    /// The most connections open at once; must be at least `threads`.
    public var connectionLimit: Int

    public init(
        host: String = "127.0.0.1",
        port: UInt16 = 8080,
        threads: Int = HTTPServerConfiguration.onlineCores,
        maximumBodySize: Int = 1 << 20,
        connectionTimeout: Int = 30,
        connectionLimit: Int = 1024
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maximumBodySize = maximumBodySize
        self.connectionTimeout = connectionTimeout
        self.connectionLimit = connectionLimit
    }

    /// The number of processors online, the default thread count.
    @usableFromInline
    static var onlineCores: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// The first thing wrong with the configuration, if any.
    var problem: String? {
        if threads < 1 || threads > 4096 { return "threads must be between 1 and 4096, not \(threads)" }
        if maximumBodySize < 0 { return "maximumBodySize must not be negative" }
        if connectionTimeout < 0 || connectionTimeout > Int(UInt32.max) {
            return "connectionTimeout must be between 0 and \(UInt32.max) seconds"
        }
        if connectionLimit < threads || connectionLimit > Int(UInt32.max) {
            return "connectionLimit must be at least threads (\(threads)), not \(connectionLimit)"
        }
        return nil
    }
}

/// Why an `HTTPServer` could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// What failed, naming the host and port.
    public var message: String

    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}
