import Foundation
import Testing

/// What one user may store, against a real `daogate serve`: `--max-database-size` bounds all their storages
/// together (`X-Storage` does not multiply it), `--max-storages-per-user` bounds how many storages they have,
/// and `--max-common-size` bounds the common space's files, all storages' together.
@Suite struct QuotaLiveTests {
    static let adminToken = "quota-admin-token-0123456789"
    static let admin = "Authorization: Bearer \(adminToken)"
    static let cap = 128 * 1024
    static let chunk = String(repeating: "n", count: 6000)

    /// Adds notes of 6,000 bytes until one is refused (or `limit` went in); the notes stored and the refusal.
    static func fill(_ server: LiveServer, headers: [String], limit: Int = 40) throws -> (stored: Int, refusal: LiveServer.Reply?) {
        for stored in 0..<limit {
            let reply = try server.curl("/dao/Notes/add", method: "POST", body: #"["\#(chunk)"]"#, headers: headers)
            if reply.status != 200 { return (stored, reply) }
        }
        return (limit, nil)
    }

    @Test func theSizeCapBoundsAllOfAUsersStoragesTogether() throws {
        let modules = try LimitsLiveTests.modulesWithNotes()
        defer { try? FileManager.default.removeItem(at: modules) }
        let server = try LiveServer(arguments: ["--max-database-size", "\(Self.cap)"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken], modules: modules.path)
        let user = "X-User-Id: hoarder"
        let first = try Self.fill(server, headers: [user], limit: 10)
        #expect(first.stored == 10 && first.refusal == nil, "\(first.refusal?.body ?? "")")
        var stored = first.stored
        var refusals: [LiveServer.Reply] = []
        for storage in ["s1", "s2", "s3", "s4", "s5"] {
            let filled = try Self.fill(server, headers: [user, "X-Storage: \(storage)"])
            stored += filled.stored
            refusals += filled.refusal.map { [$0] } ?? []
        }
        // Every storage was refused in the end, with 507 storage_full, and all of them hold no more than the cap.
        #expect(refusals.count == 5)
        for refusal in refusals {
            #expect(refusal.status == 507, "\(refusal.body)")
            #expect(refusal.code == "storage_full")
        }
        #expect(stored * Self.chunk.count <= Self.cap, "\(stored) notes of \(Self.chunk.count) bytes went in")
        let usage = try server.curl("/storage/usage", headers: [Self.admin, user])
        let total = try #require(usage.json?["totalBytes"] as? Int)
        #expect(total <= Self.cap, "\(usage.body)")
        #expect(total >= Self.cap / 2, "\(usage.body)")
        // The admin sees the limits.
        #expect(usage.json?["maximumDatabaseBytes"] as? Int == Self.cap)
        #expect(usage.json?["maximumCommonBytes"] as? Int == Self.cap)
        #expect(usage.json?["maximumStoragesPerUser"] as? Int == 16)

        // Another user has a cap of their own.
        #expect(try Self.fill(server, headers: ["X-User-Id: other", "X-Storage: s1"], limit: 3).stored == 3)

        // Space freed in one storage (the user resets their own s1, which took what the default one left) is
        // room in any other.
        let reset = try server.curl("/storage/reset", method: "POST", headers: [user, "X-Storage: s1"])
        #expect(reset.status == 200, "\(reset.body)")
        let again = try Self.fill(server, headers: [user], limit: 1)
        #expect(again.stored == 1, "\(again.refusal?.body ?? "")")
    }

    /// Writes from several threads to one user's storages at once stay within the cap together.
    @Test func concurrentWritesToSeveralStoragesStayWithinTheCap() throws {
        let modules = try LimitsLiveTests.modulesWithNotes()
        defer { try? FileManager.default.removeItem(at: modules) }
        let server = try LiveServer(arguments: ["--max-database-size", "\(Self.cap)", "--threads", "4"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken], modules: modules.path)
        let storages = ["a", "b", "c", "d"]
        let group = DispatchGroup()
        for storage in storages {
            group.enter()
            Thread {
                _ = try? Self.fill(server, headers: ["X-User-Id: racer", "X-Storage: \(storage)"])
                group.leave()
            }.start()
        }
        group.wait()
        let usage = try server.curl("/storage/usage", headers: [Self.admin, "X-User-Id: racer"])
        let total = try #require(usage.json?["totalBytes"] as? Int)
        #expect(total <= Self.cap, "\(usage.body)")
        #expect((usage.json?["databases"] as? [Any])?.count == storages.count)
    }

    @Test func theSeventeenthStorageOfAUserIsRefused() throws {
        let server = try LiveServer()
        let user = "X-User-Id: collector"
        func put(_ storage: String, user: String = user) throws -> LiveServer.Reply {
            try server.curl("/kv/user/b/k", method: "PUT", body: #"{"value": 1}"#, headers: [user, "X-Storage: \(storage)"])
        }
        for index in 1...16 {
            let reply = try put("st\(index)")
            #expect(reply.status == 200, "st\(index): \(reply.body)")
        }
        let refused = try put("st17")
        #expect(refused.status == 409, "\(refused.body)")
        #expect(refused.code == "too_many_storages")
        #expect(refused.json?["detail"] as? String ?? "" != "")
        // Nothing was made for it, and the storages the user has, the default one among them, still work.
        #expect(!FileManager.default.fileExists(atPath: server.data.appendingPathComponent("storages/st17/users/p-collector.db").path))
        #expect(try put("st16").status == 200)
        #expect(try server.curl("/kv/user/b/k", method: "PUT", body: #"{"value": 1}"#, headers: [user]).status == 200)
        // The bound is per user.
        #expect(try put("st17", user: "X-User-Id: someone-else").status == 200)
        // A storage the user resets is one fewer.
        #expect(try server.curl("/storage/reset", method: "POST", headers: [user, "X-Storage: st1"]).status == 200)
        #expect(try put("st17").status == 200)
        #expect(try put("st1").code == "too_many_storages")
    }

    @Test func theStorageBoundIsAnOptionAndAnEnvironmentVariable() throws {
        for server in [try LiveServer(arguments: ["--max-storages-per-user", "2"]),
                       try LiveServer(environment: ["DAOGATE_MAX_STORAGES_PER_USER": "2"])] {
            for storage in ["one", "two"] {
                #expect(try server.curl("/kv/user/b/k", method: "PUT", body: #"{"value": 1}"#,
                                        headers: ["X-User-Id: u", "X-Storage: \(storage)"]).status == 200)
            }
            #expect(try server.curl("/kv/user/b/k", method: "PUT", body: #"{"value": 1}"#,
                                    headers: ["X-User-Id: u", "X-Storage: three"]).code == "too_many_storages")
        }
        let refused = try LiveServer.refusal(["--max-storages-per-user", "0"])
        #expect(refused.status != 0)
    }

    @Test func theCommonSpaceIsCappedToo() throws {
        // By default at --max-database-size.
        let server = try LiveServer(arguments: ["--max-database-size", "\(Self.cap)"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken])
        func putCommon(_ server: LiveServer, _ index: Int, storage: String? = nil) throws -> LiveServer.Reply {
            try server.curl("/kv/common/biz/k\(index)", method: "PUT", body: #"{"value": "\#(Self.chunk)", "type": "string"}"#,
                            headers: storage.map { ["X-Storage: \($0)"] } ?? [])
        }
        var refusal: LiveServer.Reply?
        for index in 0..<40 {
            let reply = try putCommon(server, index)
            if reply.status != 200 { refusal = reply; break }
        }
        let full = try #require(refusal)
        #expect(full.status == 507, "\(full.body)")
        #expect(full.code == "storage_full")
        // Another storage's common space shares the cap: it is full too.
        #expect(try putCommon(server, 0, storage: "elsewhere").status == 507)
        // Users' spaces are apart.
        #expect(try server.curl("/kv/user/biz/k", method: "PUT", body: #"{"value": "\#(Self.chunk)", "type": "string"}"#,
                                headers: ["X-User-Id: u"]).status == 200)

        // --max-common-size sets it apart from the users' cap (and without one).
        let small = try LiveServer(arguments: ["--max-common-size", "\(64 * 1024)"])
        var stored = 0
        while stored < 40, try putCommon(small, stored).status == 200 { stored += 1 }
        #expect(stored > 0 && stored * Self.chunk.count <= 64 * 1024, "\(stored)")
        #expect(try putCommon(small, 99).code == "storage_full")
        let environment = try LiveServer(environment: ["DAOGATE_MAX_COMMON_SIZE": "\(64 * 1024)"])
        var count = 0
        while count < 40, try putCommon(environment, count).status == 200 { count += 1 }
        #expect(count == stored)
    }
}
