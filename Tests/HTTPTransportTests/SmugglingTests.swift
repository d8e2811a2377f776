import HTTPTransport
import Testing

/// Request smuggling: a request whose body framing two HTTP implementations could read differently is refused
/// before any of its body is read, with `Connection: close`, so that no part of it runs as a request of its own.
@Suite("Request smuggling and protocol versions")
struct SmugglingTests {
    /// The request a smuggling attempt hides in a body.
    static let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    /// Classic shapes (RFC 9112 §6.3; PortSwigger's CL.CL, CL.TE, TE.CL, TE.TE), each with the smuggled request
    /// where one reading of the framing would take it as the next request; the status each gets.
    static let shapes: [(name: String, head: String, body: String, status: Int)] = [
        ("CL.CL", "Content-Length: 0\r\nContent-Length: \(smuggled.utf8.count)\r\n", smuggled, 400),
        ("CL.CL same value", "Content-Length: \(smuggled.utf8.count)\r\nContent-Length: \(smuggled.utf8.count)\r\n", smuggled, 400),
        ("CL list", "Content-Length: 0, \(smuggled.utf8.count)\r\n", smuggled, 400),
        ("CL.TE", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + smuggled, 400),
        ("TE.CL", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n" + smuggled, 400),
        ("TE.TE", "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n", "0\r\n\r\n" + smuggled, 400),
        ("TE gzip, chunked", "Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n" + smuggled, 501),
        ("TE chunked, chunked", "Transfer-Encoding: chunked, chunked\r\n", "0\r\n\r\n" + smuggled, 501),
        ("TE xchunked", "Transfer-Encoding: xchunked\r\n", "0\r\n\r\n" + smuggled, 501),
        ("TE chunked + space", "Transfer-Encoding: chunked \r\n", "0\r\n\r\n" + smuggled, 501),
        ("TE chunked + tab", "Transfer-Encoding: chunked\t\r\n", "0\r\n\r\n" + smuggled, 501),
        ("TE identity", "Transfer-Encoding: identity\r\nContent-Length: 0\r\n", smuggled, 400),
        ("TE vertical tab", "Transfer-Encoding:\u{0B}chunked\r\n", "0\r\n\r\n" + smuggled, 400),
        ("space before colon", "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n" + smuggled, 400),
        ("tab before colon", "Content-Length\t: 0\r\n", smuggled, 400),
        ("CL with a CR", "Content-Length: 0\rX: y\r\n", smuggled, 400),
        ("two Hosts", "Host: y\r\nContent-Length: 0\r\n", smuggled, 400),
        // Field names are compared without case (`HeaderFacts`): each of these is one of the shapes above.
        ("two Hosts, names cased apart", "hOST: y\r\nContent-Length: 0\r\n", smuggled, 400),
        ("CL.CL, names cased apart", "Content-Length: 0\r\ncONTENT-lENGTH: \(smuggled.utf8.count)\r\n", smuggled, 400),
        ("CL.TE, names cased apart", "content-length: 5\r\nTRANSFER-ENCODING: chunked\r\n", "0\r\n\r\n" + smuggled, 400),
    ]

    @Test(arguments: shapes.indices)
    func ambiguousFramingIsRefusedAndTheSmuggledRequestNeverRuns(index: Int) throws {
        let shape = Self.shapes[index]
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port, timeout: 3)
            let start = ContinuousClock.now
            try client.send("POST /first HTTP/1.1\r\nHost: x\r\n" + shape.head + "\r\n" + shape.body)
            let bytes = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(ContinuousClock.now - start < .seconds(2), "\(shape.name) held the connection")
            #expect(bytes.hasPrefix("HTTP/1.1 \(shape.status) "), "\(shape.name): \(bytes.prefix(80))")
            // (libmicrohttpd 0.9.75 writes the head of its own 400 for a malformed Content-Length twice: one answer.)
            #expect(!bytes.contains("HTTP/1.1 2"), "\(shape.name) got a second response")
            #expect(responder.requests.isEmpty, "\(shape.name) reached the responder")
        }
    }

    @Test func anHTTP10RequestCannotBeChunked() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port, timeout: 3)
            try client.send("POST /first HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + Self.smuggled)
            let bytes = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(bytes.hasPrefix("HTTP/1.1 400 ") || bytes.hasPrefix("HTTP/1.0 400 "))
            #expect(responder.requests.isEmpty)
        }
    }

    @Test func theRefusalSaysWhyAndClosesTheConnection() throws {
        try withServer(RecordingResponder()) { server in
            let client = try RawClient(port: server.port, timeout: 3)
            try client.send("POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.text == #"{"error":"the request has more than one Content-Length field"}"#)
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(client.waitForClose())
        }
    }

    /// Framing the refusals must leave alone: a chunked body (any case), a Content-Length, a leading tab.
    @Test func plainFramingStillWorks() throws {
        let responder = RecordingResponder { request in HTTPResponse(status: 200, body: request.body) }
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            for head in ["Transfer-Encoding: chunked\r\n", "Transfer-Encoding: Chunked\r\n", "Transfer-Encoding:\tCHUNKED\r\n"] {
                try client.send("POST /c HTTP/1.1\r\nHost: x\r\n\(head)\r\n3\r\nabc\r\n0\r\n\r\n")
                #expect(try client.readResponse().text == "abc", "\(head)")
            }
            try client.send("POST /l HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            #expect(try client.readResponse().text == "hi")
            #expect(responder.requests.count == 4)
        }
    }

    /// libmicrohttpd answers versions itself, before any callback: 505 for a major version other than 1
    /// (daogate speaks HTTP/1.x only), 400 for anything that is not `HTTP/d.d`; HTTP/1.2 to 1.9 are read as 1.1.
    @Test(arguments: [
        ("HTTP/2.0", 505), ("HTTP/3.0", 505), ("HTTP/0.9", 505), ("HTTP/9.9", 505),
        ("HTTP/1.1x", 400), ("http/1.1", 400), ("HTTP/11", 400), ("HTTP/1.a", 400), ("HTTP/ 1.1", 400), ("HTTP/2", 400),
    ])
    func otherVersionsAreAnsweredByTheTransportAlone(version: String, status: Int) throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port, timeout: 3)
            try client.send("DELETE /kv/common/smug \(version)\r\nHost: x\r\n\r\n")
            let bytes = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(bytes.hasPrefix("HTTP/1.1 \(status) "), "\(version): \(bytes.prefix(60))")
            #expect(responder.requests.isEmpty)
        }
    }

    @Test func aMinorVersionAboveOneIsServedAsHTTP11() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /minor HTTP/1.2\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(responder.requests.map(\.path) == ["/minor"])
        }
    }

    /// Strict client discipline (MHD_OPTION_STRICT_FOR_CLIENT): no Host in HTTP/1.1 is a 400; a space in the
    /// target closes the connection without an answer.
    @Test(arguments: ["GET /a HTTP/1.1\r\n\r\n", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n"])
    func strictClientDisciplineRefuses(request: String) throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port, timeout: 3)
            try client.send(request)
            let bytes = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(bytes.isEmpty || bytes.hasPrefix("HTTP/1.1 400 "))
            #expect(!bytes.contains(" 200 "))
            #expect(responder.requests.isEmpty)
        }
    }
}
