import HTTPTransport
import Testing

/// Each connection's memory (libmicrohttpd's pool, zeroed after every request, so kept at 32 KiB) still takes
/// the headers a caller sends: a bearer token of the largest size taken (8 KiB) with the usual fields, on one
/// keep-alive connection request after request.
@Suite struct HeaderRoomTests {
    @Test func aLargeBearerTokenFitsRequestAfterRequest() throws {
        let token = String(repeating: "a", count: 8 * 1024)
        let responder = RecordingResponder { request in
            HTTPResponse(status: 200, body: Array("\(request.firstValue(of: "Authorization")?.utf8.count ?? 0)".utf8))
        }
        try withServer(responder) { server in
            let client = try RawClient(port: server.port)
            for _ in 0..<3 {
                try client.send("GET /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
                    + "User-Agent: \(String(repeating: "u", count: 512))\r\nCookie: \(String(repeating: "c", count: 4096))\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == "\(token.utf8.count + 7)")
            }
        }
        #expect(responder.requests.count == 3)
    }
}
