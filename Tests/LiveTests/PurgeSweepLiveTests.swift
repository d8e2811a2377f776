import Foundation
import Testing

/// The background sweep (`serve --purge-every`, `--purge-older-than`) and the
/// reset of every storage of a user, against a real server.
@Suite(.serialized) struct PurgeSweepLiveTests {
    static let token = String(repeating: "s", count: 24)
    static var admin: String { "Authorization: Bearer \(token)" }

    /// The value of a metric line `name value` in `GET /metrics`.
    static func metric(_ server: LiveServer, _ name: String) throws -> Double? {
        let text = try server.curl("/metrics", headers: [admin]).body
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    /// Waits up to `seconds` for `condition`.
    static func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return try condition()
    }

    @Test func expiredAndOldPurgeableEntriesVanishByThemselvesAndYoungOrKeptOnesStay() throws {
        let server = try LiveServer(arguments: ["--purge-every", "1s", "--purge-older-than", "6s"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.token])
        let ann = "X-User-Id: ann"
        let started = Date()
        #expect(try server.curl("/kv/user/biz/old", method: "PUT", body: #"{"value": "a", "purgeable": true}"#, headers: [ann]).status == 200)
        #expect(try server.curl("/kv/user/biz/kept", method: "PUT", body: #"{"value": "b"}"#, headers: [ann]).status == 200)
        // A custom storage's user file and the common file are swept too.
        #expect(try server.curl("/kv/user/biz/old", method: "PUT", body: #"{"value": "c", "purgeable": true}"#,
                                headers: [ann, "X-Storage: extra"]).status == 200)
        #expect(try server.curl("/kv/common/biz/old", method: "PUT", body: #"{"value": "d", "purgeable": true}"#, headers: [Self.admin]).status == 200)
        // d: entries never age out (maxAge 0); short: after a second unused; plain: the server's age, 6 s.
        #expect(try server.curl("/lru/disk/user/d", method: "PUT", body: #"{"capacity": 10, "maxAge": 0}"#, headers: [ann]).status == 200)
        #expect(try server.curl("/lru/disk/user/short", method: "PUT", body: #"{"capacity": 10, "maxAge": 1}"#, headers: [ann]).json?["maxAge"] as? Double == 1)
        #expect(try server.curl("/lru/disk/user/plain", method: "PUT", body: #"{"capacity": 10}"#, headers: [ann]).status == 200)
        #expect(try server.curl("/lru/disk/user/short/entries/x", method: "PUT", body: #"{"value": 3}"#, headers: [ann]).status == 200)
        #expect(try server.curl("/lru/disk/user/plain/entries/y", method: "PUT", body: #"{"value": 4}"#, headers: [ann]).status == 200)
        #expect(try server.curl("/lru/disk/user/d/entries/soon", method: "PUT",
                                body: #"{"value": 1, "expire": \#(Date().timeIntervalSince1970 + 0.5)}"#, headers: [ann]).status == 200)
        #expect(try server.curl("/lru/disk/user/d/entries/never", method: "PUT", body: #"{"value": 2}"#, headers: [ann]).status == 200)

        // The expired disk entry goes without being read (the count says so); the purgeable entries are too young.
        #expect(try Self.eventually(3) {
            try server.curl("/lru/disk/user/d", headers: [ann]).json?["count"] as? Int == 1
                && server.curl("/lru/disk/user/short", headers: [ann]).json?["count"] as? Int == 0
        })
        #expect(Date().timeIntervalSince(started) < 5.5)
        #expect(try server.curl("/lru/disk/user/plain", headers: [ann]).json?["count"] as? Int == 1)
        #expect(try server.curl("/kv/user/biz/old", headers: [ann]).status == 200)
        #expect(try server.curl("/kv/user/biz/old", headers: [ann, "X-Storage: extra"]).status == 200)

        // Past the age, the purgeable entries go from every database; the others stay.
        #expect(try Self.eventually(8) {
            try server.curl("/kv/user/biz/old", headers: [ann]).status == 404
                && server.curl("/kv/user/biz/old", headers: [ann, "X-Storage: extra"]).status == 404
                && server.curl("/kv/common/biz/old", headers: [Self.admin]).status == 404
        })
        #expect(Date().timeIntervalSince(started) >= 6)
        #expect(try Self.eventually(3) { try server.curl("/lru/disk/user/plain", headers: [ann]).json?["count"] as? Int == 0 })
        #expect(try server.curl("/kv/user/biz/kept", headers: [ann]).status == 200)
        #expect(try server.curl("/lru/disk/user/d/entries/never", headers: [ann]).status == 200)

        #expect(try Self.metric(server, "daogate_purge_passes_total") ?? 0 >= 3)
        #expect(try Self.metric(server, #"daogate_purge_entries_total{layer="kv"}"#) == 3)
        #expect(try Self.metric(server, #"daogate_purge_entries_total{layer="disk_cache"}"#) == 3)
        #expect(try Self.metric(server, "daogate_purge_files_total") ?? 0 >= 3)
        let events = try #require(try server.curl("/events", headers: [Self.admin]).json)
        let sweeps = try #require(events["sweeps"] as? [String: Any])
        let recent = try #require(sweeps["recent"] as? [[String: Any]])
        #expect(recent.reduce(0) { $0 + ($1["kvEntries"] as? Int ?? 0) } == 3)
        // A user's view of the events has no sweep in it: it walks everyone's files.
        #expect(try server.curl("/events", headers: [ann]).json?["sweeps"] == nil)
    }

    @Test func aDiskCacheBoundedByBytesKeepsItsMostRecentEntriesWithinTheBound() throws {
        let server = try LiveServer(arguments: ["--purge-every", "0"])
        let ann = "X-User-Id: ann"
        // The largest bound a body can give is kept and read back as stored (through a double it would trap).
        for _ in 0..<2 {
            #expect(try server.curl("/lru/disk/user/huge", method: "PUT", body: #"{"capacity": 1, "maxBytes": 9223372036854775807}"#,
                                    headers: [ann]).status == 200)
        }
        #expect(try server.curl("/lru/disk/user/huge", headers: [ann]).json?["maxBytes"] as? Int == Int.max)
        let created = try server.curl("/lru/disk/user/b", method: "PUT", body: #"{"capacity": 100, "maxBytes": 1000}"#, headers: [ann])
        #expect(created.json?["maxBytes"] as? Int == 1000)
        // Each entry: a 2-byte key and 202 bytes of JSON text.
        let value = String(repeating: "v", count: 200)
        for n in 10..<30 {
            #expect(try server.curl("/lru/disk/user/b/entries/\(n)", method: "PUT", body: #"{"value": "\#(value)"}"#, headers: [ann]).status == 200)
            let count = try #require(try server.curl("/lru/disk/user/b", headers: [ann]).json?["count"] as? Int)
            #expect(count <= 4 && count * 204 <= 1000)
        }
        #expect(try server.curl("/lru/disk/user/b", headers: [ann]).json?["count"] as? Int == 4)
        for n in 26..<30 { #expect(try server.curl("/lru/disk/user/b/entries/\(n)", headers: [ann]).status == 200) }
        #expect(try server.curl("/lru/disk/user/b/entries/25", headers: [ann]).status == 404)
        // Read, 26 is the most recent: a smaller bound keeps it and evicts the others at once.
        #expect(try server.curl("/lru/disk/user/b/entries/26", headers: [ann]).status == 200)
        let shrunk = try server.curl("/lru/disk/user/b", method: "PUT", body: #"{"capacity": 100, "maxBytes": 300}"#, headers: [ann])
        #expect(shrunk.json?["evicted"] as? Int == 3)
        #expect(try server.curl("/lru/disk/user/b/entries/26", headers: [ann]).status == 200)
        // An entry larger than the whole bound is refused, and changes nothing.
        let big = String(repeating: "w", count: 400)
        let refused = try server.curl("/lru/disk/user/b/entries/big", method: "PUT", body: #"{"value": "\#(big)"}"#, headers: [ann])
        #expect(refused.status == 400)
        #expect(refused.code == "limit_exceeded")
        #expect(try server.curl("/lru/disk/user/b", headers: [ann]).json?["count"] as? Int == 1)
        // Bad policies are refused.
        for body in [#"{"capacity": 5, "maxBytes": 0}"#, #"{"capacity": 5, "maxBytes": "1k"}"#, #"{"capacity": 5, "maxAge": -1}"#,
                     #"{"capacity": 5, "maxAge": true}"#] {
            #expect(try server.curl("/lru/disk/user/b", method: "PUT", body: body, headers: [ann]).code == "invalid_value", "\(body)")
        }
        #expect(try server.curl("/lru/memory/user/m", method: "PUT", body: #"{"capacity": 5, "maxBytes": 10}"#, headers: [ann]).code == "invalid_body")
    }

    @Test func theSweepGivesSpaceBackAndSaysSo() throws {
        let server = try LiveServer(arguments: ["--purge-every", "1s", "--purge-older-than", "2s"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.token])
        let user = "X-User-Id: big"
        // About 2.4 MB of purgeable values: past the thresholds (a quarter of the pages free, and 1 MiB).
        let value = String(repeating: "x", count: 100_000)
        for key in (1...25).map({ "k\($0)" }) {
            #expect(try server.curl("/kv/user/biz/\(key)", method: "PUT", body: #"{"value": "\#(value)", "purgeable": true}"#,
                                    headers: [user]).status == 200)
        }
        #expect(try server.curl("/kv/user/biz/small", method: "PUT", body: #"{"value": 1}"#, headers: [user]).status == 200)
        let usage = { () throws -> Int in
            let databases = try server.curl("/storage/usage", headers: [Self.admin, user]).json?["databases"] as? [[String: Any]]
            return databases?.first?["bytes"] as? Int ?? -1
        }
        let before = try usage()
        // Entries written early may go (and be vacuumed) before the last ones are old enough; free pages below
        // the thresholds stay free until more join them.
        #expect(try Self.eventually(20) {
            try server.curl("/kv/user/biz/k25", headers: [user]).status == 404
                && Self.metric(server, "daogate_purge_vacuums_total") ?? 0 >= 1
        })
        let after = try usage()
        #expect(after < 1_300_000)
        #expect(after < before)
        let returned = try #require(try Self.metric(server, "daogate_purge_bytes_returned_total"))
        #expect(returned >= 1_048_576)
        #expect(returned <= Double(before))
        #expect(Double(before - after) >= returned - 4096)
        #expect(try server.curl("/kv/user/biz/small", headers: [user]).status == 200)
        let last = try #require(try server.curl("/events", headers: [Self.admin]).json?["sweeps"] as? [String: Any])
        let recent = try #require(last["recent"] as? [[String: Any]])
        #expect(recent.reduce(0) { $0 + ($1["bytesReturned"] as? Int ?? 0) } == Int(returned))
    }

    @Test func aResetOfEveryStorageTakesAllOfAUsersFilesAndNoOneElses() throws {
        let server = try LiveServer(arguments: ["--purge-every", "0"], environment: ["DAOGATE_ADMIN_TOKEN": Self.token])
        for storage in [nil, "extra", "more"] {
            for user in ["ann", "bob"] {
                let headers = ["X-User-Id: \(user)"] + (storage.map { ["X-Storage: \($0)"] } ?? [])
                #expect(try server.curl("/kv/user/biz/k", method: "PUT", body: #"{"value": 1}"#, headers: headers).status == 200)
            }
        }
        #expect(try server.curl("/lru/memory/user/m", method: "PUT", body: #"{"capacity": 5}"#,
                                headers: ["X-User-Id: ann", "X-Storage: extra"]).status == 200)
        let json = ["Content-Type: application/json"]
        // Refused, changing nothing: no user, a body that is not {"all": bool}.
        #expect(try server.curl("/storage/reset", method: "POST", body: #"{"all": true}"#, headers: json + [Self.admin]).code == "user_required")
        #expect(try server.curl("/storage/reset", method: "POST", body: #"{"all": null}"#, headers: json + ["X-User-Id: ann"]).code == "invalid_body")
        #expect(try server.curl("/storage/reset", method: "POST", body: #"{"all": 1}"#, headers: json + ["X-User-Id: ann"]).code == "invalid_body")
        #expect(try server.curl("/storage/reset", method: "POST", body: #"{"every": true}"#, headers: json + ["X-User-Id: ann"]).code == "invalid_body")
        #expect(try server.curl("/kv/user/biz/k", headers: ["X-User-Id: ann", "X-Storage: more"]).status == 200)

        let reset = try server.curl("/storage/reset", method: "POST", body: #"{"all": true}"#, headers: json + ["X-User-Id: ann"])
        #expect(reset.status == 200)
        #expect(reset.json?["databases"] as? Int == 3)
        #expect(reset.json?["memoryCaches"] as? Int == 1)
        for storage in [nil, "extra", "more"] {
            let extra = storage.map { ["X-Storage: \($0)"] } ?? []
            #expect(try server.curl("/kv/user/biz/k", headers: ["X-User-Id: ann"] + extra).status == 404)
            #expect(try server.curl("/kv/user/biz/k", headers: ["X-User-Id: bob"] + extra).status == 200)
        }
        // Nothing is left aside: no file of ann's, in any folder.
        let files = FileManager.default.enumerator(atPath: server.data.path)?.compactMap { $0 as? String } ?? []
        #expect(files.filter { $0.contains("ann") }.isEmpty, "\(files)")
        #expect(files.filter { $0.hasSuffix(".reset") }.isEmpty)
        // An empty object is no body: the one storage named (here the default) is reset.
        #expect(try server.curl("/storage/reset", method: "POST", body: "{}", headers: json + ["X-User-Id: bob"]).status == 200)
        // An empty X-Storage names no storage, as on every route; with all, a storage named changes nothing.
        #expect(try server.curl("/storage/reset", method: "POST", body: #"{"all": true}"#,
                                headers: json + ["X-User-Id: bob", "X-Storage;"]).status == 200)
        #expect(try server.curl("/kv/user/biz/k", method: "PUT", body: #"{"value": 1}"#, headers: json + ["X-User-Id: bob", "X-Storage: more"]).status == 200)
        let named = try server.curl("/storage/reset", method: "POST", body: #"{"all": true}"#,
                                    headers: json + ["X-User-Id: bob", "X-Storage: extra"])
        #expect(named.status == 200 && named.json?["databases"] as? Int == 1, "\(named.body)")
        #expect(try server.curl("/kv/user/biz/k", headers: ["X-User-Id: bob", "X-Storage: more"]).status == 404)
    }

    @Test(arguments: [["--purge-every", "5x"], ["--purge-every", "1.5h"], ["--purge-older-than=-1d"],
                      ["--purge-older-than", "h"], ["--purge-every", "99999999d"]])
    func aDurationThatIsNotOneIsRefusedAtStart(_ arguments: [String]) throws {
        let (status, output) = try LiveServer.refusal(arguments)
        #expect(status != 0)
        #expect(output.contains("takes a duration"), "\(output)")
    }
}
