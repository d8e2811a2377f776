import Foundation
import Testing

/// A module reload in the middle of traffic, on a real `daogate serve`:
/// SIGHUP and `POST /admin/reload` while four keep-alive connections call
/// without pause. No request is lost and none answers other than 200; a
/// broken set is refused while the traffic goes on.
@Suite(.serialized) struct ModuleReloadLiveTests {
    static let token = "reload-admin-token-0123456789"

    static func notes(version: String, extra: String = "") -> String {
        """
        <module name="Notes" initializer="create" tableName="notes" version="\(version)">
          <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
          \(version == "1.0" ? "" : #"<upgrade toVersion="1.1"><step>alter table ${T} add column tag text</step></upgrade>"#)
          <insert id="add" arguments="$body:string">insert into ${T} (body) values (#{body})</insert>
          <select id="count" result="int">select count(*) from ${T}</select>
          \(extra)
        </module>
        """
    }

    /// Four threads, each on one keep-alive connection, calling for `seconds`;
    /// prints `{"statuses": {status: count}, "errors": n, "reconnects": n}`.
    static let loadLoop = #"""
    import http.client, json, sys, threading, time
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    statuses, errors, lock = {}, [], threading.Lock()
    def loop(n):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        end = time.time() + seconds
        while time.time() < end:
            for path, body in (("/dao/Notes/add", '["x%d"]' % n), ("/dao/Notes/count", None)):
                try:
                    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"} if body else {})
                    response = connection.getresponse()
                    response.read()
                    with lock: statuses[response.status] = statuses.get(response.status, 0) + 1
                except Exception as error:
                    with lock: errors.append(repr(error))
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    threads = [threading.Thread(target=loop, args=(n,)) for n in range(4)]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    print(json.dumps({"statuses": statuses, "errors": errors[:5], "errorCount": len(errors)}))
    """#

    @Test func reloadsDuringTrafficLoseNoRequest() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-reload-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ xml: String) throws {
            try xml.write(to: folder.appendingPathComponent("Notes.xml"), atomically: true, encoding: .utf8)
        }
        try write(Self.notes(version: "1.0"))
        let server = try LiveServer(environment: ["DAOGATE_ADMIN_TOKEN": Self.token], modules: folder.path)
        let admin = ["Authorization: Bearer \(Self.token)"]
        // The table is made at 1.0 before the reload, so the new set must upgrade it. (Made first by the 1.1 set,
        // as when the load started late on a loaded machine, it is its initializer's table, recorded as 1.1,
        // and this initializer, unlike a module's that follows the contract, has no `tag` column.)
        #expect(try server.curl("/dao/Notes/add", method: "POST", body: #"["before"]"#).status == 200)

        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        load.arguments = ["python3", "-c", Self.loadLoop, String(server.port), "4"]
        let output = Pipe()
        load.standardOutput = output
        try load.run()

        Thread.sleep(forTimeInterval: 0.7)
        // SIGHUP: a new version with a new method; its upgrade runs on the next call.
        try write(Self.notes(version: "1.1", extra: #"<select id="tags" result="[string]">select coalesce(tag, 'none') from ${T} limit 1</select>"#))
        kill(server.process.processIdentifier, SIGHUP)
        // SIGHUPs that arrive while a reload is still running wait for it: none ends the server.
        for _ in 0..<40 {
            Thread.sleep(forTimeInterval: 0.002)
            kill(server.process.processIdentifier, SIGHUP)
        }
        Thread.sleep(forTimeInterval: 0.7)
        #expect(server.process.isRunning)
        // A broken set: refused, with its problem, while the traffic goes on.
        try write(Self.notes(version: "1.2", extra: #"<select id="broken">selct 1</select>"#))
        let refused = try server.curl("/admin/reload", method: "POST", headers: admin)
        #expect(refused.status == 409)
        #expect(refused.code == "modules_refused")
        #expect(refused.body.contains("syntax error"))
        Thread.sleep(forTimeInterval: 0.5)
        // And a good one through the route.
        try write(Self.notes(version: "1.1", extra: #"<select id="tags" result="[string]">select coalesce(tag, 'none') from ${T} limit 1</select><select id="newest" result="string">select body from ${T} order by id desc limit 1</select>"#))
        let applied = try server.curl("/admin/reload", method: "POST", headers: admin)
        #expect(applied.status == 200)
        #expect(applied.json?["outcome"] as? String == "applied")

        let data = output.fileHandleForReading.readDataToEndOfFile()
        load.waitUntilExit()
        let summary = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        let statuses = try #require(summary["statuses"] as? [String: Int])
        #expect(summary["errorCount"] as? Int == 0, "\(summary)")
        #expect(Set(statuses.keys) == ["200"], "\(summary)")
        #expect(statuses["200", default: 0] > 100, "\(summary)")

        // The SIGHUP reload took effect (its upgrade ran), and the description follows the set in use.
        let tags = try server.curl("/dao/Notes/tags", method: "POST")
        #expect(tags.body == #"{"result":["none"]}"#, "\(tags.status) \(tags.body)\n\(server.log.split(separator: "\n").filter { !$0.contains("daogate.access") }.joined(separator: "\n"))")
        let description = try server.curl("/openapi.json").body
        #expect(description.contains("/dao/Notes/newest"))
        #expect(!description.contains("/dao/Notes/broken"))
        let events = try server.curl("/events", headers: admin).json?["reloads"] as? [[String: Any]]
        // The two POSTs, newest first, and the SIGHUPs, the oldest applied. A SIGHUP still pending when the broken
        // set was written (it waits for the reload under way, long on a loaded machine) reads that set and is
        // refused like the POST: what a reload reads decides its outcome, not when its signal was sent.
        let posts = events?.filter { $0["reason"] as? String == "POST /admin/reload" }
        let hangups = events?.filter { $0["reason"] as? String == "SIGHUP" }
        #expect(posts?.map { $0["outcome"] as? String } == ["applied", "refused"])
        #expect(hangups?.last?["outcome"] as? String == "applied")
        #expect(events?.count == (posts?.count ?? -1) + (hangups?.count ?? -1))
        #expect(server.log.contains("SIGHUP: 1 module reloaded, Notes 1.0 → 1.1"))
        #expect(server.log.contains("should_upgrade Notes table notes in common 1.0 → 1.1"))
        #expect(server.log.contains("the module folder has 1 problem; the modules in use stay"))
    }
}

/// `daogate check --plans` as a process: warnings on standard output, the exit status left alone.
@Suite struct PlanCommandTests {
    @Test func checkPlansPrintsScansAsWarningsAndExitsZero() throws {
        let folder = try ModuleCommandTests.folder("""
            <module name="Notes" initializer="create" tableName="notes" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, owner text)</update>
              <select id="byOwner" arguments="$owner:string">select * from ${T} where owner = #{owner}</select>
              <select id="byId" arguments="$id:int">select * from ${T} where id = #{id}</select>
            </module>
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plans = try ModuleCommandTests.daogate(["check", "--plans", folder.path])
        #expect(plans.status == 0)
        #expect(plans.output.contains("m.xml:3: warning: Notes.byOwner: a full scan of table notes; an index on notes(owner) would serve it"))
        #expect(!plans.output.contains("byId"))
        #expect(plans.output.contains("1 module, 3 methods, 0 problems, 1 full scan"))
        // Without --plans, check says nothing of plans.
        let plain = try ModuleCommandTests.daogate(["check", folder.path])
        #expect(plain.status == 0)
        #expect(!plain.output.contains("warning"))
    }
}
