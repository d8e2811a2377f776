import DAOValue
import Foundation
import Gateway
import JWT
import Synchronization
import Testing

/// `POST /admin/reload` (and SIGHUP, which calls the same `ServerState.reload`):
/// the module folder loaded again with the checks of a start; a set without
/// problems replaces the one in use whole, a set with one changes nothing.
@Suite struct ModuleReloadTests {
    let folder: URL
    let fixture: GatewayFixture
    let admin = [("Authorization", "Bearer \(GatewayFixture.adminToken)")]

    static func notes(version: String, upgrade: String = "", methods: String = "") -> String {
        """
        <module name="Notes" initializer="create" tableName="notes" version="\(version)">
          <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
          \(upgrade)
          <insert id="add" arguments="$body:string">insert into ${T} (body) values (#{body})</insert>
          <select id="count" result="int">select count(*) from ${T}</select>
          \(methods)
        </module>
        """
    }

    static let tagged = notes(
        version: "1.1", upgrade: #"<upgrade toVersion="1.1"><step>alter table ${T} add column tag text</step></upgrade>"#,
        methods: #"<select id="tags" result="[string]">select coalesce(tag, 'none') from ${T}</select>"#)

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.notes(version: "1.0").write(to: folder.appendingPathComponent("Notes.xml"), atomically: true, encoding: .utf8)
        fixture = try GatewayFixture(modulesDirectory: folder.path, reloadable: true)
    }

    func write(_ xml: String, file: String = "Notes.xml") throws {
        try xml.write(to: folder.appendingPathComponent(file), atomically: true, encoding: .utf8)
    }

    func reload() -> GatewayFixture.Reply { fixture.send("POST", "/admin/reload", headers: admin) }

    @Test func aGoodSetReplacesTheOldOneWithItsDescriptionAndUpgrades() throws {
        #expect(fixture.post("/dao/Notes/add", #"["one"]"#).status == 200)
        #expect(!fixture.send("GET", "/openapi.json").text.contains("/dao/Notes/tags"))
        try write(Self.tagged)
        let reply = reload()
        #expect(reply.status == 200)
        #expect(reply.json[member: "outcome"] == "applied")
        #expect(reply.json[member: "changed"] == [["module": "Notes", "fromVersion": "1.0", "toVersion": "1.1"]])
        #expect(reply.json[member: "modules"] == 1)
        // The new method, on the table its upgrade changed at this first call.
        let tags = fixture.post("/dao/Notes/tags")
        #expect(tags.status == 200)
        #expect(tags.text == #"{"result":["none"]}"#)
        #expect(fixture.send("GET", "/openapi.json").text.contains("/dao/Notes/tags"))
        #expect(fixture.send("GET", "/modules/Notes").json[member: "version"] == "1.1")
        let events = fixture.send("GET", "/events", headers: admin).json
        #expect(events[member: "counts"]?[member: "should_upgrade"] == 1)
        #expect(events[member: "reloads"]?.arrayValue?.first?[member: "outcome"] == "applied")
        #expect(events[member: "reloads"]?.arrayValue?.first?[member: "reason"] == "POST /admin/reload")
        // A module removed from the folder is gone: its calls are 404s. Its table stays its own: a module of
        // another name with the same tableName (a rename) is refused it, 409 table_owned.
        try FileManager.default.removeItem(at: folder.appendingPathComponent("Notes.xml"))
        try write(Self.notes(version: "1.0").replacingOccurrences(of: "Notes", with: "Other")
            .replacingOccurrences(of: #"tableName="notes""#, with: #"tableName="other_notes""#), file: "Other.xml")
        try write(Self.notes(version: "1.0").replacingOccurrences(of: "Notes", with: "Renamed"), file: "Renamed.xml")
        let swapped = reload()
        #expect(swapped.json[member: "added"] == ["Other", "Renamed"], "\(swapped.text)")
        #expect(swapped.json[member: "removed"] == ["Notes"])
        #expect(fixture.post("/dao/Notes/count").code == "unknown_module")
        #expect(fixture.post("/dao/Other/count").status == 200)
        let renamed = fixture.post("/dao/Renamed/count")
        #expect(renamed.status == 409)
        #expect(renamed.code == "table_owned")
        #expect(renamed.json[member: "owner"] == "Notes")
    }

    @Test func aBrokenSetIsRefusedAndTheOldOneStays() throws {
        #expect(fixture.post("/dao/Notes/add", #"["one"]"#).status == 200)
        let before = fixture.send("GET", "/openapi.json").text
        try write(Self.notes(version: "1.1", methods: #"<select id="broken">selct * from ${T}</select>"#))
        let reply = reload()
        #expect(reply.status == 409)
        #expect(reply.code == "modules_refused")
        #expect(reply.header("Content-Type") == "application/problem+json")
        let problem = try #require(reply.json[member: "problems"]?.arrayValue?.first)
        #expect(problem[member: "file"]?.stringValue?.hasSuffix("Notes.xml") == true)
        #expect(problem[member: "line"] == 6)
        #expect(problem[member: "message"]?.stringValue?.contains("syntax error") == true)
        // Nothing changed: the old methods run, the description is the old one.
        #expect(fixture.post("/dao/Notes/count").text == #"{"result":1}"#)
        #expect(fixture.send("GET", "/openapi.json").text == before)
        #expect(fixture.send("GET", "/modules/Notes").json[member: "version"] == "1.0")
        // /events: refused; the problems themselves for the admin, a count for anyone else.
        let adminEvents = fixture.send("GET", "/events", headers: admin).json[member: "reloads"]?.arrayValue?.first
        #expect(adminEvents?[member: "outcome"] == "refused")
        #expect(adminEvents?[member: "problems"]?.arrayValue?.first?[member: "line"] == 6)
        let anyonesReport = fixture.send("GET", "/events").json[member: "reloads"]?.arrayValue?.first
        #expect(anyonesReport?[member: "problemCount"] == 1)
        #expect(anyonesReport?[member: "problems"] == nil)
        // An XML error too.
        try write("<module name=\"Notes\"><select id=\"x\">")
        #expect(reload().code == "modules_refused")
        #expect(fixture.post("/dao/Notes/count").status == 200)
    }

    @Test func reloadingIsAnAdminsAndTakesNoBody() throws {
        #expect(fixture.send("POST", "/admin/reload").code == "admin_required")
        #expect(fixture.send("POST", "/admin/reload", headers: [("Authorization", "Bearer wrong-token-0123456789")]).code == "admin_required")
        let get = fixture.send("GET", "/admin/reload", headers: admin)
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")
        #expect(fixture.send("POST", "/admin/reload", "{}", headers: admin).code == "invalid_body")
        let fixed = try GatewayFixture()
        let unavailable = fixed.send("POST", "/admin/reload", headers: admin)
        #expect(unavailable.status == 409)
        #expect(unavailable.code == "reload_unavailable")
    }

    /// In jwt mode the route takes a token with the admin claim (or the static admin token), as the other admin routes.
    @Test func inJwtModeReloadingTakesTheAdminClaim() throws {
        let verifier = try JWTVerifier(settings: JWTSettings(secretFile: AuthTests.keys.secretFile, adminClaim: ("role", "admin")))
        let jwt = try GatewayFixture(modulesDirectory: folder.path, authentication: .jwt(verifier), reloadable: true)
        func reload(_ token: String?) -> GatewayFixture.Reply { AuthTests.call(jwt, token, path: "/admin/reload", method: "POST") }
        #expect(reload(nil).code == "token_missing")
        #expect(reload(AuthTests.token(.hs256)).code == "admin_claim_required")
        #expect(reload(AuthTests.token(.hs256, AuthTests.claims("root", ["role": "admin"]))).status == 200)
        #expect(reload(GatewayFixture.adminToken).status == 200)
    }

    /// Four threads call all along while the folder is reloaded twenty times,
    /// a broken set among them: every call answers 200.
    @Test func callsDuringReloadsAllSucceed() throws {
        final class Tally: Sendable {
            let statuses = Mutex<[Int: Int]>([:])
            let stopped = Atomic<Bool>(false)
        }
        let tally = Tally()
        let group = DispatchGroup()
        for index in 0..<4 {
            DispatchQueue.global().async(group: group) { [fixture] in
                while !tally.stopped.load(ordering: .relaxed) {
                    let add = fixture.post("/dao/Notes/add", #"["t\#(index)"]"#).status
                    let count = fixture.post("/dao/Notes/count").status
                    tally.statuses.withLock { $0[add, default: 0] += 1; $0[count, default: 0] += 1 }
                }
            }
        }
        // The reloads start once the callers run, and go on until they have called beside them: on a loaded
        // machine the callers' threads may start late.
        func calls() -> Int { tally.statuses.withLock { $0.values.reduce(0, +) } }
        let deadline = Date().addingTimeInterval(30)
        while calls() < 8, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let before = calls()
        var round = 0
        while round < 20 || (calls() - before < 80 && Date() < deadline) {
            defer { round += 1 }
            switch round % 4 {
            case 0: try write(Self.tagged)
            case 1: try write(Self.notes(version: "1.1", methods: #"<select id="broken">selct 1</select>"#))
            default: try write(Self.notes(version: "1.1"))
            }
            #expect(reload().status == (round % 4 == 1 ? 409 : 200))
            Thread.sleep(forTimeInterval: 0.01)
        }
        tally.stopped.store(true, ordering: .relaxed)
        group.wait()
        let seen = tally.statuses.withLock { $0 }
        #expect(Set(seen.keys) == [200], "\(seen)")
        #expect(seen[200, default: 0] > 40)
    }
}
