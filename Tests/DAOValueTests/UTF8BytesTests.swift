import ASCIIBytes
import DAOValue
import Testing

/// `withUTF8Bytes(of:)`: a string's UTF-8 bytes lent in place, whatever the string's storage (small, on the
/// heap, a literal, made from a slice), and the byte-level helpers built on it.
@Suite struct UTF8BytesTests {
    static let texts: [String] = [
        "",
        "a",
        "X-User-Id",  // small: held inside the string itself
        "fifteen bytes!!",  // the longest small string
        "sixteen bytes!!!",  // the shortest on the heap
        String(repeating: "long ", count: 40),
        "caf\u{E9} \u{1F600} \u{2028}",  // two-, four- and three-byte sequences
        String("__prefix__taken from a slice__"[...].dropFirst(10)),
        String(decoding: [0x61, 0x00, 0x62], as: UTF8.self),  // a NUL inside
    ]

    @Test(arguments: texts)
    func theBytesAreTheStringsUTF8(_ text: String) {
        let lent = withUTF8Bytes(of: text) { Array($0) }
        #expect(lent == Array(text.utf8))
    }

    @Test func aThrownErrorComesOut() {
        struct Stop: Error {}
        #expect(throws: Stop.self) { try withUTF8Bytes(of: "sixteen bytes!!!") { _ in throw Stop() } }
    }

    @Test func jsonStringsAreWrittenFromTheLentBytes() throws {
        for text in Self.texts {
            var buffer: [UInt8] = []
            writeJSONString(text, to: &buffer)
            let parsed = try Value(parsingJSON: String(decoding: buffer, as: UTF8.self))
            #expect(parsed == .string(text))
        }
    }

    @Test func base64IsDecodedFromTheLentBytes() {
        #expect(Base64.decode("aGVsbG8=") == Array("hello".utf8))
        #expect(Base64.decode(String(repeating: "QUJD", count: 10)) == Array(String(repeating: "ABC", count: 10).utf8))
    }
}
