import HTTPTransport
import Testing

@Suite("The body size limit")
struct BodyLimitTests {
    private static func echo() -> RecordingResponder {
        RecordingResponder { request in HTTPResponse(status: 200, body: request.body) }
    }

    @Test func declaredLengthOverTheLimitIsRefusedBeforeTheBodyIsSent() throws {
        let responder = Self.echo()
        try withServer(responder, configure: { $0.maximumBodySize = 1000 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.text == #"{"error":"request body larger than 1000 bytes"}"#)
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(client.waitForClose())
            #expect(responder.requests.isEmpty)
            #expect(eventually { server.inFlightRequests == 0 })
        }
    }

    @Test func expectContinueOverTheLimitGetsNoContinue() throws {
        try withServer(Self.echo(), configure: { $0.maximumBodySize = 10 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("PUT /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
            let bytes = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(bytes.hasPrefix("HTTP/1.1 413"))
            #expect(!bytes.contains("100 Continue"))
        }
    }

    @Test func bodyAtTheLimitIsKept() throws {
        try withServer(Self.echo(), configure: { $0.maximumBodySize = 1000 }) { server in
            let client = try RawClient(port: server.port)
            let body = [UInt8](repeating: 0x62, count: 1000)
            try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            try client.send(body)
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.body == body)
        }
    }

    @Test func chunkedBodyUnderTheLimitIsJoined() throws {
        try withServer(Self.echo(), configure: { $0.maximumBodySize = 1000 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.send("5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello world")
        }
    }

    @Test func chunkedBodyGrowingPastTheLimitGets413WhenItEnds() throws {
        let responder = Self.echo()
        try withServer(responder, configure: { $0.maximumBodySize = 1000 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = "1f4\r\n" + String(repeating: "z", count: 500) + "\r\n"
            for _ in 0..<5 {
                try client.send(chunk)
            }
            try client.send("0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.text == #"{"error":"request body larger than 1000 bytes"}"#)
            #expect(responder.requests.isEmpty)
            #expect(eventually { server.inFlightRequests == 0 })
        }
    }

    @Test func refusalUsesTheRespondersOwnFormat() throws {
        struct ProblemResponder: HTTPResponder {
            func respond(to request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 200) }
            func respond(to refusal: TransportRefusal, request: HTTPRequest) -> HTTPResponse {
                HTTPResponse(
                    status: refusal.status,
                    headers: [("Content-Type", "application/problem+json")],
                    body: Array(#"{"title":"\#(request.path)"}"#.utf8)
                )
            }
        }
        try withServer(ProblemResponder(), configure: { $0.maximumBodySize = 0 }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.text == #"{"title":"/p"}"#)
        }
    }
}
