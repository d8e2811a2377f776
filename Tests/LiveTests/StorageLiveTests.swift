import Foundation
import Testing

/// The key-value store, the caches and cleanup against a real `daogate serve`, with curl.
@Suite struct StorageLiveTests {
    /// A deterministic generator for the random operations.
    struct SplitMix64 {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    static let values: [(type: String, sent: String, read: String)] = [
        ("integer", "-42", "-42"),
        ("longLong", "9223372036854775807", "9223372036854775807"),
        ("bool", "true", "true"),
        ("double", "0.1", "0.1"),
        ("string", #""héllo 世界 \"quoted\"""#, #""héllo 世界 \"quoted\"""#),
        ("json", #"{"a":[1,null,{"b":"c"}]}"#, #"{"a":[1,null,{"b":"c"}]}"#),
        ("binary", #""AAEC/w==""#, #""AAEC/w==""#),
    ]

    @Test func everyKVTypeRoundTripsPlainAndEncryptedAndSurvivesARestart() throws {
        var server = try LiveServer()
        for (index, value) in Self.values.enumerated() {
            for encrypted in [false, true] {
                let path = "/kv/user/biz/\(value.type)-\(encrypted)-\(index)"
                let stored = try server.curl(path, method: "PUT", body: #"{"value": \#(value.sent), "type": "\#(value.type)", "encrypted": \#(encrypted)}"#,
                                             headers: ["X-User-Id: ann@example.com"])
                #expect(stored.status == 200, "\(stored.body)")
                let read = try server.curl(path, headers: ["X-User-Id: ann@example.com"])
                #expect(read.body.hasPrefix(#"{"type":"\#(value.type)","value":\#(value.read),"encrypted":\#(encrypted),"#), "\(read.body)")
            }
        }
        server = try server.restarted()
        for (index, value) in Self.values.enumerated() {
            let read = try server.curl("/kv/user/biz/\(value.type)-true-\(index)", headers: ["X-User-Id: ann@example.com"])
            #expect(read.json?["type"] as? String == value.type)
            #expect(read.body.contains(#""value":\#(value.read)"#))
        }
        #expect(try server.curl("/kv/user/biz/none?default=7", headers: ["X-User-Id: ann@example.com"]).body
            == #"{"type":"integer","value":7,"default":true}"#)
    }

    @Test func aMemoryCacheOrdersAndEvictsAsAReferenceLRU() throws {
        let server = try LiveServer()
        let capacity = 5
        #expect(try server.curl("/lru/memory/user/lru", method: "PUT", body: #"{"capacity": \#(capacity)}"#, headers: ["X-User-Id: u"]).status == 200)
        var model: [(key: String, value: Int)] = []  // most recent first
        var random = SplitMix64(state: 20_261_121)
        for step in 0..<240 {
            let key = "k\(random.next(9))"
            switch random.next(10) {
            case 0...3:
                let value = random.next(1000)
                #expect(try server.curl("/lru/memory/user/lru/entries/\(key)", method: "PUT", body: #"{"value": \#(value)}"#,
                                        headers: ["X-User-Id: u"]).status == 200)
                model.removeAll { $0.key == key }
                model.insert((key, value), at: 0)
                if model.count > capacity { model.removeLast() }
            case 4...6:
                let reply = try server.curl("/lru/memory/user/lru/entries/\(key)", headers: ["X-User-Id: u"])
                if let index = model.firstIndex(where: { $0.key == key }) {
                    #expect(reply.body == #"{"value":\#(model[index].value)}"#, "step \(step)")
                    model.insert(model.remove(at: index), at: 0)
                } else {
                    #expect(reply.status == 404, "step \(step): \(reply.body)")
                }
            case 7:
                let reply = try server.curl("/lru/memory/user/lru/exists/\(key)", headers: ["X-User-Id: u"])
                #expect(reply.body == #"{"exists":\#(model.contains { $0.key == key })}"#, "step \(step)")
            case 8:
                let reply = try server.curl("/lru/memory/user/lru/entries/\(key)", method: "DELETE", headers: ["X-User-Id: u"])
                #expect(reply.body == #"{"deleted":\#(model.contains { $0.key == key })}"#, "step \(step)")
                model.removeAll { $0.key == key }
            default:
                let from = random.next(2) == 0 ? "head" : "tail"
                let peek = try server.curl("/lru/memory/user/lru/peek?count=10&from=\(from)", headers: ["X-User-Id: u"])
                let keys = (peek.json?["entries"] as? [[String: Any]])?.compactMap { $0["key"] as? String }
                let expected = model.map(\.key)
                #expect(keys == (from == "head" ? expected : expected.reversed()), "step \(step)")
            }
        }
    }

    @Test(arguments: ["memory", "disk"])
    func expiredEntriesAreGone(kind: String) throws {
        let server = try LiveServer()
        #expect(try server.curl("/lru/\(kind)/common/c", method: "PUT", body: #"{"capacity": 10}"#).status == 200)
        let soon = Date().timeIntervalSince1970 + 1
        #expect(try server.curl("/lru/\(kind)/common/c/entries/soon", method: "PUT", body: #"{"value": "x", "expire": \#(soon)}"#).status == 200)
        #expect(try server.curl("/lru/\(kind)/common/c/entries/kept", method: "PUT", body: #"{"value": "y"}"#).status == 200)
        #expect(try server.curl("/lru/\(kind)/common/c/entries/soon").body == #"{"value":"x"}"#)
        Thread.sleep(forTimeInterval: 1.3)
        #expect(try server.curl("/lru/\(kind)/common/c/entries/soon").status == 404)
        #expect(try server.curl("/lru/\(kind)/common/c/entries/kept").status == 200)
    }

    @Test func diskCachesSurviveARestartAndEncryptWhatTheyKeep() throws {
        var server = try LiveServer()
        let secret = "disk-cache-secret-9137"
        let kvSecret = "kv-secret-5521"
        #expect(try server.curl("/lru/disk/user/d", method: "PUT", body: #"{"capacity": 3, "encrypted": true}"#, headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/lru/disk/user/plain", method: "PUT", body: #"{"capacity": 3}"#, headers: ["X-User-Id: ann"]).status == 200)
        for key in ["a", "b", "c"] {
            #expect(try server.curl("/lru/disk/user/d/entries/\(key)", method: "PUT", body: #"{"value": "\#(secret)-\#(key)"}"#, headers: ["X-User-Id: ann"]).status == 200)
        }
        #expect(try server.curl("/lru/disk/user/plain/entries/p", method: "PUT", body: #"{"value": "plain-text-7788"}"#, headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/kv/user/biz/s", method: "PUT", body: #"{"value": "\#(kvSecret)", "encrypted": true}"#, headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/lru/disk/user/d/entries/a", headers: ["X-User-Id: ann"]).status == 200)  // a is the most recent now
        server = try server.restarted()
        let file = server.data.appendingPathComponent("users/p-ann.db").path
        let bytes = [file, file + "-wal"].flatMap { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: $0)))) ?? [] }
        #expect(bytes.count > 0)
        #expect(bytes.firstRange(of: Array(secret.utf8)) == nil)
        #expect(bytes.firstRange(of: Array(kvSecret.utf8)) == nil)
        #expect(bytes.firstRange(of: Array("plain-text-7788".utf8)) != nil)
        // Recency survived the restart: once the slack (1) is spent, b and c, the least recently used, go.
        #expect(try server.curl("/lru/disk/user/d/entries/a", headers: ["X-User-Id: ann"]).body == #"{"value":"\#(secret)-a"}"#)
        #expect(try server.curl("/kv/user/biz/s", headers: ["X-User-Id: ann"]).json?["value"] as? String == kvSecret)
        for key in ["d", "e"] {
            #expect(try server.curl("/lru/disk/user/d/entries/\(key)", method: "PUT", body: #"{"value": 1}"#, headers: ["X-User-Id: ann"]).status == 200)
        }
        #expect(try server.curl("/lru/disk/user/d", headers: ["X-User-Id: ann"]).json?["count"] as? Int == 3)
        #expect(try server.curl("/lru/disk/user/d/entries/b", headers: ["X-User-Id: ann"]).status == 404)
        #expect(try server.curl("/lru/disk/user/d/entries/a", headers: ["X-User-Id: ann"]).status == 200)
    }

    @Test func aPurgeFreesPurgeableAndExpiredDataAndAResetEmptiesTheStorage() throws {
        let token = String(repeating: "t", count: 24)
        let server = try LiveServer(environment: ["DAOGATE_ADMIN_TOKEN": token])
        #expect(try server.curl("/kv/user/biz/go", method: "PUT", body: #"{"value": "abc", "purgeable": true}"#, headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/kv/user/biz/stay", method: "PUT", body: #"{"value": "abc"}"#, headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/lru/disk/user/d", method: "PUT", body: #"{"capacity": 5}"#, headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/lru/disk/user/d/entries/old", method: "PUT",
                                body: #"{"value": 1, "expire": \#(Date().timeIntervalSince1970 + 0.5)}"#, headers: ["X-User-Id: ann"]).status == 200)
        Thread.sleep(forTimeInterval: 0.8)
        let purged = try server.curl("/storage/purge", method: "POST", headers: ["X-User-Id: ann"])
        #expect(purged.status == 200)
        #expect((purged.json?["kv"] as? [String: Any])?["entries"] as? Int == 1)
        #expect((purged.json?["diskCaches"] as? [String: Any])?["entries"] as? Int == 1)
        #expect(try server.curl("/kv/user/biz/stay", headers: ["X-User-Id: ann"]).status == 200)
        #expect(try server.curl("/storage/reset", method: "POST").status == 401)
        #expect(try server.curl("/storage/reset", method: "POST", headers: ["Authorization: Bearer \(token)"]).status == 200)
        #expect(try server.curl("/kv/user/biz/stay", headers: ["X-User-Id: ann"]).status == 404)
    }

    @Test func theCurrentVersionStorageIsResetByANewDeploymentVersion() throws {
        var server = try LiveServer(arguments: ["--deployment-version", "1"])
        let headers = ["X-User-Id: ann", "X-Storage: current-version"]
        #expect(try server.curl("/kv/user/biz/k", method: "PUT", body: #"{"value": 1}"#, headers: headers).status == 200)
        #expect(try server.curl("/kv/user/biz/k", method: "PUT", body: #"{"value": 1}"#, headers: ["X-User-Id: ann"]).status == 200)
        server = try server.restarted(arguments: ["--deployment-version", "1"])
        #expect(try server.curl("/kv/user/biz/k", headers: headers).status == 200)
        server = try server.restarted(arguments: ["--deployment-version", "2"])
        #expect(server.log.contains("the current-version storage was reset"))
        #expect(try server.curl("/kv/user/biz/k", headers: headers).status == 404)
        #expect(try server.curl("/kv/user/biz/k", headers: ["X-User-Id: ann"]).status == 200)
    }
}
