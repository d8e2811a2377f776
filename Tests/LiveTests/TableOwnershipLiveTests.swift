import Foundation
import Testing

/// A table belongs to the module that made it, on a real `daogate serve`: a
/// template module's caller who names a table after a module that is not
/// there yet (`X-Table-Name`) does not hand that module planted rows when it
/// is added, by a reload or at a restart. The module answers 409
/// `table_owned` naming the maker, never reads the rows, never a 500; the
/// template cannot drop or use the table the module's name now covers; the
/// admin sees the conflict in `/events` and `/metrics`.
@Suite struct TableOwnershipLiveTests {
    static let token = "ownership-admin-token-0123456789"
    static let admin = "Authorization: Bearer \(token)"

    /// Templates: one in each user's storage, one in the common space.
    static let templates = [
        "Drafts.xml": """
        <module name="Drafts" initializer="create" tableName="" version="1.0" userDependent="true">
          <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
          <insert id="add" arguments="body">insert into ${T} (body) values (#{body})</insert>
          <select id="all" result="[{}]">select * from ${T}</select>
        </module>
        """,
        "Board.xml": """
        <module name="Board" initializer="create" tableName="" version="1.0">
          <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
          <insert id="add" arguments="body">insert into ${T} (body) values (#{body})</insert>
        </module>
        """,
    ]

    /// The modules added later, whose tables the templates' callers named first.
    static let added = [
        "Ledger.xml": """
        <module name="Ledger" initializer="create" tableName="ledger" version="1.0" userDependent="true">
          <update id="create">create table if not exists ${T} (id integer primary key, amount integer not null, note text not null)</update>
          <insert id="record" arguments="$amount, $note">insert into ${T} (amount, note) values (#{amount}, #{note})</insert>
          <select id="all" result="[{}]">select * from ${T}</select>
        </module>
        """,
        "Notices.xml": """
        <module name="Notices" initializer="create" tableName="notices" version="1.0">
          <update id="create">create table if not exists ${T} (id integer primary key, title text not null)</update>
          <insert id="post" arguments="$title">insert into ${T} (title) values (#{title})</insert>
          <select id="all" result="[{}]">select * from ${T}</select>
        </module>
        """,
    ]

    enum Addition: String, CaseIterable { case reload, restart }

    @Test(arguments: Addition.allCases)
    func aModuleAddedLaterDoesNotAdoptATableATemplateMade(_ addition: Addition) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-ownership-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, xml) in Self.templates { try xml.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        let environment = ["DAOGATE_ADMIN_TOKEN": Self.token]
        var server = try LiveServer(environment: environment, modules: folder.path)
        let mallory = "X-User-Id: mallory"

        // The squat: tables named after modules that do not exist yet, in mallory's storage and the common space.
        let planted = try server.curl("/dao/Drafts/add", method: "POST", body: #"["planted"]"#, headers: [mallory, "X-Table-Name: ledger"])
        #expect(planted.status == 200, "\(planted.body)")
        let board = try server.curl("/dao/Board/add", method: "POST", body: #"["planted"]"#, headers: [mallory, "X-Table-Name: notices"])
        #expect(board.status == 200, "\(board.body)")

        for (name, xml) in Self.added { try xml.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        switch addition {
        case .reload:
            let reload = try server.curl("/admin/reload", method: "POST", headers: [Self.admin])
            #expect(reload.status == 200, "\(reload.body)")
        case .restart:
            server = try server.restarted(environment: environment, modules: folder.path)
        }

        // The added modules answer 409 table_owned naming the maker, and read nothing of the planted rows.
        for (path, body, user, maker) in [("/dao/Ledger/all", "[]", mallory, "Drafts"),
                                          ("/dao/Ledger/record", #"[5, "x"]"#, mallory, "Drafts"),
                                          ("/dao/Notices/all", "[]", "X-User-Id: alice", "Board"),
                                          ("/dao/Notices/post", #"["hello"]"#, "X-User-Id: alice", "Board")] {
            let reply = try server.curl(path, method: "POST", body: body, headers: [user])
            #expect(reply.status == 409, "\(path): \(reply.body)")
            #expect(reply.code == "table_owned", "\(path): \(reply.body)")
            #expect(reply.json?["owner"] as? String == maker, "\(path): \(reply.body)")
            #expect(!reply.body.contains("planted"))
        }
        // The template no longer reaches the table the added module's name covers: not by name, not by pattern.
        let byName = try server.curl("/modules/Drafts/table", method: "DELETE", headers: [mallory, "X-Table-Name: ledger"])
        #expect(byName.status == 400, "\(byName.body)")
        #expect(byName.code == "invalid_table")
        let byPattern = try server.curl("/modules/Drafts/tables/delete", method: "POST", body: #"{"pattern": "led.*"}"#, headers: [mallory])
        #expect(byPattern.status == 200, "\(byPattern.body)")
        #expect(byPattern.json?["deleted"] as? [String] == [])
        let write = try server.curl("/dao/Drafts/add", method: "POST", body: #"["more"]"#, headers: [mallory, "X-Table-Name: ledger"])
        #expect(write.status == 400, "\(write.body)")
        // Nor does the module's own delete: the table is its maker's.
        let ledgerDelete = try server.curl("/modules/Ledger/table", method: "DELETE", headers: [mallory])
        #expect(ledgerDelete.status == 409, "\(ledgerDelete.body)")
        #expect(ledgerDelete.code == "table_owned")
        // The planted table is where it was, with its one row.
        let file = server.data.appendingPathComponent("users/p-mallory.db").path
        #expect(try run("/usr/bin/sqlite3", [file, "select body from ledger"]) == "planted\n")

        // The admin frees the name: the module's delete with the admin token drops the table whoever made it,
        // and the module's next call makes its own.
        let freed = try server.curl("/modules/Ledger/table", method: "DELETE", headers: [mallory, Self.admin])
        #expect(freed.status == 200, "\(freed.body)")
        #expect(freed.json?["deleted"] as? Bool == true)
        #expect(try server.curl("/dao/Ledger/record", method: "POST", body: #"[7, "mine"]"#, headers: [mallory]).status == 200)
        let mine = try server.curl("/dao/Ledger/all", method: "POST", body: "[]", headers: [mallory])
        #expect((mine.json?["result"] as? [[String: Any]])?.map { $0["note"] as? String } == ["mine"], "\(mine.body)")

        // Another user's storage has no such table: the module works there.
        #expect(try server.curl("/dao/Ledger/record", method: "POST", body: #"[5, "fine"]"#, headers: ["X-User-Id: bob"]).status == 200)
        #expect(try server.curl("/dao/Ledger/all", method: "POST", body: "[]", headers: ["X-User-Id: bob"]).json?["result"] as? [[String: Any]] != nil)

        // The admin sees it: events of kind table_owned, counted in the metrics.
        let events = try server.curl("/events", headers: [Self.admin])
        let recent = try #require(events.json?["recent"] as? [[String: Any]])
        let owned = recent.filter { $0["kind"] as? String == "table_owned" }
        #expect(Set(owned.compactMap { $0["module"] as? String }) == ["Ledger", "Notices"], "\(events.body)")
        #expect(owned.contains { ($0["error"] as? String)?.contains("Drafts") == true })
        let metrics = try server.curl("/metrics", headers: [Self.admin])
        #expect(metrics.body.contains(#"daogate_table_events_total{kind="table_owned"} "#), "\(metrics.body)")
        #expect(!metrics.body.contains(#"daogate_responses_total{status="500"}"#), "\(metrics.body)")
    }
}
