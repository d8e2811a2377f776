import Foundation
import Testing

/// Per-user database size caps, the usage operators see, and where `/metrics` is served, against a real `daogate serve`.
@Suite struct LimitsLiveTests {
    static let adminToken = "limits-admin-token-0123456789"
    static let admin = "Authorization: Bearer \(adminToken)"
    static let cap = 128 * 1024

    /// A per-user module beside the examples, whose rows the test can count.
    static func modulesWithNotes() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-limits-modules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
        <module name="Notes" initializer="createTable" tableName="notes" version="1.0" userDependent="true">
          <update id="createTable">create table if not exists ${T} (id integer primary key, body text)</update>
          <insert id="add" arguments="body">insert into ${T} (body) values (#{body})</insert>
          <select id="count" result="int">select count(*) from ${T}</select>
        </module>
        """.write(to: folder.appendingPathComponent("Notes.xml"), atomically: true, encoding: .utf8)
        return folder
    }

    @Test func aFullUserDatabaseAnswers507AndKeepsNothingOfTheRefusedWrite() throws {
        let modules = try Self.modulesWithNotes()
        defer { try? FileManager.default.removeItem(at: modules) }
        let server = try LiveServer(arguments: ["--max-database-size", "\(Self.cap)"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken], modules: modules.path)
        let full = "X-User-Id: full"
        let chunk = String(repeating: "n", count: 6000)
        func count() throws -> Int? { try server.curl("/dao/Notes/count", method: "POST", body: "[]", headers: [full]).json?["result"] as? Int }

        // Fill the user's database with notes until the cap refuses one.
        var refused: LiveServer.Reply?
        for _ in 0..<(2 * Self.cap / chunk.count) {
            let reply = try server.curl("/dao/Notes/add", method: "POST", body: #"["\#(chunk)"]"#, headers: [full])
            if reply.status != 200 { refused = reply; break }
        }
        let refusal = try #require(refused)
        #expect(refusal.status == 507, "\(refusal.body)")
        #expect(refusal.code == "storage_full")
        #expect(refusal.headers["content-type"] == "application/problem+json")

        // A transaction whose first call fits and whose second does not leaves nothing behind.
        let before = try #require(try count())
        let transaction = try server.curl("/transaction", method: "POST", body: """
            {"calls": [{"module": "Notes", "method": "add", "arguments": ["small"]},
                       {"module": "Notes", "method": "add", "arguments": ["\(chunk + chunk)"]}]}
            """, headers: [full])
        #expect(transaction.status == 507, "\(transaction.body)")
        #expect(transaction.code == "storage_full")
        #expect(try count() == before)

        // The key-value store and a disk cache live in the same file: refused too, and nothing kept.
        let value = try server.curl("/kv/user/biz/big", method: "PUT", body: #"{"value": "\#(chunk + chunk)", "type": "string"}"#, headers: [full])
        #expect(value.status == 507, "\(value.body)")
        #expect(value.code == "storage_full")
        #expect(try server.curl("/kv/user/biz/big", headers: [full]).status == 404)
        let cache = try server.curl("/lru/disk/user/big", method: "PUT", body: #"{"capacity": 10}"#, headers: [full])
        if cache.status == 200 {
            let entry = try server.curl("/lru/disk/user/big/entries/k", method: "PUT", body: #"{"value": "\#(chunk + chunk)"}"#, headers: [full])
            #expect(entry.status == 507, "\(entry.body)")
            #expect(try server.curl("/lru/disk/user/big/entries/k", headers: [full]).status == 404)
        } else {
            #expect(cache.status == 507, "\(cache.body)")
        }
        // Reads still work, and another user is not affected.
        #expect(try count() == before)
        let other = try server.curl("/dao/Notes/add", method: "POST", body: #"["\#(chunk)"]"#, headers: ["X-User-Id: other"])
        #expect(other.status == 200, "\(other.body)")
        // The common space has a cap of its own, by default as large (--max-common-size): what the users
        // stored does not count against it, and beyond it is 507 too.
        var commonRefusal: LiveServer.Reply?
        for index in 0..<(2 * Self.cap / chunk.count) {
            let put = try server.curl("/kv/common/biz/k\(index)", method: "PUT", body: #"{"value": "\#(chunk)", "type": "string"}"#)
            if put.status != 200 {
                #expect(index >= Self.cap / 2 / chunk.count, "\(put.body)")
                commonRefusal = put
                break
            }
        }
        #expect(commonRefusal?.status == 507)
        #expect(commonRefusal?.code == "storage_full")

        // Operators see each user's usage; callers do not.
        #expect(try server.curl("/storage/usage").status == 401)
        #expect(try server.curl("/storage/usage", headers: [full]).status == 401)
        let usage = try server.curl("/storage/usage", headers: [Self.admin])
        #expect(usage.status == 200, "\(usage.body)")
        #expect(usage.json?["maximumDatabaseBytes"] as? Int == Self.cap)
        let databases = try #require(usage.json?["databases"] as? [[String: Any]])
        #expect(databases.map { $0["user"] as? String } == ["full", "other"])
        let fullBytes = try #require(databases.first?["bytes"] as? Int)
        #expect(fullBytes >= Self.cap / 2, "\(usage.body)")
        let one = try server.curl("/storage/usage", headers: [Self.admin, "X-User-Id: other"])
        #expect((one.json?["databases"] as? [[String: Any]])?.map { $0["user"] as? String } == ["other"])

        let metrics = try server.curl("/metrics", headers: [Self.admin])
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("daogate_user_databases 2\n"), "\(metrics.body)")
        #expect(metrics.body.contains(#"daogate_responses_total{status="507"}"#))
        #expect(metrics.body.contains("daogate_user_database_largest_bytes \(fullBytes)\n"), "\(metrics.body)")
    }

    @Test func metricsAreForTheAdminTokenOnTheAPIPort() throws {
        let server = try LiveServer(environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken])
        let anonymous = try server.curl("/metrics")
        #expect(anonymous.status == 401)
        #expect(anonymous.code == "admin_required")
        #expect(try server.curl("/metrics", headers: ["X-User-Id: u", "Authorization: Bearer wrong-token-0123456789"]).status == 401)
        #expect(try server.curl("/metrics", headers: [Self.admin]).status == 200)

        // Without an admin token configured, no one has it.
        let withoutToken = try LiveServer()
        #expect(try withoutToken.curl("/metrics").status == 401)
        #expect(try withoutToken.curl("/metrics", headers: [Self.admin]).code == "admin_disabled")
    }

    @Test func aMetricsAddressServesThemAndTheAPIPortDoesNot() throws {
        let server = try LiveServer(arguments: ["--metrics-listen", "127.0.0.1:0"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken])
        let match = try #require(server.log.firstMatch(of: /daogate metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/))
        let metricsBase = String(match.1)
        let scraped = try run("/usr/bin/curl", ["-s", "-w", "\n%{http_code}", metricsBase + "/metrics"])
        #expect(scraped.hasSuffix("\n200"), "\(scraped)")
        #expect(scraped.contains("daogate_open_databases"))
        #expect(try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", metricsBase + "/healthz"]) == "404")
        #expect(try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", metricsBase + "/metrics"]) == "405")
        #expect(try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", metricsBase + "/storage/usage"]) == "404")
        // Not on the API's port, not even to the admin.
        #expect(try server.curl("/metrics", headers: [Self.admin]).status == 404)
    }

    /// Beyond loopback, the metrics address is as closed as the API's: it
    /// refuses to start with no admin configured, and asks for the admin's token.
    @Test func aMetricsAddressBeyondLoopbackIsForTheAdminOnly() throws {
        let (status, message) = try AuthLiveTests.refusedStart(["--metrics-listen", "0.0.0.0:0"])
        #expect(status != 0)
        #expect(message.contains("--admin-token-file") && message.contains("--jwt-admin-claim"), "\(message)")

        let server = try LiveServer(arguments: ["--metrics-listen", "0.0.0.0:0"],
                                    environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken])
        let match = try #require(server.log.firstMatch(of: /daogate metrics on http:\/\/[^:]+:(\d+)\/metrics/))
        let metrics = "http://127.0.0.1:\(match.1)/metrics"
        #expect(try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", metrics]) == "401")
        #expect(try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer wrong-token-0123456789", metrics]) == "401")
        let scraped = try run("/usr/bin/curl", ["-s", "-w", "\n%{http_code}", "-H", Self.admin, metrics])
        #expect(scraped.hasSuffix("\n200") && scraped.contains("daogate_open_databases"), "\(scraped)")
    }
}
