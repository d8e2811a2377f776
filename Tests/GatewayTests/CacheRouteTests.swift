import DAOKeyValue
import DAOValue
import Gateway
import Testing

/// `/lru/{memory,disk}/{space}/{cache}/…`, `/storage/purge`, `/storage/reset`
/// and `/storages`, in-process with a clock the tests move.
@Suite struct CacheRouteTests {
    let fixture: GatewayFixture

    init() throws { fixture = try GatewayFixture() }

    @discardableResult
    func send(_ method: String, _ path: String, _ body: String? = nil, user: String? = "ann",
              query: [(String, String)] = [], admin: Bool = false) -> GatewayFixture.Reply {
        var headers = user.map { [(Gateway.userHeader, $0)] } ?? []
        if admin { headers.append(("Authorization", "Bearer " + GatewayFixture.adminToken)) }
        return fixture.send(method, path, body, headers: headers, query: query)
    }

    /// The keys from head (most recent) to tail.
    func order(_ cache: String) -> [String] {
        let peek = send("GET", "/lru/memory/user/\(cache)/peek", query: [("count", "100")])
        return peek.json[member: "entries"]?.arrayValue?.compactMap { $0[member: "key"]?.stringValue } ?? []
    }

    @Test func aMemoryCacheEvictsTheLeastRecentlyUsed() {
        let created = send("PUT", "/lru/memory/user/feed", #"{"capacity": 3}"#)
        #expect(created.text == #"{"name":"feed","capacity":3,"count":0,"created":true,"evicted":0}"#)
        for key in ["a", "b", "c"] { #expect(send("PUT", "/lru/memory/user/feed/entries/\(key)", #"{"value": "\#(key)!"}"#).status == 200) }
        #expect(send("GET", "/lru/memory/user/feed/entries/a").text == #"{"value":"a!"}"#)
        #expect(order("feed") == ["a", "c", "b"])
        // exists and peek leave the order alone.
        #expect(send("GET", "/lru/memory/user/feed/exists/b").text == #"{"exists":true}"#)
        #expect(order("feed") == ["a", "c", "b"])
        #expect(send("PUT", "/lru/memory/user/feed/entries/d", #"{"value": {"n": 4}}"#).text == #"{"ok":true,"evicted":1}"#)
        #expect(send("GET", "/lru/memory/user/feed/entries/b").code == "key_not_found")
        #expect(send("GET", "/lru/memory/user/feed/peek", query: [("count", "2"), ("from", "tail")]).json[member: "entries"]?
            .arrayValue?.compactMap { $0[member: "key"]?.stringValue } == ["c", "a"])
        #expect(send("GET", "/lru/memory/user/feed").text == #"{"name":"feed","capacity":3,"count":3}"#)
        #expect(send("PUT", "/lru/memory/user/feed", #"{"capacity": 1.0}"#).json[member: "evicted"] == 2)
        #expect(order("feed") == ["d"])
        #expect(send("GET", "/lru/memory/user").text == #"{"caches":[{"name":"feed","capacity":1,"count":1}]}"#)
        #expect(send("DELETE", "/lru/memory/user/feed").text == #"{"deleted":true}"#)
        #expect(send("GET", "/lru/memory/user/feed/entries/d").code == "unknown_cache")
    }

    @Test(arguments: ["memory", "disk"])
    func expiredEntriesAreNeverReturned(kind: String) {
        #expect(send("PUT", "/lru/\(kind)/common/c", #"{"capacity": 10}"#, user: nil).status == 200)
        let soon = fixture.clock.now + 10
        #expect(send("PUT", "/lru/\(kind)/common/c/entries/k", #"{"value": 1, "expire": \#(soon)}"#, user: nil).status == 200)
        #expect(send("PUT", "/lru/\(kind)/common/c/entries/past", #"{"value": 1, "expire": 5}"#, user: nil).status == 200)
        #expect(send("GET", "/lru/\(kind)/common/c/entries/k", user: nil).text == #"{"value":1}"#)
        #expect(send("GET", "/lru/\(kind)/common/c/entries/past", user: nil).code == "key_not_found")
        fixture.clock.now += 11
        #expect(send("GET", "/lru/\(kind)/common/c/entries/k", user: nil).code == "key_not_found")
        #expect(send("GET", "/lru/\(kind)/common/c", user: nil).json[member: "count"] == 0)
    }

    @Test(arguments: ["memory", "disk"])
    func batchesAndRemovals(kind: String) {
        #expect(send("PUT", "/lru/\(kind)/user/c", #"{"capacity": 100}"#).status == 200)
        let added = send("POST", "/lru/\(kind)/user/c/entries", #"{"entries": {"news/1": 1, "news/2": 2, "mail/1": 3, "mail/2.tmp": 4, "x": 5}}"#)
        #expect(added.text == #"{"added":5,"evicted":0}"#)
        #expect(send("POST", "/lru/\(kind)/user/c/remove", #"{"keys": ["x", "nope"]}"#).text == #"{"removed":1}"#)
        if kind == "memory" {
            #expect(send("POST", "/lru/memory/user/c/remove", #"{"suffix": ".tmp"}"#).text == #"{"removed":1}"#)
            #expect(send("POST", "/lru/memory/user/c/remove", #"{"regex": "news/[0-9]+"}"#).text == #"{"removed":2}"#)
            #expect(send("POST", "/lru/memory/user/c/remove", #"{"prefix": "mail/"}"#).text == #"{"removed":1}"#)
        } else {
            #expect(send("POST", "/lru/disk/user/c/remove", #"{"like": "news/%"}"#).text == #"{"removed":2}"#)
            #expect(send("POST", "/lru/disk/user/c/remove", #"{"like": "mail/2!.tmp", "escape": "!"}"#).text == #"{"removed":1}"#)
        }
        #expect(send("PUT", "/lru/\(kind)/user/c/entries/y", #"{"value": [1]}"#).status == 200)
        #expect(send("DELETE", "/lru/\(kind)/user/c/entries/y").text == #"{"deleted":true}"#)
        #expect(send("POST", "/lru/\(kind)/user/c/remove", #"{"all": true}"#).json[member: "removed"] == (kind == "memory" ? 0 : 1))
        #expect(send("DELETE", "/lru/\(kind)/user/c/entries").text == #"{"removed":0}"#)
    }

    @Test func aDiskCacheKeepsItsCapacityWithSlackAndItsEncryption() {
        #expect(send("PUT", "/lru/disk/user/d", #"{"capacity": 10, "encrypted": true}"#).json[member: "encrypted"] == true)
        for index in 0..<12 { send("PUT", "/lru/disk/user/d/entries/k\(index)", #"{"value": \#(index)}"#) }
        // Capacity 10 with a slack of 1: the 12th entry evicts down to 10.
        #expect(send("GET", "/lru/disk/user/d").json[member: "count"] == 10)
        #expect(send("GET", "/lru/disk/user/d/entries/k0").code == "key_not_found")
        #expect(send("GET", "/lru/disk/user/d/entries/k11").text == #"{"value":11}"#)
        let conflict = send("PUT", "/lru/disk/user/d", #"{"capacity": 10, "encrypted": false}"#)
        #expect(conflict.status == 409 && conflict.code == "cache_conflict")
        #expect(send("GET", "/lru/disk/user").json[member: "caches"]?.arrayValue?.count == 1)
        #expect(send("GET", "/lru/disk/common").text == #"{"caches":[]}"#)
    }

    @Test(arguments: [
        ("PUT", "/lru/memory/user/c", #"{"capacity": 0}"#, 400, "invalid_value"),
        ("PUT", "/lru/memory/user/c", #"{"capacity": 1000000000}"#, 400, "limit_exceeded"),
        ("PUT", "/lru/memory/user/c", #"{"capacity": "10"}"#, 400, "invalid_value"),
        ("PUT", "/lru/memory/user/c", #"{"capacity": 10, "encrypted": true}"#, 400, "invalid_body"),
        ("PUT", "/lru/memory/user/1c", #"{"capacity": 10}"#, 400, "invalid_name"),
        ("PUT", "/lru/disk/user/caches", #"{"capacity": 10}"#, 400, "invalid_name"),
        ("PUT", "/lru/memory/user/ok/entries/k", #"{"value": 1, "expire": -1}"#, 400, "invalid_value"),
        ("PUT", "/lru/memory/user/ok/entries/k", #"{"expire": 1}"#, 400, "invalid_body"),
        ("PUT", "/lru/memory/user/ok/entries/" + String(repeating: "k", count: 1025), #"{"value": 1}"#, 400, "invalid_name"),
        ("POST", "/lru/memory/user/ok/remove", #"{"regex": "("}"#, 400, "invalid_regex"),
        ("POST", "/lru/memory/user/ok/remove", #"{"prefix": "a", "suffix": "b"}"#, 400, "invalid_body"),
        ("POST", "/lru/memory/user/ok/remove", #"{"like": "a%"}"#, 400, "invalid_body"),
        ("POST", "/lru/disk/user/ok/remove", #"{"regex": "a"}"#, 400, "invalid_body"),
        ("POST", "/lru/memory/user/ok/remove", #"{"all": false}"#, 400, "invalid_value"),
        ("POST", "/lru/memory/user/ok/entries", #"{"entries": [1]}"#, 400, "invalid_body"),
        ("GET", "/lru/memory/user/missing/entries/k", nil, 404, "unknown_cache"),
        ("GET", "/lru/disk/user/missing/entries/k", nil, 404, "unknown_cache"),
        ("GET", "/lru/memory/user/ok/peeking", nil, 404, "not_found"),
        ("GET", "/lru/disk/user/ok/peek", nil, 404, "not_found"),
        ("GET", "/lru/nowhere/user/ok", nil, 404, "not_found"),
        ("POST", "/lru/memory/user/ok", "{}", 405, "method_not_allowed"),
    ])
    func badRequestsAreClearAndChangeNothing(method: String, path: String, body: String?, status: Int, code: String) {
        #expect(send("PUT", "/lru/memory/user/ok", #"{"capacity": 5}"#).status == 200)
        #expect(send("PUT", "/lru/memory/user/ok/entries/kept", #"{"value": 1}"#).status == 200)
        #expect(send("PUT", "/lru/disk/user/ok", #"{"capacity": 5}"#).status == 200)
        let reply = send(method, path, body)
        #expect(reply.status == status, "\(reply.text)")
        #expect(reply.code == code, "\(reply.text)")
        #expect(order("ok") == ["kept"])
    }

    @Test func spacesAreApart() {
        #expect(send("PUT", "/lru/memory/user/c", #"{"capacity": 5}"#).status == 200)
        #expect(send("GET", "/lru/memory/user/c", user: "bob").code == "unknown_cache")
        #expect(send("GET", "/lru/memory/common/c", user: nil).code == "unknown_cache")
        #expect(send("GET", "/lru/memory/user/c", user: nil).code == "user_required")
        #expect(fixture.send("GET", "/lru/memory/user/c", headers: [(Gateway.userHeader, "ann"), (Gateway.storageHeader, "Other")])
            .code == "unknown_cache")
    }

    @Test func onlyAnEntryLargerThanAUsersShareIs507AndChangesNothing() throws {
        let small = try GatewayFixture(memoryCaches: MemoryCaches.Limits(budgetBytes: 40_000, userBudgetBytes: 8_000))
        #expect(small.send("PUT", "/lru/memory/common/c", #"{"capacity": 1000}"#).status == 200)
        #expect(small.send("PUT", "/lru/memory/common/c/entries/a", #"{"value": "small"}"#).status == 200)
        let full = small.send("PUT", "/lru/memory/common/c/entries/b", #"{"value": "\#(String(repeating: "x", count: 8_000))"}"#)
        #expect(full.status == 507 && full.code == "memory_full")
        #expect(small.send("GET", "/lru/memory/common/c").json[member: "count"] == 1)
        // Smaller entries past the share evict the oldest instead.
        for number in 0..<40 {
            let stored = small.send("PUT", "/lru/memory/common/c/entries/k\(number)", #"{"value": "\#(String(repeating: "y", count: 500))"}"#)
            #expect(stored.status == 200, "\(stored.text)")
        }
        #expect(small.send("GET", "/lru/memory/common/c/entries/a").code == "key_not_found")
        #expect(small.send("GET", "/lru/memory/common/c/entries/k39").status == 200)
    }

    // MARK: Cleanup

    @Test func aPurgeOfTheCallersOwnDatabaseNeedsNoTokenAndSaysWhatItFreed() {
        send("PUT", "/kv/user/biz/keep", #"{"value": "kept"}"#)
        send("PUT", "/kv/user/biz/go", #"{"value": "abc", "purgeable": true}"#)
        send("PUT", "/lru/disk/user/d", #"{"capacity": 10}"#)
        send("PUT", "/lru/memory/user/m", #"{"capacity": 10}"#)
        let soon = fixture.clock.now + 5
        send("PUT", "/lru/disk/user/d/entries/old", #"{"value": 1, "expire": \#(soon)}"#)
        send("PUT", "/lru/memory/user/m/entries/old", #"{"value": 1, "expire": \#(soon)}"#)
        send("PUT", "/lru/memory/user/m/entries/new", #"{"value": 1}"#)
        send("PUT", "/kv/user/biz/other", #"{"value": "x", "purgeable": true}"#, user: "bob")
        fixture.clock.now += 10
        let purged = send("POST", "/storage/purge")
        #expect(purged.status == 200, "\(purged.text)")
        #expect(purged.json[member: "databases"] == 1)
        #expect(purged.json[member: "kv"]?[member: "entries"] == 1)
        #expect(purged.json[member: "kv"]?[member: "bytes"] == .integer(Int64(("biz" + "go").utf8.count + 3)))
        #expect(purged.json[member: "diskCaches"]?[member: "entries"] == 1)
        #expect(purged.json[member: "memoryCaches"]?[member: "entries"] == 1)
        #expect(send("GET", "/kv/user/biz/keep").status == 200)
        #expect(send("GET", "/kv/user/biz/go").status == 404)
        #expect(send("GET", "/kv/user/biz/other", user: "bob").status == 200)
        // The whole storage is the admin's.
        #expect(send("POST", "/storage/purge", user: nil).status == 401)
        let all = send("POST", "/storage/purge", user: nil, admin: true)
        #expect(all.json[member: "kv"]?[member: "entries"] == 1)
        #expect(send("GET", "/kv/user/biz/other", user: "bob").status == 404)
    }

    @Test func aResetEmptiesTheScopeAndOnlyIt() {
        send("PUT", "/kv/user/biz/k", #"{"value": 1}"#)
        send("PUT", "/kv/user/biz/k", #"{"value": 2}"#, user: "bob")
        send("PUT", "/lru/memory/user/m", #"{"capacity": 10}"#)
        send("PUT", "/lru/disk/user/d", #"{"capacity": 10}"#)
        let reset = send("POST", "/storage/reset")
        #expect(reset.json[member: "databases"] == 1 && reset.json[member: "memoryCaches"] == 1, "\(reset.text)")
        #expect(send("GET", "/kv/user/biz/k").status == 404)
        #expect(send("GET", "/lru/memory/user/m").code == "unknown_cache")
        #expect(send("GET", "/lru/disk/user/d").code == "unknown_cache")
        #expect(send("GET", "/kv/user/biz/k", user: "bob").json[member: "value"] == 2)
        #expect(send("POST", "/storage/reset", user: nil).code == "admin_required")
        #expect(send("POST", "/storage/reset", user: nil, admin: true).status == 200)
        #expect(send("GET", "/kv/user/biz/k", user: "bob").status == 404)
        #expect(send("GET", "/storage/reset").status == 405)
    }

    @Test func theStoragesAreListedForTheAdmin() {
        fixture.send("PUT", "/kv/common/biz/k", #"{"value": 1}"#, headers: [(Gateway.storageHeader, "Contact")])
        #expect(send("GET", "/storages").status == 401)
        #expect(send("GET", "/storages", admin: true).text == #"{"storages":["Contact"],"currentVersion":"current-version"}"#)
    }
}
