import HTTPTransport
import Logging
import Synchronization
import Testing

/// A value handed to another thread, which alone uses it from then on.
final class Handed<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// `HTTPResponse.answeredOffWorkerThread`: a slow answer worked out on a thread of its own leaves the worker
/// thread, and every other connection it serves, free; the answer is sent when it is done, and a stop waits for it.
@Suite("Answers worked out off the worker thread")
struct OffWorkerThreadTests {
    /// A gate the slow answer waits at until the test opens it.
    final class Gate: Sendable {
        private let open = Atomic<Bool>(false)
        func release() { open.store(true, ordering: .sequentiallyConsistent) }
        func wait() { while !open.load(ordering: .sequentiallyConsistent) { sleep(for: .milliseconds(2)) } }
    }

    /// `/slow` waits at the gate (off the worker thread, or on it); anything else is answered at once.
    static func responder(_ gate: Gate, offWorker: Bool, started: TimeMark) -> RecordingResponder {
        RecordingResponder { request in
            guard request.path == "/slow" else { return HTTPResponse(status: 200, body: Array("fast \(request.path)".utf8)) }
            let body = Array("slow, body of \(request.body.count) bytes".utf8)
            let work: @Sendable () -> HTTPResponse = {
                started.set()
                gate.wait()
                return HTTPResponse(status: 201, headers: [("X-Slow", "yes")], body: body,
                                    logMetadata: [("answered", "off the worker thread")])
            }
            return offWorker ? .answeredOffWorkerThread(work) : work()
        }
    }

    /// One worker thread serves every connection: while `/slow` is worked out off it, other connections, and
    /// a second request on a keep-alive connection opened before, are answered at once. Worked out on the
    /// worker thread instead (the same responder, answering in place), they wait for it: the test's own control.
    @Test(arguments: [true, false])
    func otherConnectionsAreAnsweredWhileASlowAnswerIsWorkedOut(offWorker: Bool) throws {
        let gate = Gate()
        let started = TimeMark()
        let sink = LogSink()
        let responder = Self.responder(gate, offWorker: offWorker, started: started)
        try withServer(responder, configure: { $0.threads = 1 }, accessLog: sink.logger) { server in
            let port = server.port
            let earlier = try RawClient(port: port)
            try earlier.send("GET /before HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try earlier.readResponse().status == 200)

            let slow = BackgroundThread { () throws -> RawResponse in
                let client = try RawClient(port: port)
                try client.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
                return try client.readResponse()
            }
            #expect(eventually { started.instant != nil })

            // The keep-alive connection goes to the other thread; this one does not touch it meanwhile.
            let kept = Handed(earlier)
            let others = BackgroundThread { () throws -> [Int] in
                let earlier = kept.value
                let fresh = try RawClient(port: port)
                try fresh.send("GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
                let first = try fresh.readResponse().status
                try earlier.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
                return [first, try earlier.readResponse().status]
            }
            // Off the worker thread the others are answered while the gate is shut; on it, they cannot be.
            let answeredWhileShut = eventually(within: .seconds(1)) { responder.requests.contains { $0.path == "/again" } }
            #expect(answeredWhileShut == offWorker)
            gate.release()
            #expect(try others.join() == [200, 200])
            let answer = try slow.join()
            #expect(answer.status == 201)
            #expect(answer.header("X-Slow") == "yes")
            #expect(answer.text == "slow, body of 5 bytes")
            #expect(server.inFlightRequests == 0 || eventually { server.inFlightRequests == 0 })
        }
        // Its access-log line says what was answered, with the response's own fields.
        let slowLine = sink.infoEvents.first { $0.metadata?["path"] == "/slow" }
        #expect(slowLine?.metadata?["status"] == "201")
        #expect(slowLine?.metadata?["answered"] == "off the worker thread")
    }

    /// A responder wrapping another (CORS) changes the answer that is sent, not the placeholder: the slow
    /// answer carries the CORS headers, from an allowed origin and from another.
    @Test func aWrappingResponderChangesTheAnswerWorkedOut() throws {
        let gate = Gate()
        gate.release()
        let cors = CORSResponder(wrapping: Self.responder(gate, offWorker: true, started: TimeMark()),
                                 policy: CORSPolicy(origins: ["https://app.example"], methods: ["POST"], headers: []))
        try withServer(cors, configure: { $0.threads = 1 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /slow HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nContent-Length: 0\r\n\r\n")
            let allowed = try client.readResponse()
            #expect(allowed.status == 201 && allowed.header("X-Slow") == "yes")
            #expect(allowed.header("Access-Control-Allow-Origin") == "https://app.example")
            #expect(allowed.header("Vary") == "Origin")
            try client.send("POST /slow HTTP/1.1\r\nHost: x\r\nOrigin: https://other.example\r\nContent-Length: 0\r\n\r\n")
            let other = try client.readResponse()
            #expect(other.status == 201 && other.header("Access-Control-Allow-Origin") == nil)
            #expect(other.header("Vary") == "Origin")
        }
    }

    /// No caller makes threads without bound: with `offWorkerAnswerLimit` answers being worked out, one more is
    /// refused at once (503, its work never run) and its connection stays open; once one ends, the next is taken.
    @Test func oneAnswerPastTheLimitIsRefusedAndItsConnectionKept() throws {
        let gate = Gate()
        let worked = Atomic<Int>(0)
        let responder = RecordingResponder { request in
            guard request.path == "/slow" else { return HTTPResponse(status: 200, body: Array("fast".utf8)) }
            return .answeredOffWorkerThread {
                worked.add(1, ordering: .sequentiallyConsistent)
                gate.wait()
                return HTTPResponse(status: 201, body: Array("slow".utf8))
            }
        }
        try withServer(responder, configure: { $0.threads = 1; $0.offWorkerAnswerLimit = 2 }) { server in
            let port = server.port
            let slow = (0..<2).map { _ in
                BackgroundThread { () throws -> Int in
                    let client = try RawClient(port: port)
                    try client.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                    return try client.readResponse().status
                }
            }
            #expect(eventually { worked.load(ordering: .sequentiallyConsistent) == 2 })
            let third = try RawClient(port: port)
            try third.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody")
            let refused = try third.readResponse()
            #expect(refused.status == 503)
            #expect(refused.text.contains("2 long calls are being answered already"))
            #expect(refused.header("Connection")?.lowercased() != "close")
            #expect(worked.load(ordering: .sequentiallyConsistent) == 2)
            // The same connection goes on.
            try third.send("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try third.readResponse().status == 200)
            gate.release()
            #expect(try slow.map { try $0.join() } == [201, 201])
            try third.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            #expect(try third.readResponse().status == 201)
            #expect(worked.load(ordering: .sequentiallyConsistent) == 3)
        }
    }

    /// A stop while an answer is worked out off the worker thread waits for it (its connection is suspended,
    /// and libmicrohttpd's daemon may not stop before it resumes): the client gets the answer, and the stop
    /// returns after it, with nothing in flight.
    @Test func aStopWaitsForTheAnswerAndTheClientGetsIt() throws {
        let gate = Gate()
        let started = TimeMark()
        let responder = Self.responder(gate, offWorker: true, started: started)
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 1),
                                responder: responder)
        try server.start()
        let port = server.port
        let slow = BackgroundThread { () throws -> RawResponse in
            let client = try RawClient(port: port)
            try client.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            return try client.readResponse()
        }
        #expect(eventually { started.instant != nil })
        let released = TimeMark()
        let stopping = BackgroundThread { () -> ContinuousClock.Instant in
            // A grace period shorter than the answer takes: the stop still waits for it.
            server.shutdown(gracePeriod: .milliseconds(100))
            return ContinuousClock.now
        }
        sleep(for: .milliseconds(400))
        released.set()
        gate.release()
        let answer = try slow.join()
        #expect(answer.status == 201)
        #expect(answer.text == "slow, body of 0 bytes")
        #expect(answer.header("Connection")?.lowercased() == "close")
        let stopped = try stopping.join()
        #expect(stopped > (try #require(released.instant)))
        #expect(server.inFlightRequests == 0)
    }
}
