import HTTPTransport
import Testing

@Suite("Start-up errors and graceful shutdown")
struct ShutdownTests {
    @Test func shutdownWaitsForASlowRequestWhileThePortStaysTaken() throws {
        let slowFinished = TimeMark()
        let responder = RecordingResponder { request in
            if request.path == "/slow" {
                sleep(for: .milliseconds(500))
                slowFinished.set()
            }
            return HTTPResponse(status: 200, body: Array("done \(request.path)".utf8))
        }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2),
            responder: responder
        )
        try server.start()
        let port = server.port
        #expect(port != 0)

        let idle = try RawClient(port: port)
        try idle.send("GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)

        let slow = BackgroundThread { () throws -> RawResponse in
            let client = try RawClient(port: port)
            try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            return try client.readResponse()
        }
        #expect(eventually { responder.requests.contains { $0.path == "/slow" } })

        let stopping = BackgroundThread { () -> ContinuousClock.Instant in
            server.shutdown(gracePeriod: .seconds(5))
            return ContinuousClock.now
        }
        sleep(for: .milliseconds(100))

        let second = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: port, threads: 1),
            responder: RecordingResponder()
        )
        let error = #expect(throws: HTTPServerError.self) { try second.start() }
        #expect(error?.message.contains("127.0.0.1:\(port)") == true)
        #expect(error?.message.contains("in use") == true)

        try idle.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try idle.readResponse()
        #expect(refused.status == 503)
        #expect(refused.text == #"{"error":"server is shutting down"}"#)
        #expect(refused.header("Connection")?.lowercased() == "close")

        let answer = try slow.join()
        #expect(answer.status == 200)
        #expect(answer.text == "done /slow")
        #expect(answer.header("Connection")?.lowercased() == "close")
        let stopped = try stopping.join()
        let finished = try #require(slowFinished.instant)
        #expect(stopped > finished)
        #expect(server.inFlightRequests == 0)
        #expect(!responder.requests.contains { $0.path == "/late" })
        #expect(throws: ClientError.self) { try RawClient(port: port) }

        let repeated = ContinuousClock.now
        server.shutdown()
        #expect(ContinuousClock.now - repeated < .milliseconds(100))
    }

    @Test func gracePeriodBoundsTheWait() throws {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2),
            responder: RecordingResponder { _ in
                sleep(for: .seconds(2))
                return HTTPResponse(status: 200)
            }
        )
        try server.start()
        let port = server.port
        let client = try RawClient(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(eventually { server.inFlightRequests == 1 })
        let start = ContinuousClock.now
        server.shutdown(gracePeriod: .milliseconds(200))
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(150))
        #expect(server.inFlightRequests == 0)
    }

    @Test func secondStartOfTheSameServerFails() throws {
        try withServer(RecordingResponder()) { server in
            let error = #expect(throws: HTTPServerError.self) { try server.start() }
            #expect(error?.message.contains("started before") == true)
        }
    }

    @Test(arguments: [
        (HTTPServerConfiguration(port: 0, threads: 0), "threads"),
        (HTTPServerConfiguration(port: 0, threads: 4, connectionLimit: 2), "connectionLimit"),
        (HTTPServerConfiguration(port: 0, maximumBodySize: -1), "maximumBodySize"),
        (HTTPServerConfiguration(port: 0, connectionTimeout: -1), "connectionTimeout"),
    ])
    func invalidConfigurationIsNamed(configuration: HTTPServerConfiguration, field: String) {
        let server = HTTPServer(configuration: configuration, responder: RecordingResponder())
        let error = #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(error?.message.contains(field) == true)
        #expect(error?.message.contains("127.0.0.1:0") == true)
    }

    @Test func unbindableAddressIsReported() {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "192.0.2.1", port: 0),
            responder: RecordingResponder()
        )
        let error = #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(error?.message.hasPrefix("cannot listen on 192.0.2.1:0: ") == true)
    }

    @Test func shutdownBeforeStartIsHarmless() {
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: RecordingResponder())
        server.shutdown()
        server.shutdown()
        #expect(server.inFlightRequests == 0)
        #expect(server.port == 0)
    }
}
