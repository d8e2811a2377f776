#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// The deadline of one connection's current request, which the watchdog enforces.
///
/// Held retained in libmicrohttpd's `socket_context` from the connection's
/// start to its close, and by each `RequestState` of the connection.
final class ConnectionDeadline: Sendable {
    /// The connection's socket, shut down when the deadline passes.
    let socket: Int32
    /// `CLOCK_MONOTONIC_COARSE` nanoseconds by which the awaited part must be in; 0 while nothing is awaited.
    let deadline = Atomic<UInt64>(0)
    /// What is awaited: the request's headers or its body (for the log line).
    let awaitingBody = Atomic<Bool>(false)

    init(socket: Int32) {
        self.socket = socket
    }
}

/// Cuts off a connection whose request's headers, or body, do not arrive in
/// time, however the client trickles them.
///
/// libmicrohttpd's own timeout is an idle timeout: every byte resets it, so a
/// client sending a header line every few seconds holds its connection for
/// ever. The deadlines here do not move with the bytes: a request's headers
/// must be complete within `headerTimeout` of the connection's opening or of
/// the end of its previous response (which also bounds a keep-alive
/// connection's idling), and its body within `bodyTimeout` of the headers.
/// While the responder works and the answer is sent, no deadline runs (the
/// idle timeout still does).
///
/// A thread wakes a few times a second and `shutdown(2)`s each socket past
/// its deadline; libmicrohttpd then reads end of file and closes the
/// connection itself, in its own thread. A socket is shut down only while its
/// connection is registered, and the close notification unregisters it under
/// the same lock before libmicrohttpd closes the descriptor, so a descriptor
/// number reused by a newer connection is never touched.
final class ConnectionWatchdog: Sendable {
    let headerTimeout: Duration
    let bodyTimeout: Duration
    /// The timeouts in nanoseconds (0: none), converted once: every request starts two deadlines.
    private let headerNanoseconds: UInt64
    private let bodyNanoseconds: UInt64
    private let log: Logger?
    private let connections = Mutex<[ObjectIdentifier: ConnectionDeadline]>([:])
    private let running = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)
    /// How long the thread sleeps between sweeps: a tenth of the shortest timeout, from 10 to 250 ms.
    private let tick: Duration

    /// A watchdog for these timeouts (`.zero`: that part has no deadline), or nil when neither has one.
    init?(headerTimeout: Duration, bodyTimeout: Duration, log: Logger?) {
        let timeouts = [headerTimeout, bodyTimeout].filter { $0 > .zero }
        guard let shortest = timeouts.min() else { return nil }
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.headerNanoseconds = Self.nanoseconds(headerTimeout)
        self.bodyNanoseconds = Self.nanoseconds(bodyTimeout)
        self.log = log
        self.tick = min(max(shortest / 10, .milliseconds(10)), .milliseconds(250))
    }

    /// Registers a new connection and starts the deadline of its first request's headers.
    func opened(socket: Int32) -> ConnectionDeadline {
        let connection = ConnectionDeadline(socket: socket)
        awaitHeaders(connection)
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
        return connection
    }

    /// Unregisters a connection libmicrohttpd is about to close: its socket is never touched again.
    func closed(_ connection: ConnectionDeadline) {
        _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// The next request's headers are awaited (a new connection, or the previous response sent).
    func awaitHeaders(_ connection: ConnectionDeadline) {
        connection.awaitingBody.store(false, ordering: .relaxed)
        connection.deadline.store(Self.deadline(after: headerNanoseconds), ordering: .sequentiallyConsistent)
    }

    /// The headers are in; the body is awaited.
    func awaitBody(_ connection: ConnectionDeadline) {
        connection.awaitingBody.store(true, ordering: .relaxed)
        connection.deadline.store(Self.deadline(after: bodyNanoseconds), ordering: .sequentiallyConsistent)
    }

    /// The request is complete (or refused): nothing is awaited from the client until its answer is sent.
    func answering(_ connection: ConnectionDeadline) {
        connection.deadline.store(0, ordering: .sequentiallyConsistent)
    }

    /// Starts the sweeping thread.
    func start() {
        guard !running.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            let watchdog = Unmanaged<ConnectionWatchdog>.fromOpaque(argument!).takeRetainedValue()
            watchdog.run()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        if status == 0 {
            thread.withLock { $0 = handle }
        } else {
            running.store(false, ordering: .sequentiallyConsistent)
            log?.error("the connection watchdog could not start: \(String(cString: strerror(status)))")
        }
    }

    /// Stops the sweeping thread and waits for it.
    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        if let handle = thread.withLock({ (handle: inout pthread_t?) in defer { handle = nil }; return handle }) {
            pthread_join(handle, nil)
        }
    }

    private func run() {
        while running.load(ordering: .sequentiallyConsistent) {
            sweep()
            var pause = timespec(tick)
            nanosleep(&pause, nil)
        }
    }

    /// Shuts down every registered socket past its deadline.
    private func sweep() {
        let now = coarseMonotonicNanoseconds()
        let cut = connections.withLock { connections -> [(ConnectionDeadline, Bool)] in
            var cut: [(ConnectionDeadline, Bool)] = []
            for connection in connections.values {
                let deadline = connection.deadline.load(ordering: .sequentiallyConsistent)
                guard deadline != 0, deadline <= now else { continue }
                connection.deadline.store(0, ordering: .sequentiallyConsistent)
                shutdown(connection.socket, Int32(SHUT_RDWR))
                cut.append((connection, connection.awaitingBody.load(ordering: .relaxed)))
            }
            return cut
        }
        for (_, body) in cut {
            log?.notice(body ? "connection cut: the request body did not arrive within \(bodyTimeout)"
                             : "connection cut: the request headers did not arrive within \(headerTimeout)")
        }
    }

    /// The `CLOCK_MONOTONIC_COARSE` instant `nanoseconds` from now; 0 (no deadline) for a zero timeout.
    ///
    /// The coarse clock (the kernel's last tick, a few milliseconds behind) is read without the time
    /// counter, and every request sets two deadlines; the sweep, which reads the same clock, runs every 10 ms
    /// at the most often, so a deadline is kept to within a sweep and a tick.
    private static func deadline(after nanoseconds: UInt64) -> UInt64 {
        guard nanoseconds > 0 else { return 0 }
        return coarseMonotonicNanoseconds() + nanoseconds
    }

    /// A timeout in nanoseconds, 0 for none.
    private static func nanoseconds(_ timeout: Duration) -> UInt64 {
        guard timeout > .zero else { return 0 }
        let (seconds, attoseconds) = timeout.components
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// `CLOCK_MONOTONIC_COARSE` now, in nanoseconds: the watchdog's clock.
private func coarseMonotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
