import DAOValue
import Foundation
import Gateway
import Testing

/// `X-User-Id` is percent-decoded: a client runtime that percent-encodes
/// header values (swift-openapi-runtime) and one that sends them as given
/// (curl) name the same user, and no encoding reaches another user's storage.
@Suite struct UserHeaderEncodingTests {
    let fixture: GatewayFixture
    init() throws { fixture = try GatewayFixture() }

    func put(_ user: String, _ value: String) -> GatewayFixture.Reply {
        fixture.send("PUT", "/kv/user/b/k", #"{"value": "\#(value)"}"#, headers: [(Gateway.userHeader, user)])
    }

    func get(_ user: String) -> GatewayFixture.Reply {
        fixture.send("GET", "/kv/user/b/k", headers: [(Gateway.userHeader, user)])
    }

    /// Every file under the data folder.
    func files() -> Set<String> {
        let paths = FileManager.default.enumerator(atPath: fixture.root.path)?.allObjects as? [String] ?? []
        return Set(paths)
    }

    static func escape(_ byte: UInt8, lower: Bool = false) -> String {
        let hex = String(byte, radix: 16, uppercase: !lower)
        return "%" + (hex.count == 1 ? "0" + hex : hex)
    }

    /// Each visible ASCII character, sent as itself and as its escape in
    /// either case (what a runtime encoding it sends), names one user; a
    /// `%` of the id is sent as `%25`.
    @Test func eachCharacterAsItselfAndEscapedNamesOneUser() {
        for byte in UInt8(ascii: "!")...UInt8(ascii: "~") {
            let character = String(UnicodeScalar(byte))
            let plain = "u" + (byte == UInt8(ascii: "%") ? "%25" : character) + "x"
            let value = "v\(byte)"
            #expect(put(plain, value).status == 200, "\(character)")
            for encoded in ["u" + Self.escape(byte) + "x", "u" + Self.escape(byte, lower: true) + "x"] {
                let reply = get(encoded)
                #expect(reply.status == 200 && reply.json[member: "value"]?.stringValue == value, "\(character) as \(encoded): \(reply.text)")
            }
        }
        // The whole of an id a Swift client encodes: ann@example.com.
        #expect(put("ann@example.com", "ann").status == 200)
        #expect(get("ann%40example.com").json[member: "value"]?.stringValue == "ann")
        // Decoded once: %2540 is the three characters %40, another user.
        #expect(get("ann%2540example.com").code == "key_not_found")
    }

    /// Escapes of what an id may not hold, and a `%` that begins no escape,
    /// are refused before any storage is opened.
    @Test(arguments: ["has%20space", "nul%00", "del%7F", "tab%09", "line%0Afeed", "caf%C3%A9", "bad%", "bad%4", "bad%zz", "bad%%41",
                      "plain%sign", String(repeating: "%41", count: 129), String(repeating: "a", count: 129)])
    func refusedEscapesChangeNothing(_ user: String) {
        let before = files()
        let reply = put(user, "x")
        #expect(reply.status == 400)
        #expect(reply.code == "invalid_user", "\(user): \(reply.text)")
        #expect(files() == before)
    }

    /// The longest id, every character escaped (384 bytes), is taken.
    @Test func theLongestIdEscapedIsTaken() {
        let id = String(repeating: "@", count: 128)
        #expect(put(String(repeating: "%40", count: 128), "long").status == 200)
        #expect(get(id).json[member: "value"]?.stringValue == "long")
    }

    /// In jwt mode the decoded header is what must equal the token's user:
    /// a Swift client's `ann%40example.com` is ann@example.com's, another's escape is refused.
    @Test func theTokensUserComparesWithTheDecodedHeader() throws {
        let (fixture, _) = try AuthTests.fixture()
        let token = AuthTests.token(.hs256, AuthTests.claims("ann@example.com"))
        #expect(AuthTests.call(fixture, token, user: "ann%40example.com").code == "key_not_found")
        #expect(AuthTests.call(fixture, token, user: "ann@example.com").code == "key_not_found")
        #expect(AuthTests.call(fixture, token, user: "bob%40example.com").code == "user_mismatch")
        #expect(AuthTests.call(fixture, token, user: "ann%2540example.com").code == "user_mismatch")
    }
}
