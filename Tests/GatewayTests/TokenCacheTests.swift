import DAOEngine
import DAOValue
@testable import Gateway
import Testing

/// The bearer token of an `Authorization` header.
@Suite struct TokenCacheTests {
    @Test(arguments: [
        ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER   abc.def", "abc.def"), ("Bearer", nil), ("Bearer ", nil),
        ("Bearer    ", nil), ("Bearerabc", nil), ("Basic abc", nil), ("Bear abc", nil), ("", nil),
    ] as [(String, String?)])
    func theBearerTokenIsTheTextAfterTheScheme(_ authorization: String, _ expected: String?) {
        #expect(Gateway.bearerToken(authorization) == expected)
    }
}
