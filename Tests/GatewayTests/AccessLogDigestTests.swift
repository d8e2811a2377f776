import DAOEngine
@testable import Gateway
import HTTPTransport
import Testing

/// The access log's digest of a user is computed once per id, then looked up.
@Suite struct AccessLogDigestTests {
    @Test func aUsersDigestIsComputedOnceAndIsTheUserIDsDigest() throws {
        let fixture = try GatewayFixture()
        func logged(_ user: String) -> String? {
            fixture.post("/dao/Messages/unreadCount", nil, user: user).response.logMetadata.first { $0.name == "user" }?.value
        }
        #expect(fixture.gateway.userDigests.count == 0)
        let first = logged("alice@example.com")
        #expect(first == (try UserID("alice@example.com")).description)
        #expect(logged("alice@example.com") == first)
        #expect(logged("alice@example.com") == first)
        #expect(fixture.gateway.userDigests.count == 1)
        let other = logged("bob")
        #expect(other != first && other?.hasPrefix("user#") == true)
        #expect(fixture.gateway.userDigests.count == 2)
    }

    @Test func theRememberedDigestsAreBoundedAndAnInvalidIDIsNotRemembered() throws {
        let digests = UserDigests(capacity: 4)
        for index in 0..<10 {
            #expect(digests.digest("user-\(index)") == (try UserID("user-\(index)")).description)
            #expect(digests.count <= 4)
        }
        let before = digests.count
        #expect(digests.digest("has space") == "user#invalid")
        #expect(digests.count == before)
    }

    @Test func firstValueIsTheFirstFieldOfThatNameInAnyCase() {
        let request = HTTPRequest(method: "GET", path: "/", headers: [("x-user-id", "a"), ("X-User-Id", "b"), ("Other", "c")])
        #expect(request.firstValue(of: "X-USER-ID") == "a")
        #expect(request.firstValue(of: "Other") == "c")
        #expect(request.firstValue(of: "Missing") == nil)
    }
}
