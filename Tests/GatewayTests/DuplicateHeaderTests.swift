import Gateway
import Testing

/// Every header the gateway reads takes one value: sent twice (even twice the same), it is a 400
/// `duplicate_header` and the call changes nothing, where before the first copy won silently (and a proxy in
/// front could have checked the other).
@Suite("A single-valued header sent twice")
struct DuplicateHeaderTests {
    /// A request that one copy of the header lets through, the header and the two values sent.
    static let cases: [(header: String, values: (String, String), method: String, path: String, body: String?)] = [
        (Gateway.userHeader, ("ann", "bob"), "PUT", "/kv/user/b/k", #"{"value": 1}"#),
        (Gateway.userHeader, ("ann", "ann"), "PUT", "/kv/user/b/k", #"{"value": 1}"#),
        (Gateway.storageHeader, ("s1", "s2"), "PUT", "/kv/common/b/k", #"{"value": 1}"#),
        (Gateway.tableHeader, ("chat_1", "chat_2"), "POST", "/dao/ChatMessages/send", #"{"sender": "a", "body": "b"}"#),
        (Gateway.int64Header, ("string", "number"), "PUT", "/kv/common/b/k", #"{"value": 1}"#),
        ("Content-Type", ("application/json", "application/json"), "PUT", "/kv/common/b/k", #"{"value": 1}"#),
        ("Authorization", ("Bearer \(GatewayFixture.adminToken)", "Bearer x"), "GET", "/storages", nil),
        ("Authorization", ("Bearer \(GatewayFixture.adminToken)", "Bearer x"), "DELETE", "/modules/Demo/table", nil),
    ]

    @Test(arguments: cases.indices)
    func aHeaderSentTwiceIsRefusedAndChangesNothing(index: Int) throws {
        let (header, values, method, path, body) = Self.cases[index]
        let fixture = try GatewayFixture()
        // X-Table-Name only where the module is a template: Demo has a table of its own and refuses another.
        var headers = [(Gateway.userHeader, "ann"), (Gateway.tableHeader, "chat_1")]
            .filter { $0.0 != header && ($0.0 != Gateway.tableHeader || path.contains("ChatMessages")) }
        if header == "Content-Type" { headers.append(("Content-Type", values.0)) }
        let once = headers + (header == "Content-Type" ? [] : [(header, values.0)])
        let twice = headers + [(header, values.1)] + (header == "Content-Type" ? [] : [(header, values.0)])
        try #require(fixture.send("POST", "/dao/Demo/insertItem", #"["kept"]"#).status == 200)
        func state() -> [String] {
            ["\(fixture.send("GET", "/kv/user/b/k", headers: once).status)", fixture.send("POST", "/dao/Demo/getItem", #"[1]"#).text,
             "\(fixture.send("GET", "/kv/common/b/k").status)"]
        }
        let before = state()

        let refused = fixture.send(method, path, body, headers: twice, contentType: header == "Content-Type" ? nil : "application/json")
        #expect(refused.status == 400)
        #expect(refused.code == "duplicate_header")
        #expect(refused.text.contains(header))
        #expect(state() == before)

        // The same request with one copy goes through.
        let accepted = fixture.send(method, path, body, headers: once, contentType: header == "Content-Type" ? nil : "application/json")
        #expect(accepted.status == 200, "\(accepted.text)")
    }
}
