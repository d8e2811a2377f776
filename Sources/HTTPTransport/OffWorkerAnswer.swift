#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Synchronization

/// A connection's handle, which libmicrohttpd lets any thread resume once it is suspended (a stream with
/// nothing to send, an answer worked out off the worker thread).
struct SuspendedConnection: @unchecked Sendable {
    let handle: OpaquePointer
}

/// One answer worked out off libmicrohttpd's worker thread (`HTTPResponse.offWorkerThread`), for a suspended
/// connection: the thread that works it out delivers it and resumes the connection; the access handler, called
/// again once the connection is back in its worker's event loop, takes it and queues it.
final class OffWorkerAnswer: Sendable {
    private let connection: SuspendedConnection
    private let response = Mutex<HTTPResponse?>(nil)

    init(connection: OpaquePointer) {
        self.connection = SuspendedConnection(handle: connection)
    }

    /// Keeps the answer, then resumes the connection (after: its handler's next call must find it).
    func deliver(_ answer: HTTPResponse) {
        response.withLock { $0 = answer }
        MHD_resume_connection(connection.handle)
    }

    /// The answer, once delivered; nil before.
    func take() -> HTTPResponse? {
        response.withLock { answer in
            defer { answer = nil }
            return answer
        }
    }
}

/// How many answers are being worked out off the worker threads: a stop waits for them, as libmicrohttpd
/// requires every suspended connection to be resumed before its daemon stops.
final class OffWorkerAnswers: Sendable {
    private let running = Atomic<Int>(0)

    /// The most running at once.
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Counts one more, unless `limit` are running: then false, and nothing counted.
    func start() -> Bool {
        var current = running.load(ordering: .sequentiallyConsistent)
        while current < limit {
            let (exchanged, original) = running.compareExchange(
                expected: current, desired: current + 1, ordering: .sequentiallyConsistent)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func ended() { running.subtract(1, ordering: .sequentiallyConsistent) }

    var count: Int { running.load(ordering: .sequentiallyConsistent) }

    /// Returns once none is running (each has resumed its connection).
    func waitForAll() {
        while count > 0 {
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }
}

/// Runs `body` on a thread of its own, detached; on the calling thread if none can be started.
func startDetachedThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var handle = pthread_t()
    let status = pthread_create(&handle, nil, { argument in
        Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
        return nil
    }, box)
    guard status == 0 else {
        Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
        return
    }
    pthread_detach(handle)
}
