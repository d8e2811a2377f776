import DAOEngine
import DAOValue
@testable import Gateway
import Testing

/// A remembered token costs a lookup hashed by its end, and is still matched by the whole token.
@Suite struct TokenCacheTests {
    @Test func aTokenSharingARememberedTokensEndIsNotTakenForIt() throws {
        let keys = TestKeys.shared
        let verifier = try JWTVerifier(settings: JWTSettings(secretFile: keys.secretFile))
        let token = keys.token(.hs256, AuthTests.claims("ann"))
        #expect(try verifier.verify(token).user.rawValue == "ann")
        #expect(verifier.cached(token) != nil)
        // The same length and signature, another payload (one byte of the claims changed): not the remembered one.
        var bytes = Array(token.utf8)
        let dot = try #require(bytes.firstIndex(of: UInt8(ascii: ".")))
        bytes[dot + 2] = bytes[dot + 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let forged = String(decoding: bytes, as: UTF8.self)
        #expect(RememberedToken(forged).hashValue == RememberedToken(token).hashValue)
        #expect(RememberedToken(forged) != RememberedToken(token))
        #expect(verifier.cached(forged) == nil)
        #expect(throws: TokenRefusal.self) { try verifier.verify(forged) }
        #expect(verifier.cachedCount == 1)
    }

    @Test(arguments: [
        ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER   abc.def", "abc.def"), ("Bearer", nil), ("Bearer ", nil),
        ("Bearer    ", nil), ("Bearerabc", nil), ("Basic abc", nil), ("Bear abc", nil), ("", nil),
    ] as [(String, String?)])
    func theBearerTokenIsTheTextAfterTheScheme(_ authorization: String, _ expected: String?) {
        #expect(Gateway.bearerToken(authorization) == expected)
    }
}
