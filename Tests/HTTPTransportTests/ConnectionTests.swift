#if canImport(Glibc)
import Glibc
#endif
import HTTPTransport
import Testing

@Suite("Connections: timeouts, hostile input, disconnects, concurrency")
struct ConnectionTests {
    @Test func idleConnectionIsClosedAfterTheTimeout() throws {
        try withServer(RecordingResponder(), configure: { $0.connectionTimeout = 1 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            let idleSince = ContinuousClock.now
            #expect(client.waitForClose())
            let idle = ContinuousClock.now - idleSince
            #expect(idle >= .milliseconds(500))
            #expect(idle < .seconds(5))

            let silent = try RawClient(port: server.port)
            #expect(silent.waitForClose())
        }
    }

    @Test func slowHeadersAreCutOffByTheTimeout() throws {
        let responder = RecordingResponder()
        try withServer(responder, configure: { $0.connectionTimeout = 1 }) { server in
            let client = try RawClient(port: server.port)
            let start = ContinuousClock.now
            try client.send("GET / HTTP/1.1\r\n")
            sleep(for: .milliseconds(400))
            try client.send("X-Slow: 1\r\n")
            #expect(client.waitForClose())
            #expect(ContinuousClock.now - start < .seconds(6))
            #expect(responder.requests.isEmpty)
        }
    }

    @Test func garbageAndOversizedInputDoNotStopTheServer() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            var inputs: [[UInt8]] = [
                Array((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }),
                Array("\r\n\r\n\r\n".utf8),
                Array("GET\r\n\r\n".utf8),
                Array("GET / HTTP/9.9\r\nHost: x\r\n\r\n".utf8),
                Array("G\u{0}T / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
                Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n".utf8),
                Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n".utf8),
                Array("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n".utf8),
                Array("GET / HTTP/1.1\r\nHost: x\r\nNo-Colon-Here\r\n\r\n".utf8),
            ]
            inputs.append(Array("GET /\(String(repeating: "a", count: 200_000)) HTTP/1.1\r\n\r\n".utf8))
            inputs.append(Array("GET / HTTP/1.1\r\nX-Big: \(String(repeating: "b", count: 200_000))\r\n\r\n".utf8))
            for input in inputs {
                let client = try RawClient(port: server.port, timeout: 5)
                try? client.send(input)
                client.shutdownWrite()
                _ = try? client.readUntilClosed()
            }
            let client = try RawClient(port: server.port)
            try client.send("GET /still-here HTTP/1.1\r\nHost: x\r\nX-Large: \(String(repeating: "c", count: 16_000))\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(responder.requests.last?.path == "/still-here")
            #expect(eventually { server.inFlightRequests == 0 })
        }
    }

    @Test func clientLeavingMidBodyIsNotCountedInFlight() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            do {
                let client = try RawClient(port: server.port)
                try client.send("POST /partial HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
                try client.send([UInt8](repeating: 0x70, count: 100))
                #expect(eventually { server.inFlightRequests == 1 })
            }
            #expect(eventually { server.inFlightRequests == 0 })
            #expect(responder.requests.isEmpty)
        }
    }

    /// libmicrohttpd 0.9.75 stops watching a connection once it has read end of file, so a
    /// request whose client half-closes while the server waits for its body ends only
    /// by the connection timeout.
    @Test func halfClosedRequestIsReleasedByTheTimeout() throws {
        let responder = RecordingResponder()
        try withServer(responder, configure: { $0.connectionTimeout = 1 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /half HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab")
            #expect(eventually { server.inFlightRequests == 1 })
            client.shutdownWrite()
            #expect(eventually(within: .seconds(6)) { server.inFlightRequests == 0 })
            #expect(responder.requests.isEmpty)
        }
    }

    @Test func clientLeavingWhileTheResponderWorksIsNotCountedInFlight() throws {
        let responder = RecordingResponder { _ in
            sleep(for: .milliseconds(300))
            return HTTPResponse(status: 200, body: [UInt8](repeating: 0x71, count: 100_000))
        }
        try withServer(responder) { server in
            do {
                let client = try RawClient(port: server.port)
                try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(eventually { server.inFlightRequests == 1 })
            }
            #expect(eventually { server.inFlightRequests == 0 })
            #expect(responder.requests.count == 1)
            let client = try RawClient(port: server.port)
            try client.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }

    @Test func concurrentClientsAreAllAnswered() throws {
        let responder = RecordingResponder { request in
            HTTPResponse(status: 200, body: Array(request.path.utf8))
        }
        let clients = 16
        let requestsPerClient = 100
        try withServer(responder, configure: { $0.threads = 2 }) { server in
            let port = server.port
            let threads = (0..<clients).map { clientIndex in
                BackgroundThread { () throws -> Int in
                    var answered = 0
                    var client = try RawClient(port: port)
                    for requestIndex in 0..<requestsPerClient {
                        let reconnect = clientIndex % 2 == 1 && requestIndex > 0
                        if reconnect {
                            client = try RawClient(port: port)
                        }
                        let path = "/c\(clientIndex)/r\(requestIndex)"
                        try client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
                        let response = try client.readResponse()
                        if response.status == 200 && response.text == path { answered += 1 }
                    }
                    return answered
                }
            }
            let answered = try threads.map { try $0.join() }
            #expect(answered.allSatisfy { $0 == requestsPerClient })
            #expect(responder.requests.count == clients * requestsPerClient)
            #expect(eventually { server.inFlightRequests == 0 })
        }
    }
}
