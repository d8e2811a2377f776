import DAOValue
import Foundation
@testable import JWT
import Synchronization
import Testing

/// JWT verification by itself, no HTTP: each key form, the cache of verified tokens, key reloads and key files.
@Suite struct JWTVerifierTests {
    let keys = TestKeys.shared

    static func claims(_ user: String = "ann", expiresIn: Int64 = 600) -> OrderedObject {
        ["sub": .string(user), "exp": .integer(TestKeys.now + expiresIn)]
    }

    @Test(arguments: JWTAlgorithm.allCases)
    func aPEMPublicKeyFileVerifiesWithoutKid(_ algorithm: JWTAlgorithm) throws {
        guard algorithm != .hs256 else { return }
        let verifier = try JWTVerifier(settings: JWTSettings(keysFile: try keys.file("key.pem", keys.publicPEM[algorithm]!)))
        #expect(try verifier.verify(keys.token(algorithm, Self.claims())).user.rawValue == "ann")
    }

    @Test func verifiedTokensAreRememberedUntilExpiryAndForgottenOnReload() throws {
        let now = Mutex(Double(TestKeys.now))
        let keysFile = try keys.file("key.pem", keys.publicPEM[.edDSA]!)
        let verifier = try JWTVerifier(settings: JWTSettings(keysFile: keysFile, cacheCapacity: 2)) { now.withLock { $0 } }
        let token = keys.token(.edDSA, Self.claims(expiresIn: 60))
        #expect(try verifier.verify(token).user.rawValue == "ann")
        #expect(verifier.cached(token) != nil)
        now.withLock { $0 += 61 }
        #expect(verifier.cached(token) == nil)
        #expect(throws: TokenRefusal.self) { try verifier.verify(token) }
        now.withLock { $0 -= 61 }
        // Bounded: a third token makes room.
        for user in ["a", "b", "c"] { _ = try verifier.verify(keys.token(.edDSA, Self.claims(user))) }
        #expect(verifier.cachedCount <= 2)
        // A reload to another key forgets every remembered token and refuses them.
        try keys.publicPEM[.es256]!.write(toFile: keysFile, atomically: true, encoding: .utf8)
        #expect(try verifier.reloadIfChanged() != nil)
        #expect(verifier.cachedCount == 0)
        #expect(throws: TokenRefusal.self) { try verifier.verify(token) }
        #expect(try verifier.verify(keys.token(.es256, Self.claims())).user.rawValue == "ann")
        #expect(try verifier.reloadIfChanged() == nil)
        // A capacity of 0 remembers nothing.
        let forgetful = try JWTVerifier(settings: JWTSettings(keysFile: keysFile, cacheCapacity: 0))
        #expect(try forgetful.verify(keys.token(.es256, Self.claims())).user.rawValue == "ann")
        #expect(forgetful.cachedCount == 0)
    }

    @Test func aBadKeyFileKeepsThePreviousKeys() throws {
        let keysFile = try keys.file("key.pem", keys.publicPEM[.rs256]!)
        let verifier = try JWTVerifier(settings: JWTSettings(keysFile: keysFile))
        try "-----BEGIN PUBLIC KEY-----\nhalf".write(toFile: keysFile, atomically: true, encoding: .utf8)
        #expect(throws: JWTKeyError.self) { try verifier.reloadIfChanged() }
        #expect(try verifier.verify(keys.token(.rs256, Self.claims())).user.rawValue == "ann")
    }

    @Test func keyFilesAreCheckedAtLoad() throws {
        #expect(throws: JWTKeyError.self) { try JWTKeySet.load(secretFile: try keys.file("short", "too short"), keysFile: nil) }
        #expect(throws: JWTKeyError.self) { try JWTKeySet.load(secretFile: nil, keysFile: try keys.file("none", "hello")) }
        // A JWKS key of an unknown type or another use is skipped, not a failure of the whole set.
        let jwks = #"{"keys": [{"kty": "XYZ", "kid": "odd"}, \#(keys.jwk(.edDSA, kid: "ed")), {"kty": "oct", "use": "enc", "k": "AAAA"}]}"#
        let set = try JWTKeySet.load(secretFile: nil, keysFile: try keys.file("jwks", jwks))
        #expect(set.keys.map(\.algorithm) == [.edDSA])
        #expect(set.skipped.count == 2)
    }

    /// A remembered token costs a lookup hashed by its end, and is still matched by the whole token.
    @Test func aTokenSharingARememberedTokensEndIsNotTakenForIt() throws {
        let verifier = try JWTVerifier(settings: JWTSettings(secretFile: keys.secretFile))
        let token = keys.token(.hs256, Self.claims("ann"))
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
}
