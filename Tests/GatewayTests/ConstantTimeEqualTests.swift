import Testing
@testable import Gateway

/// The one comparison of a secret a caller sends (the admin token): exact in
/// length and content, whatever the lengths' difference.
@Suite struct ConstantTimeEqualTests {
    static let token = "admin-token-0123456789"

    @Test func equalSecretsAreEqual() {
        #expect(constantTimeEqual(Self.token, Self.token))
        #expect(constantTimeEqual("", ""))
    }

    /// A difference in any byte, first, middle or last, is a difference.
    @Test(arguments: [0, 7, 21])
    func aByteThatDiffersAnywhereIsADifference(_ index: Int) {
        var bytes = Array(Self.token.utf8)
        bytes[index] ^= 0x01
        #expect(!constantTimeEqual(Array(Self.token.utf8), bytes))
    }

    /// Folded into 8 bits, lengths 256 apart XOR to a zero byte, and NULs
    /// past the shorter one compare as the zeros it is padded with: the token
    /// followed by 256 NUL bytes compared equal to the token.
    @Test(arguments: [1, 255, 256, 512, 768, 1024, 65_536])
    func trailingNULsAreADifferenceWhateverTheirCount(_ count: Int) {
        let padded = Self.token + String(repeating: "\0", count: count)
        #expect(!constantTimeEqual(padded, Self.token))
        #expect(!constantTimeEqual(Self.token, padded))
        #expect(!constantTimeEqual(Array(padded.utf8), Array(Self.token.utf8)))
        #expect(!constantTimeEqual([UInt8](repeating: 0, count: count), []))
    }

    /// Lengths that differ by a multiple of 256 with the same leading bytes.
    @Test(arguments: [256, 512, 4096])
    func lengthsThatDifferByAMultipleOf256AreADifference(_ difference: Int) {
        let short = [UInt8](repeating: 0, count: 3)
        let long = short + [UInt8](repeating: 0, count: difference)
        #expect(!constantTimeEqual(short, long))
        #expect(!constantTimeEqual(long, short))
    }

    /// Through the admin check of a gateway: `Bearer <token>` then 256 NULs
    /// is refused (libmicrohttpd cuts a header at NUL, so only an in-process
    /// caller can send one: the function must not rely on that).
    @Test func theAdminCheckRefusesTheTokenFollowedByNULs() throws {
        let fixture = try GatewayFixture()
        let padded = "Bearer " + GatewayFixture.adminToken + String(repeating: "\0", count: 256)
        #expect(fixture.send("GET", "/storages", headers: [("Authorization", padded)]).status == 401)
        #expect(fixture.send("GET", "/storages", headers: [("Authorization", "Bearer " + GatewayFixture.adminToken)]).status == 200)
    }
}
