import HTTPTransport
import Logging
import Testing

@Suite("Requests and responses over a socket")
struct RoundTripTests {
    @Test func methodPathQueryHeadersAndBodyReachTheResponder() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            let body: [UInt8] = [0, 1, 2, 0xFF, 0x7B, 0x0D, 0x0A]
            try client.send(
                "PUT /items/a%20b/%C3%A9?x=1&empty=&flag&x=2&sp=a%26b HTTP/1.1\r\n"
                    + "Host: example\r\nX-One: 1\r\nx-two:  two words \t \r\nContent-Length: \(body.count)\r\n\r\n")
            try client.send(body)
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "ok")

            let request = try #require(responder.requests.first)
            #expect(request.method == "PUT")
            #expect(request.path == "/items/a%20b/%C3%A9")
            #expect(request.query.map(\.name) == ["x", "empty", "flag", "x", "sp"])
            #expect(request.query.map(\.value) == ["1", "", "", "2", "a&b"])
            #expect(request.headers.map(\.name) == ["Host", "X-One", "x-two", "Content-Length"])
            #expect(request.headers.map(\.value) == ["example", "1", "two words", "7"])
            #expect(try request.header("X-TWO") == "two words")
            #expect(request.queryValue("x") == "1")
            #expect(request.body == body)
        }
    }

    /// The names and values most requests send are taken from a table of literals when their bytes are one of
    /// them, and made from the bytes otherwise: either way each is exactly as sent (case, bytes, method).
    @Test func commonNamesAndValuesAreExactlyAsSentWhetherOrNotTheTableHasThem() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            let fields = [("Host", "h"), ("content-TYPE", "application/json"), ("Content-Type", "application/JSON"),
                          ("X-User-Id", "application/json "), ("x-int64-format", "keep-alive"), ("Accept", "*/*"),
                          ("X-Table-Nam", "0"), ("Content-Length", "0")]
            for method in ["POST", "DELETE", "OPTIONS", "PATCH", "post"] {
                try client.send("\(method) /m HTTP/1.1\r\n" + fields.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n")
                _ = try client.readResponse()
            }
            // Every literal of the table, as a value (which may hold any of them): each compared under its length.
            let literals = ["0", "GET", "PUT", "*/*", "POST", "Host", "host", "HEAD", "close", "DELETE", "Accept",
                            "accept", "OPTIONS", "X-User-Id", "x-user-id", "X-Storage", "x-storage", "User-Agent",
                            "user-agent", "Connection", "connection", "keep-alive", "Content-Type", "content-type",
                            "X-Table-Name", "x-table-name", "Authorization", "authorization", "Content-Length",
                            "content-length", "X-Int64-Format", "x-int64-format", "Accept-Encoding", "accept-encoding",
                            "application/json"]
            try client.send("GET /m HTTP/1.1\r\nHost: h\r\n" + literals.map { "X-Literal: \($0)\r\n" }.joined() + "\r\n")
            #expect(try client.readResponse().status == 200)
            let requests = responder.requests
            try #require(requests.count == 6)
            #expect(requests.map(\.method) == ["POST", "DELETE", "OPTIONS", "PATCH", "post", "GET"])
            for request in requests.prefix(5) {
                #expect(request.headers.map(\.name) == fields.map(\.0))
                #expect(request.headers.map(\.value) == fields.map { $0.1.trimmingSuffix(" ") })
            }
            #expect(requests[5].values(of: "X-Literal") == literals)
        }
    }

    @Test func responderStatusHeadersAndBodyAreSentAsGiven() throws {
        let body: [UInt8] = [0, 0xFF, 0x0D, 0x0A, 0x41]
        let responder = RecordingResponder { _ in
            HTTPResponse(
                status: 418,
                headers: [("X-A", "1"), ("Content-Type", "application/octet-stream"), ("X-A", "2"), ("Content-Length", "999")],
                body: body
            )
        }
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 418)
            #expect(response.body == body)
            #expect(response.headers.filter { $0.name == "X-A" }.map(\.value) == ["1", "2"])
            #expect(response.header("Content-Type") == "application/octet-stream")
            #expect(response.header("Content-Length") == "5")
        }
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        let responder = RecordingResponder { request in
            HTTPResponse(status: 200, body: Array("\(request.path) \(request.body.count)".utf8))
        }
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            for index in 0..<5 {
                try client.send("POST /n/\(index) HTTP/1.1\r\nHost: x\r\nContent-Length: \(index)\r\n\r\n")
                try client.send([UInt8](repeating: 0x61, count: index))
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.text == "/n/\(index) \(index)")
                #expect(response.header("Connection") != "close")
            }
            #expect(responder.requests.count == 5)
        }
    }

    @Test func headAnswersTheHeadersWithoutTheBody() throws {
        let responder = RecordingResponder { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("twelve bytes".utf8))
        }
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            try client.send("HEAD /thing HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try client.readResponse(head: true)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "12")
            #expect(head.header("Content-Type") == "text/plain")
            try client.send("GET /thing HTTP/1.1\r\nHost: x\r\n\r\n")
            let get = try client.readResponse()
            #expect(get.text == "twelve bytes")
            #expect(responder.requests.map(\.method) == ["HEAD", "GET"])
        }
    }

    @Test func emptyBodiesAndOddStatusesAreSent() throws {
        let responder = RecordingResponder { request in
            switch request.path {
            case "/204": HTTPResponse(status: 204, headers: [("X-Done", "yes")])
            case "/empty": HTTPResponse(status: 200)
            default: HTTPResponse(status: 42)
            }
        }
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            try client.send("DELETE /204 HTTP/1.1\r\nHost: x\r\n\r\n")
            let noContent = try client.readResponse()
            #expect(noContent.status == 204)
            #expect(noContent.header("X-Done") == "yes")
            try client.send("GET /empty HTTP/1.1\r\nHost: x\r\n\r\n")
            let empty = try client.readResponse()
            #expect(empty.status == 200)
            #expect(empty.header("Content-Length") == "0")
            #expect(empty.body.isEmpty)
            try client.send("GET /bad HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 500)
        }
    }

    @Test func accessLogHasOneLinePerRequestWithoutHeaderValuesOrBody() throws {
        let sink = LogSink()
        let responder = RecordingResponder { _ in
            HTTPResponse(status: 201, body: Array("created".utf8), logMetadata: [("user", "digest-1234")])
        }
        try withServer(responder, accessLog: sink.logger) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /log/me%0Ahere?q=v HTTP/1.1\r\nHost: x\r\nAuthorization: secret-token\r\nContent-Length: 11\r\n\r\nsecret-body")
            #expect(try client.readResponse().status == 201)
            try client.send("GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 201)
            #expect(eventually { sink.infoEvents.count == 2 })
        }
        let events = sink.infoEvents
        try #require(events.count == 2)
        let first = events[0].metadata ?? [:]
        #expect(first["method"] == "POST")
        #expect(first["path"] == "/log/me%0Ahere")
        #expect(first["status"] == "201")
        #expect(first["user"] == "digest-1234")
        #expect(first["termination"] == nil)
        let duration = try #require(first["duration_ms"]?.description)
        #expect(Double(duration).map { $0 >= 0 } == true)
        #expect(events[1].metadata?["path"] == "/second")
        let everything = events.map { "\($0.message) \($0.metadata ?? [:])" }.joined()
        #expect(!everything.contains("secret"))
    }
}

private extension String {
    /// Without the trailing `character`s (libmicrohttpd keeps a value without the whitespace around it).
    func trimmingSuffix(_ character: Character) -> String {
        var text = self
        while text.last == character { text.removeLast() }
        return text
    }
}
