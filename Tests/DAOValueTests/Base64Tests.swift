import DAOValue
import Testing

@Suite struct Base64Tests {
    /// RFC 4648 §10.
    @Test(arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func encodesAndDecodesTheRFCVectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func everyByteValueAndLengthRoundTrips() {
        let all = (0...255).map(UInt8.init)
        for length in 0...all.count {
            let bytes = Array(all[..<length].reversed())
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
    }

    @Test(arguments: [
        "Zg", "Zg=", "Zm9", "Z", "Zm9vY",  // length not a multiple of 4
        " Zm9v", "Zm9v ", "Zm 9v", "Zm9v\n", "Zm9v\r\nYmFy", "Zg==\n",  // whitespace
        "Z===", "====", "Zg=a", "Zm=v", "Zg==Zg==", "Zm9v====", "=Zm9",  // misplaced padding
        "Zh==", "Zm9=",  // nonzero bits under the padding
        "Zm9v-_8=", "Zm9v*A==", "Zm9vé===", "Zm9v\u{0}AAA",  // outside the alphabet
    ])
    func decodingIsStrict(text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
