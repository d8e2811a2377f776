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
    /// The most connections open at once from one client address (0: no limit); more are closed as they come.
    ///
    /// Behind a proxy every connection comes from the proxy's address.
    public var connectionsPerAddress: Int
    /// How long a request's headers may take to arrive, counted from the connection's opening or the end of its
    /// previous response, however the client trickles them (so also how long a keep-alive connection may idle);
    /// `.zero`: no limit. Past it the connection is closed.
    public var headerTimeout: Duration
    /// How long a request's body may take to arrive once its headers are in; `.zero`: no limit. Past it the
    /// connection is closed.
    public var bodyTimeout: Duration
    /// HTTPS only, with this certificate and key, when set; plain HTTP when nil.
    public var tls: TLSConfiguration?
    /// The most answers worked out off the worker threads at once (`HTTPResponse.answeredOffWorkerThread`),
    /// each on a thread of a pool kept for them; one more is refused (`TransportRefusal.tooManyLongCalls`), so
    /// no caller makes threads without bound.
    public var offWorkerAnswerLimit: Int

    public init(
        host: String = "127.0.0.1",
        port: UInt16 = 8080,
        threads: Int = HTTPServerConfiguration.defaultThreads,
        maximumBodySize: Int = 1 << 20,
        connectionTimeout: Int = 30,
        connectionLimit: Int = 1024,
        connectionsPerAddress: Int = 128,
        headerTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(60),
        tls: TLSConfiguration? = nil,
        offWorkerAnswerLimit: Int = HTTPServerConfiguration.defaultOffWorkerAnswerLimit
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maximumBodySize = maximumBodySize
        self.connectionTimeout = connectionTimeout
        self.connectionLimit = connectionLimit
        self.connectionsPerAddress = connectionsPerAddress
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.tls = tls
        self.offWorkerAnswerLimit = offWorkerAnswerLimit
    }

    /// The default thread count: twice the processors this process may use (`AvailableProcessors`). A worker
    /// waiting on a commit's `fsync`, or preempted by another process on the machine, holds its connections; a
    /// second one per processor serves others meanwhile. What 4 threads against 2, and 8 against 4, do on 2
    /// cores: docs/performance.md, "Worker threads".
    @usableFromInline
    static var defaultThreads: Int {
        2 * AvailableProcessors.count
    }

    /// The default of `offWorkerAnswerLimit`: a bucket move makes one such call at a time on each shard.
    public static let defaultOffWorkerAnswerLimit = 16

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
        if connectionsPerAddress < 0 || connectionsPerAddress > connectionLimit {
            return "connectionsPerAddress must be between 0 and connectionLimit (\(connectionLimit)), not \(connectionsPerAddress)"
        }
        if headerTimeout < .zero || bodyTimeout < .zero { return "headerTimeout and bodyTimeout must not be negative" }
        if offWorkerAnswerLimit < 1 { return "offWorkerAnswerLimit must be at least 1, not \(offWorkerAnswerLimit)" }
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
