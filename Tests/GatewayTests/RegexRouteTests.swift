import DAOValue
import Gateway
import Testing

/// The two routes that take a caller's regular expression — table deletion
/// (`deleteTablesWithRegex`) and memory-cache removal (`removeObjectsWithRegex:`)
/// — over the same names: one matcher, so one table of cases for both.
@Suite struct RegexRouteTests {
    let fixture: GatewayFixture

    init() throws { fixture = try GatewayFixture() }

    static let names = ["chat_1", "chat_10", "chat_2", "other"]

    /// A pattern and the names it removes; nil when it is refused with 400
    /// `invalid_regex` (and nothing is removed).
    static let cases: [(pattern: String, removed: [String]?)] = [
        // The issue's escapes from ^( … )$.
        ("chat_1)|(zzz", nil), ("x)|(", nil), (")|(.*", nil),
        // Alternations and anchors inside the pattern stay inside the whole name.
        ("chat_1|zzz", ["chat_1"]), ("^chat_1$|chat_2", ["chat_1", "chat_2"]), ("(?m)chat_1$", ["chat_1"]),
        // ICU's syntax, which callers of the reference wrote.
        ("chat_\\d+", ["chat_1", "chat_10", "chat_2"]), ("(?i)CHAT_1\\d?", ["chat_1", "chat_10"]), ("\\w+", names),
        ("\\Qchat_1\\E", ["chat_1"]), ("\\Qchat_1)|(\\E.*", []),
        // What only a backtracking matcher can do, and ICU's set operations.
        ("(chat)_\\1", nil), ("(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2x", nil), ("chat_(?=1).*", nil), ("(?>chat_1)0", nil),
        ("chat_1*+", nil), ("[[a-z]--[h]]+_1", nil), ("[a-z&&[^h]]+", nil),
    ]

    @Test(arguments: cases)
    func tableDeletionAndCacheRemovalMatchTheSameWholeNames(pattern: String, removed: [String]?) throws {
        let user = [(Gateway.userHeader, "u")]
        #expect(fixture.send("PUT", "/lru/memory/user/names", #"{"capacity": 10}"#, headers: user).status == 200)
        for name in Self.names {
            #expect(fixture.post("/dao/ChatMessages/send", #"["a", "b"]"#, user: "u", table: name).status == 200)
            #expect(fixture.send("PUT", "/lru/memory/user/names/entries/\(name)", #"{"value": 1}"#, headers: user).status == 200)
        }
        let body = Value.object(["pattern": .string(pattern)]).jsonString()
        let tables = fixture.send("POST", "/modules/ChatMessages/tables/delete", body, headers: user)
        let cache = fixture.send("POST", "/lru/memory/user/names/remove", Value.object(["regex": .string(pattern)]).jsonString(), headers: user)
        let leftTables = fixture.send("GET", "/modules/ChatMessages", headers: user).json[member: "tables"]?.arrayValue?
            .compactMap { $0[member: "table"]?.stringValue }.sorted()
        let leftKeys = fixture.send("GET", "/lru/memory/user/names/peek", headers: user, query: [("count", "10")])
            .json[member: "entries"]?.arrayValue?.compactMap { $0[member: "key"]?.stringValue }.sorted()
        if let removed {
            #expect(tables.json[member: "deleted"]?.arrayValue?.compactMap(\.stringValue) == removed, "\(tables.text)")
            #expect(cache.json[member: "removed"] == .integer(Int64(removed.count)), "\(cache.text)")
            let kept = Self.names.filter { !removed.contains($0) }
            #expect(leftTables == kept)
            #expect(leftKeys == kept)
        } else {
            #expect(tables.status == 400 && tables.code == "invalid_regex", "\(tables.text)")
            #expect(cache.status == 400 && cache.code == "invalid_regex", "\(cache.text)")
            #expect(leftTables == Self.names)
            #expect(leftKeys == Self.names)
        }
    }

    /// The example body a refusal shows is one a caller can send as it is.
    @Test func theRefusalsExampleBodyIsValidJSON() throws {
        let reply = fixture.send("POST", "/modules/ChatMessages/tables/delete", #"{"pattern": 1}"#, headers: [(Gateway.userHeader, "u")])
        #expect(reply.code == "invalid_body")
        let detail = try #require(reply.json[member: "detail"]?.stringValue)
        let example = try #require(detail.firstIndex(of: "{").map { detail[$0...] })
        #expect(try Value(parsingJSON: Array(example.utf8))[member: "pattern"] == "chat_\\d+")
    }
}
