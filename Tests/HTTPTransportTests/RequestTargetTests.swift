import HTTPTransport
import Testing

/// The request target reaches the responder exactly as sent: libmicrohttpd no longer decodes the path into a C
/// string that `%00` (or a raw NUL) would end, so the router sees the whole path.
@Suite("The request target as sent")
struct RequestTargetTests {
    @Test func everyPercentEncodedByteReachesTheResponderEncoded() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            for byte in 0...255 {
                let escape = "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
                try client.send("DELETE /kv/common/scratch\(escape)z/k1?v=a\(escape)b HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
                let request = try #require(responder.requests.last)
                #expect(request.path == "/kv/common/scratch\(escape)z/k1")
                #expect(request.queryValue("v").map { Array($0.utf8) } == (byte < 0x80 ? [0x61, UInt8(byte), 0x62] : Array("a\u{FFFD}b".utf8)))
            }
            #expect(responder.requests.count == 256)
        }
    }

    /// A raw byte HTTP does not allow in a target (a control character, a NUL that once ended the path, a byte
    /// that is not UTF-8) is a 400 that reaches no responder; any other raw byte arrives as sent.
    @Test func everyRawByteIsRefusedOrArrivesAsSent() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            for byte in UInt8(0)...UInt8(255) where byte != UInt8(ascii: "\n") && byte != UInt8(ascii: " ") {
                let client = try RawClient(port: server.port, timeout: 3)
                let before = responder.requests.count
                try client.send(Array("DELETE /kv/common/scratch".utf8) + [byte] + Array("z/k1 HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
                let response = try client.readResponse()
                if byte < 0x20 || byte == 0x7F || byte >= 0x80 {
                    #expect(response.status == 400, "byte \(byte)")
                    #expect(responder.requests.count == before, "byte \(byte)")
                } else {
                    #expect(response.status == 200, "byte \(byte)")
                    let path = responder.requests.last?.path
                    #expect(path == (byte == UInt8(ascii: "?") ? "/kv/common/scratch" : "/kv/common/scratch\(Character(Unicode.Scalar(byte)))z/k1"))
                }
            }
        }
    }

    @Test func rawUTF8InTheTargetArrivesAsSent() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /kv/common/é/ключ HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(responder.requests.first?.path == "/kv/common/é/ключ")
        }
    }

    /// The query is still read by libmicrohttpd: split on `&` and `=`, `+` as a space, then percent-decoded.
    @Test func queryArgumentsAreDecodedAsBefore() throws {
        let responder = RecordingResponder()
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /q?a=x+y&b=x%2By&c=%00%26&d HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            let query = try #require(responder.requests.first?.query)
            #expect(query.map(\.name) == ["a", "b", "c", "d"])
            #expect(query.map(\.value) == ["x y", "x+y", "\u{0}&", ""])
        }
    }
}
