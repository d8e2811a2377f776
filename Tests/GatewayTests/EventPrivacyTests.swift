import DAOEngine
import DAOValue
import Gateway
import Testing

/// `GET /events`: an event of a user's storage is that user's (or the
/// admin's); users appear in it, as in logs, by a keyed digest.
@Suite struct EventPrivacyTests {
    let fixture: GatewayFixture

    init() throws { fixture = try GatewayFixture() }

    /// Tables created in ann's, bob's and the common storage.
    private func createTables() {
        #expect(fixture.post("/dao/ChatMessages/send", #"["ann", "hi"]"#, user: "ann", table: "chat_ann_secret").status == 200)
        #expect(fixture.post("/dao/ChatMessages/send", #"["bob", "hi"]"#, user: "bob", table: "chat_bob_secret").status == 200)
        #expect(fixture.post("/dao/Books/titlesFrom", "[2000]").status == 200)
    }

    private func events(user: String? = nil, authorization: String? = nil) -> GatewayFixture.Reply {
        var headers: [(String, String)] = []
        if let user { headers.append((Gateway.userHeader, user)) }
        if let authorization { headers.append(("Authorization", authorization)) }
        return fixture.send("GET", "/events", headers: headers)
    }

    private func tables(_ reply: GatewayFixture.Reply) -> Set<String> {
        Set(reply.json[member: "recent"]?.arrayValue?.compactMap { $0[member: "table"]?.stringValue } ?? [])
    }

    @Test func aCallerSeesSharedStoragesAndTheirOwn() throws {
        createTables()
        let ann = events(user: "ann")
        #expect(ann.status == 200)
        #expect(tables(ann) == ["chat_ann_secret", "books"])
        #expect(!ann.text.contains("chat_bob_secret"))
        #expect(!ann.text.contains(try UserID("bob").description))
        #expect(ann.json[member: "counts"]?[member: "table_created"] == .integer(2))

        let nobody = events()
        #expect(tables(nobody) == ["books"])
        #expect(nobody.json[member: "counts"]?[member: "table_created"] == .integer(1))
    }

    @Test func theAdminSeesEverything() {
        createTables()
        let admin = events(authorization: "Bearer \(GatewayFixture.adminToken)")
        #expect(tables(admin) == ["chat_ann_secret", "chat_bob_secret", "books"])
        #expect(admin.json[member: "counts"]?[member: "table_created"] == .integer(3))
    }

    @Test func aWrongTokenIsRefusedNotDowngraded() {
        createTables()
        let wrong = events(user: "ann", authorization: "Bearer not-the-token")
        #expect(wrong.status == 401)
        #expect(wrong.code == "admin_required")
    }

    /// HMAC-SHA256 (RFC 4231, test case 2), so the digest is a keyed MAC and not a plain hash.
    @Test func theDigestIsHMACSHA256() {
        let mac = UserDigest.digest("what do ya want for nothing?", key: Array("Jefe".utf8), bytes: 32)
        #expect(mac == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func digestsDependOnTheKeyAndAre128Bits() throws {
        let one = UserDigest.randomKey(), other = UserDigest.randomKey()
        #expect(UserDigest.digest("ann", key: one, bytes: 16) != UserDigest.digest("ann", key: other, bytes: 16))
        let shown = try UserID("ann").description
        #expect(shown.hasPrefix("user#"))
        #expect(shown.dropFirst(5).count == 32)
        #expect(shown.dropFirst(5).allSatisfy { $0.isHexDigit })
    }
}
