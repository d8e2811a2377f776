#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Logging
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd's thread pool (epoll), handing each complete request to an `HTTPResponder`.
///
/// `start()` binds and starts the threads; `shutdown(gracePeriod:)` drains and
/// stops them. A server starts once; dropping a running one stops it at once.
public final class HTTPServer: Sendable {
    /// The memory libmicrohttpd gives each connection, for the request line, the headers and reading: room for
    /// about 16 KiB of headers (twice the largest bearer token taken), as libmicrohttpd's own default.
    ///
    /// libmicrohttpd 0.9.75 zeroes the whole pool after every request of a keep-alive connection
    /// (`MHD_pool_reset`): at 64 KiB that `memset` was a seventh of the server's time on a PK select.
    static let connectionMemoryLimit = 32 * 1024

    private let configuration: HTTPServerConfiguration
    private let context: DaemonContext
    private let lifecycle = Mutex<Lifecycle>(.idle)
    private let boundPort = Atomic<UInt16>(0)
    /// The certificate and key served, once a TLS server has started.
    private let certificates = Mutex<TLSCertificateStore?>(nil)

    private enum Lifecycle {
        case idle
        case running(Daemon)
        case stopping
        case stopped
    }

    /// A running daemon's handle, which libmicrohttpd lets any thread quiesce and stop.
    private struct Daemon: @unchecked Sendable {
        let handle: OpaquePointer
        /// The listening socket its certificate store is registered by, for a TLS daemon.
        let tlsSocket: Int32?
    }

    /// A server that will listen as `configuration` says and answer through `responder`; `accessLog` gets one info line per request.
    public init(configuration: HTTPServerConfiguration, responder: some HTTPResponder, accessLog: Logger? = nil) {
        self.configuration = configuration
        self.context = DaemonContext(
            responder: responder,
            maximumBodySize: configuration.maximumBodySize,
            offWorkerAnswerLimit: configuration.offWorkerAnswerLimit,
            accessLog: accessLog,
            watchdog: ConnectionWatchdog(headerTimeout: configuration.headerTimeout, bodyTimeout: configuration.bodyTimeout,
                                         log: accessLog)
        )
    }

    deinit {
        shutdown(gracePeriod: .zero)
    }

    /// Binds the configured address and starts the thread pool; the error names host:port and the reason.
    public func start() throws(HTTPServerError) {
        let configuration = self.configuration
        let context = self.context
        let place = ListenAddress.display(host: configuration.host, port: configuration.port)
        let port = try lifecycle.withLock { (state: inout Lifecycle) throws(HTTPServerError) -> UInt16 in
            guard case .idle = state else {
                throw HTTPServerError(message: "cannot start the HTTP server on \(place): it was started before")
            }
            if let problem = configuration.problem {
                throw HTTPServerError(message: "cannot start the HTTP server on \(place): \(problem)")
            }
            var address = try ListenAddress.resolve(host: configuration.host, port: configuration.port).get()
            var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
                | MHD_USE_ITC.rawValue | MHD_USE_ERROR_LOG.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            if address.isIPv6 {
                flags |= address.isIPv6Any ? MHD_USE_DUAL_STACK.rawValue : MHD_USE_IPv6.rawValue
            }
            context.lastDiagnostic.withLock { $0 = nil }
            // The pair is checked here, so that a wrong one stops the start with a clear reason.
            var store: TLSCertificateStore?
            if let tls = configuration.tls {
                do throws(HTTPServerError) {
                    try TLSConfiguration.checkPriorities(tls.priorities)
                    store = try TLSCertificateStore(tls)
                } catch {
                    throw HTTPServerError(message: "cannot start the HTTPS server on \(place): \(error.message)")
                }
            }
            let start = { () -> OpaquePointer? in withUnsafePointer(to: &address.storage) { storage in
                storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    daogate_mhd_start_daemon(
                        flags,
                        configuration.port,
                        socketAddress,
                        UInt32(configuration.threads),
                        UInt32(configuration.connectionTimeout),
                        UInt32(configuration.connectionLimit),
                        UInt32(configuration.connectionsPerAddress),
                        Self.connectionMemoryLimit,
                        handleAccess,
                        handleCompletion,
                        handleConnection,
                        handleTarget,
                        handleDiagnostic,
                        configuration.tls?.priorities ?? "",
                        store == nil ? nil : presentCertificate,
                        Unmanaged.passUnretained(context).toOpaque()
                    )
                }
            } }
            var tlsSocket: Int32?
            let handle: OpaquePointer?
            if let store {
                let registered = TLSCertificateStore.register(store, starting: start)
                handle = registered?.daemon
                tlsSocket = registered?.socket
            } else {
                handle = start()
            }
            guard let handle else {
                let reason = context.lastDiagnostic.withLock { $0 } ?? "libmicrohttpd could not start a daemon"
                throw HTTPServerError(message: "cannot listen on \(place): \(reason)")
            }
            state = .running(Daemon(handle: handle, tlsSocket: tlsSocket))
            certificates.withLock { $0 = store }
            context.watchdog?.start()
            return daogate_mhd_bound_port(handle)
        }
        boundPort.store(port, ordering: .sequentiallyConsistent)
    }

    /// The port the server is bound to (the one picked for port 0); 0 before `start()`.
    public var port: UInt16 {
        boundPort.load(ordering: .sequentiallyConsistent)
    }

    /// The base URL the server answers on (`http://host:port`, an IPv6 literal in brackets); valid after `start()`.
    public var url: String {
        (configuration.tls == nil ? "http://" : "https://") + ListenAddress.display(host: configuration.host, port: port)
    }

    /// Reads the TLS certificate and key files again: handshakes from then on present the new pair, while open
    /// connections go on with the one they began with. On an error (the files unreadable, or not a pair) the
    /// current pair stays and the error says why. Does nothing on a plain HTTP server or one not running.
    public func reloadCertificate() throws(HTTPServerError) {
        guard let store = certificates.withLock({ $0 }) else { return }
        try store.reload()
    }

    /// Requests handed to the access handler whose connection has not finished with them yet.
    public var inFlightRequests: Int {
        context.inFlightRequests.load(ordering: .sequentiallyConsistent)
    }

    /// Graceful stop: stop accepting (MHD_quiesce_daemon), answer new requests on existing connections with the shuttingDown refusal, wait up to `gracePeriod` for in-flight requests to finish, then MHD_stop_daemon. Idempotent.
    ///
    /// Responses sent while draining carry `Connection: close`. The port stays
    /// bound until the daemon stops. A responder still running when the grace
    /// period ends cannot be interrupted: it is waited for (an answer worked
    /// out off a worker thread, `HTTPResponse.answeredOffWorkerThread`, until
    /// it is delivered; one on a worker thread by MHD_stop_daemon), then every
    /// connection is closed. A second call, or a call on a
    /// server that never started, returns at once.
    public func shutdown(gracePeriod: Duration = .seconds(10)) {
        let daemon = lifecycle.withLock { (state: inout Lifecycle) -> Daemon? in
            switch state {
            case .running(let daemon):
                state = .stopping
                return daemon
            case .idle:
                state = .stopped
                return nil
            case .stopping, .stopped:
                return nil
            }
        }
        guard let daemon else { return }
        context.isDraining.store(true, ordering: .sequentiallyConsistent)
        let listenSocket = MHD_quiesce_daemon(daemon.handle)
        // Streams end with their closing notice (and suspended ones are resumed, as MHD_stop_daemon requires).
        context.streams.closeAll()
        let deadline = ContinuousClock.now.advanced(by: gracePeriod)
        while inFlightRequests > 0 && ContinuousClock.now < deadline {
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
        // An answer still being worked out off a worker thread is waited for, as a responder still running on
        // one is by MHD_stop_daemon: its connection is suspended, and the daemon may not stop before it resumes.
        if context.offWorkerAnswers.count > 0 {
            context.offWorkerAnswers.waitForAll()
            // A delivered answer is queued and sent once its connection is back in its worker's event loop: the
            // daemon stops after that (up to 2 s), not while the answer waits to be queued.
            let sending = ContinuousClock.now.advanced(by: .seconds(2))
            while inFlightRequests > 0 && ContinuousClock.now < sending {
                var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
                nanosleep(&pause, nil)
            }
        }
        MHD_stop_daemon(daemon.handle)
        context.offWorkerAnswers.stop()
        if let socket = daemon.tlsSocket { TLSCertificateStore.unregister(socket: socket) }
        certificates.withLock { $0 = nil }
        context.watchdog?.stop()
        if listenSocket >= 0 {
            close(listenSocket)
        }
        lifecycle.withLock { $0 = .stopped }
    }
}
