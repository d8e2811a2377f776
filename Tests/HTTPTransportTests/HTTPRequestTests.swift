import HTTPTransport
import Testing

@Suite("Requests and refusals in process")
struct HTTPRequestTests {
    @Test func headerLookupIgnoresCaseAndRefusesAFieldSentTwice() throws {
        let request = HTTPRequest(
            method: "GET", path: "/",
            headers: [("X-Token", "first"), ("x-token", "second"), ("Accept", "*/*")]
        )
        #expect(throws: DuplicateHeader(name: "x-TOKEN")) { try request.header("x-TOKEN") }
        #expect(request.values(of: "X-TOKEN") == ["first", "second"])
        #expect(try request.header("accept") == "*/*")
        #expect(try request.header("X-Tok") == nil)
        #expect(try request.header("X-Tokens") == nil)
    }

    @Test func onlyASCIILettersFoldCase() throws {
        // Bytes 0x20 apart that are not letters ("@" and "`", "[" and "{", "0" and "\u{10}") stay distinct.
        let request = HTTPRequest(method: "GET", path: "/", headers: [("X-@[0", "odd"), ("Ünï", "non-ASCII")])
        #expect(try request.header("x-@[0") == "odd")
        #expect(try request.header("X-`[0") == nil)
        #expect(try request.header("X-@{0") == nil)
        #expect(try request.header("X-@[\u{10}") == nil)
        #expect(try request.header("ünï") == nil)
        #expect(try request.header("Ünï") == "non-ASCII")
        // Byte for byte beyond ASCII letters: a canonically equivalent spelling (U + combining diaeresis) is another name.
        #expect(try request.header("U\u{308}nï") == nil)
        let marks = HTTPRequest(method: "GET", path: "/", headers: [("a\u{301}\u{316}", "marks")])
        #expect(try marks.header("a\u{316}\u{301}") == nil)
    }

    @Test func queryLookupTakesTheFirstMatchExactly() {
        let request = HTTPRequest(method: "GET", path: "/", query: [("a", "1"), ("A", "2"), ("a", "3")])
        #expect(request.queryValue("a") == "1")
        #expect(request.queryValue("A") == "2")
        #expect(request.queryValue("b") == nil)
    }

    @Test(arguments: [
        (TransportRefusal.bodyTooLarge(limit: 10), 413, #"{"error":"request body larger than 10 bytes"}"#),
        (TransportRefusal.shuttingDown, 503, #"{"error":"server is shutting down"}"#),
    ])
    func defaultRefusalIsAPlainJSONError(refusal: TransportRefusal, status: Int, body: String) {
        let response = RecordingResponder().respond(to: refusal, request: HTTPRequest(method: "GET", path: "/"))
        #expect(response.status == status)
        #expect(response.headers.map(\.name) == ["Content-Type"])
        #expect(response.headers.first?.value == "application/json")
        #expect(String(decoding: response.body, as: UTF8.self) == body)
    }
}
