#if canImport(Glibc)
import Glibc
#endif
import HTTPTransport
import Logging
import Synchronization

/// A responder that answers through a closure and keeps every request it saw.
final class RecordingResponder: HTTPResponder {
    let answer: @Sendable (HTTPRequest) -> HTTPResponse
    private let seen = Mutex<[HTTPRequest]>([])

    init(_ answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse = { _ in HTTPResponse(status: 200, body: Array("ok".utf8)) }) {
        self.answer = answer
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        seen.withLock { $0.append(request) }
        return answer(request)
    }

    var requests: [HTTPRequest] { seen.withLock { $0 } }
}

/// Starts a server on 127.0.0.1 and a free port, runs `body`, then shuts the server down.
func withServer<R>(
    _ responder: some HTTPResponder,
    configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    accessLog: Logger? = nil,
    _ body: (HTTPServer) throws -> R
) throws -> R {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, responder: responder, accessLog: accessLog)
    try server.start()
    defer { server.shutdown(gracePeriod: .seconds(2)) }
    return try body(server)
}

/// Polls `condition` until it holds or `timeout` passes; whether it held.
func eventually(within timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        sleep(for: .milliseconds(5))
    }
    return true
}

/// Blocks the calling thread for `duration`.
func sleep(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var pause = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    nanosleep(&pause, nil)
}

/// A moment one thread records and another reads.
final class TimeMark: Sendable {
    private let value = Mutex<ContinuousClock.Instant?>(nil)

    func set() {
        value.withLock { $0 = ContinuousClock.now }
    }

    var instant: ContinuousClock.Instant? { value.withLock { $0 } }
}

/// Runs `work` on a new thread; `join()` waits for it and gives its result.
final class BackgroundThread<T: Sendable>: Sendable {
    private let outcome = Outcome<T>()
    private let thread: pthread_t

    init(_ work: @escaping @Sendable () throws -> T) {
        let outcome = self.outcome
        let box = Unmanaged.passRetained(ThreadWork {
            let result = Result { try work() }
            outcome.value.withLock { $0 = result }
        })
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { pointer in
            Unmanaged<ThreadWork>.fromOpaque(pointer!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        precondition(status == 0, "pthread_create failed")
        self.thread = thread
    }

    func join() throws -> T {
        pthread_join(thread, nil)
        return try outcome.value.withLock { $0! }.get()
    }
}

private final class Outcome<T: Sendable>: Sendable {
    let value = Mutex<Result<T, any Error>?>(nil)
}

private final class ThreadWork {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// A log handler that keeps every event, for tests of the access log.
struct RecordingLogHandler: LogHandler {
    let sink: LogSink
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    func log(event: LogEvent) {
        sink.events.withLock { $0.append(event) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

/// Where `RecordingLogHandler`s put their events.
final class LogSink: Sendable {
    let events = Mutex<[LogEvent]>([])

    var logger: Logger {
        Logger(label: "access") { _ in RecordingLogHandler(sink: self) }
    }

    var infoEvents: [LogEvent] {
        events.withLock { $0.filter { $0.level == .info } }
    }
}
