import DAOValue
import Gateway
import Testing

/// `/kv/{space}/{business}/{key}`, in-process.
@Suite struct KVRouteTests {
    let fixture: GatewayFixture

    init() throws { fixture = try GatewayFixture() }

    func put(_ path: String, _ body: String, user: String? = "ann") -> GatewayFixture.Reply {
        fixture.send("PUT", path, body, headers: user.map { [(Gateway.userHeader, $0)] } ?? [])
    }

    func get(_ path: String, user: String? = "ann", query: [(String, String)] = []) -> GatewayFixture.Reply {
        fixture.send("GET", path, headers: user.map { [(Gateway.userHeader, $0)] } ?? [], query: query)
    }

    @Test(arguments: [
        (#"{"value": 42}"#, #""type":"integer","value":42"#),
        (#"{"value": 42, "type": "longLong"}"#, #""type":"longLong","value":42"#),
        (#"{"value": "9223372036854775807", "type": "longLong"}"#, #""type":"longLong","value":9223372036854775807"#),
        (#"{"value": true}"#, #""type":"bool","value":true"#),
        (#"{"value": 2.5}"#, #""type":"double","value":2.5"#),
        (#"{"value": "text"}"#, #""type":"string","value":"text""#),
        (#"{"value": {"a": [1, null]}}"#, #""type":"json","value":{"a":[1,null]}"#),
        (#"{"value": "AAEC", "type": "binary"}"#, #""type":"binary","value":"AAEC""#),
        (#"{"value": {"$base64": "AAEC"}}"#, #""type":"binary","value":"AAEC""#),
        (#"{"value": "secret", "encrypted": true, "purgeable": true}"#, #""type":"string","value":"secret","encrypted":true,"purgeable":true"#),
    ])
    func aPutValueReadsBackWithItsType(body: String, expected: String) {
        let stored = put("/kv/user/biz/key", body)
        #expect(stored.status == 200, "\(stored.text)")
        #expect(stored.text.contains(expected), "\(stored.text)")
        let read = get("/kv/user/biz/key")
        #expect(read.status == 200)
        #expect(read.text.hasPrefix("{" + expected), "\(read.text)")
        let listed = get("/kv/user/biz").json[member: "keys"]?.arrayValue?.first
        #expect(listed?[member: "updated"] == .double(fixture.clock.now), "\(read.text)")
    }

    @Test func anAbsentKeyIs404OrItsDefault() {
        let missing = get("/kv/common/biz/none", user: nil)
        #expect(missing.status == 404 && missing.code == "key_not_found")
        #expect(get("/kv/common/biz/none", user: nil, query: [("default", "5")]).text == #"{"type":"integer","value":5,"default":true}"#)
        #expect(get("/kv/common/biz/none", user: nil, query: [("default", "5"), ("type", "double")]).text
            == #"{"type":"double","value":5.0,"default":true}"#)
        #expect(get("/kv/common/biz/none", user: nil, query: [("default", "null"), ("type", "string")]).text
            == #"{"type":"string","value":null,"default":true}"#)
        #expect(get("/kv/common/biz/none", user: nil, query: [("default", "yes")]).code == "invalid_value")
        #expect(get("/kv/common/biz/none", user: nil, query: [("default", "1"), ("type", "bool")]).code == "invalid_value")
        #expect(get("/kv/common/biz/none", user: nil, query: [("type", "nope")]).code == "invalid_value")
    }

    @Test func aTypeAskedForMustBeTheStoredOne() {
        #expect(put("/kv/user/biz/n", #"{"value": 1}"#).status == 200)
        #expect(get("/kv/user/biz/n", query: [("type", "longLong")]).status == 200)
        let mismatch = get("/kv/user/biz/n", query: [("type", "string"), ("default", #""x""#)])
        #expect(mismatch.status == 409 && mismatch.code == "type_mismatch")
    }

    @Test func spacesAreTheCommonDatabaseAndTheCallersOwn() {
        #expect(put("/kv/common/biz/k", #"{"value": "shared"}"#, user: nil).status == 200)
        #expect(put("/kv/user/biz/k", #"{"value": "ann's"}"#).status == 200)
        #expect(get("/kv/common/biz/k").json[member: "value"] == "shared")
        #expect(get("/kv/user/biz/k").json[member: "value"] == "ann's")
        #expect(get("/kv/user/biz/k", user: "bob").code == "key_not_found")
        #expect(get("/kv/user/biz/k", user: nil).code == "user_required")
        #expect(get("/kv/user/biz/k", user: "bad id").code == "invalid_user")
        #expect(get("/kv/elsewhere/biz/k").status == 404)
        #expect(fixture.send("GET", "/kv/common/biz/k", headers: [(Gateway.storageHeader, "../x")]).code == "invalid_storage")
        #expect(fixture.send("GET", "/kv/common/biz/k", headers: [(Gateway.storageHeader, "Contact")]).code == "key_not_found")
    }

    @Test func keysHoldSlashesAndBusinessesListAndDelete() {
        for key in ["a/b/c", "a", "b"] { #expect(put("/kv/user/biz/\(key)", #"{"value": 1, "purgeable": true}"#).status == 200) }
        #expect(get("/kv/user/biz/a/b/c").json[member: "value"] == 1)
        let keys = get("/kv/user/biz")
        #expect(keys.json[member: "keys"]?.arrayValue?.compactMap { $0[member: "key"]?.stringValue } == ["a", "a/b/c", "b"])
        #expect(get("/kv/user/biz", query: [("prefix", "a/")]).json[member: "keys"]?.arrayValue?.count == 1)
        #expect(fixture.send("DELETE", "/kv/user/biz/a", headers: [(Gateway.userHeader, "ann")]).text == #"{"deleted":true}"#)
        #expect(fixture.send("DELETE", "/kv/user/biz/a", headers: [(Gateway.userHeader, "ann")]).text == #"{"deleted":false}"#)
        #expect(fixture.send("DELETE", "/kv/user/biz", headers: [(Gateway.userHeader, "ann")]).text == #"{"deleted":2}"#)
        #expect(get("/kv/user/biz").text == #"{"keys":[]}"#)
    }

    @Test(arguments: [
        ("[1]", "invalid_body"), (#"{"type": "string"}"#, "invalid_body"), (#"{"value": 1, "ttl": 5}"#, "invalid_body"),
        (#"{"value": 1, "type": "int"}"#, "invalid_value"), (#"{"value": 1, "type": 3}"#, "invalid_value"),
        (#"{"value": 1, "encrypted": "yes"}"#, "invalid_value"), (#"{"value": "x", "type": "integer"}"#, "invalid_value"),
        (#"{"value": null}"#, "invalid_value"), ("{", "invalid_json"),
    ])
    func badBodiesAre400AndChangeNothing(body: String, code: String) {
        #expect(put("/kv/user/biz/k", #"{"value": "before"}"#).status == 200)
        let reply = put("/kv/user/biz/k", body)
        #expect(reply.status == 400)
        #expect(reply.code == code, "\(reply.text)")
        #expect(get("/kv/user/biz/k").json[member: "value"] == "before")
    }

    @Test func pathsSplitOnEverySlashWhateverFollowsIt() {
        // "/" then an emoji modifier or a combining mark is one Character in Swift.
        for (business, key) in [("🏻", "k"), ("b", "\u{301}x"), ("é", "🏻/\u{301}")] {
            #expect(put("/kv/user/\(business)/\(key)", #"{"value": 1}"#).status == 200, "\(business)/\(key)")
            #expect(get("/kv/user/\(business)").json[member: "keys"]?.arrayValue?.first?[member: "key"] == .string(key))
        }
    }

    @Test func badNamesAndMethods() {
        #expect(put("/kv/user/biz/", #"{"value": 1}"#).code == "invalid_name")
        #expect(put("/kv/user/" + String(repeating: "b", count: 129) + "/k", #"{"value": 1}"#).code == "invalid_name")
        #expect(put("/kv/user/biz/" + String(repeating: "k", count: 1025), #"{"value": 1}"#).code == "invalid_name")
        #expect(put("/kv/user/biz/tab%09here", #"{"value": 1}"#).code == "invalid_path")
        #expect(get("/kv/user").status == 404)
        let wrong = fixture.send("POST", "/kv/user/biz/k", "{}", headers: [(Gateway.userHeader, "ann")])
        #expect(wrong.status == 405 && wrong.header("Allow") == "GET, HEAD, PUT, DELETE")
    }
}
