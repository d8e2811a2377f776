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

/// The answers being worked out off the worker threads, on threads kept for them: at most `limit` at once,
/// each on a thread of the pool's (made when none is idle, ended after `idleTime` without work or at `stop()`).
/// A thread made per answer cost its first touch of its stack and of its memory arena again each time: a bucket
/// move's 1 MB export took 520 page faults more, 1.3 ms, than on a kept thread. A stop waits for the answers, as
/// libmicrohttpd requires every suspended connection to be resumed before its daemon stops.
final class OffWorkerAnswers: @unchecked Sendable {
    /// The most worked out at once.
    let limit: Int
    /// How long a thread of the pool waits for work before it ends.
    let idleTime: Duration
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `lock`:
    private var jobs: [@Sendable () -> Void] = []
    /// Answers counted against `limit`: reserved, not yet worked out.
    private var working = 0
    /// Answers reserved and not yet delivered (their connections still suspended).
    private var undelivered = 0
    private var idle = 0
    private var threads = 0
    private var stopping = false

    init(limit: Int, idleTime: Duration = .seconds(30)) {
        self.limit = limit
        self.idleTime = idleTime
        pthread_mutex_init(lock, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(wake, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(lock)
        wake.deallocate()
        lock.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// Answers reserved and not yet delivered.
    var count: Int { locked { undelivered } }

    /// Threads of the pool, busy or idle.
    var threadCount: Int { locked { threads } }

    /// Counts one answer more, unless `limit` are being worked out: then false, and nothing counted. Each one
    /// counted is then given to `run`.
    func reserve() -> Bool {
        locked {
            guard working < limit else { return false }
            working += 1
            undelivered += 1
            return true
        }
    }

    /// Works out an answer `reserve` counted on a thread of the pool (on the calling thread if no thread can be
    /// made), then delivers it. It stops counting against `limit` before `deliver`, which resumes its connection:
    /// the client that gets it may send its next long call at once, and must find its place free. `waitForAll`
    /// waits until `deliver` has returned.
    func run<Answer: Sendable>(_ work: @escaping @Sendable () -> Answer,
                               then deliver: @escaping @Sendable (Answer) -> Void = { _ in }) {
        let job: @Sendable () -> Void = {
            let answer = work()
            self.locked { self.working -= 1 }
            deliver(answer)
        }
        let needsThread = locked { () -> Bool in
            jobs.append(job)
            // Each idle thread takes one queued job: one woken and not yet running still counts as idle, and its
            // job as queued, so a second job in the meantime gets a thread of its own, not a place behind the first.
            if jobs.count <= idle {
                pthread_cond_signal(wake)
                return false
            }
            threads += 1
            return true
        }
        if needsThread && !startDetachedThread({ self.serve() }) {
            locked { threads -= 1 }
            serve(once: true)
        }
    }

    /// Takes jobs until none comes for `idleTime` (or, `once`, takes at most one, not waiting).
    private func serve(once: Bool = false) {
        pthread_mutex_lock(lock)
        while true {
            if jobs.isEmpty {
                if once || stopping || !waitForWork() {
                    if !once { threads -= 1 }
                    pthread_mutex_unlock(lock)
                    return
                }
                continue
            }
            let job = jobs.removeFirst()
            pthread_mutex_unlock(lock)
            job()
            pthread_mutex_lock(lock)
            undelivered -= 1
            if once { pthread_mutex_unlock(lock); return }
        }
    }

    /// Waits, the lock held, until woken or `idleTime` passes: false when it passed with no job queued.
    private func waitForWork() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = idleTime.components
        var nanoseconds = now.tv_nsec + Int(attoseconds / 1_000_000_000)
        var deadline = timespec(tv_sec: now.tv_sec + Int(seconds) + nanoseconds / 1_000_000_000, tv_nsec: 0)
        nanoseconds %= 1_000_000_000
        deadline.tv_nsec = nanoseconds
        idle += 1
        let status = pthread_cond_timedwait(wake, lock, &deadline)
        idle -= 1
        return status != ETIMEDOUT || !jobs.isEmpty
    }

    /// Returns once every answer is delivered (each has resumed its connection).
    func waitForAll() {
        while count > 0 {
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// Ends the idle threads, and each busy one once its job is done.
    func stop() {
        locked {
            stopping = true
            pthread_cond_broadcast(wake)
        }
    }
}

/// Runs `body` on a thread of its own, detached; false if no thread could be made (`body` did not run).
func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
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
        Unmanaged<Box>.fromOpaque(box).release()
        return false
    }
    pthread_detach(handle)
    return true
}
