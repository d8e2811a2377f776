import DAOEngine
import DAOValue
import Foundation
import Gateway
import Synchronization
import Testing

/// `X-Table-Name` (and a transaction call's `table`) names a table of the
/// module called, never another's: not another module's fixed table, not a
/// table the caller's storage records as another module's, not anything else
/// in the schema the module did not create, not a storage layer's table.
@Suite struct TableConfinementTests {
    let fixture: GatewayFixture

    /// A second template module in each user's storage, beside ChatMessages.
    static let drafts = """
        <module name="Drafts" initializer="createTable" tableName="" version="1.0" userDependent="true">
          <update id="createTable">create table if not exists ${T} (id integer primary key, body text)</update>
          <delete id="clear">delete from ${T}</delete>
          <select id="count" result="int">select count(*) from ${T}</select>
        </module>
        """

    init() throws { fixture = try GatewayFixture(extraModules: [Self.drafts]) }

    /// One request per route that takes a table name from the caller.
    enum Route: CaseIterable, CustomTestStringConvertible {
        case write, read, transaction, deleteTable, describe

        var testDescription: String { "\(self)" }

        /// A write and a read of each module.
        static let calls = [
            "ChatMessages": (write: ("clear", nil), read: ("latest", "[10]")),
            "Drafts": (write: ("clear", nil), read: ("count", nil)),
            "Messages": (write: ("remove", "[1]"), read: ("unreadCount", nil)),
        ] as [String: (write: (String, String?), read: (String, String?))]

        func send(_ fixture: GatewayFixture, module: String, table: String, user: String = "ann") -> GatewayFixture.Reply {
            let headers = [(Gateway.userHeader, user), (Gateway.tableHeader, table)]
            let calls = Self.calls[module]!
            switch self {
            case .write:
                return fixture.send("POST", "/dao/\(module)/\(calls.write.0)", calls.write.1, headers: headers)
            case .read:
                return fixture.send("POST", "/dao/\(module)/\(calls.read.0)", calls.read.1, headers: headers)
            case .transaction:
                let call = #""method": "\#(calls.write.0)", "arguments": \#(calls.write.1 ?? "null")"#
                return fixture.send("POST", "/transaction", #"{"calls": [{"module": "\#(module)", \#(call), "table": "\#(table)"}]}"#,
                                    headers: [(Gateway.userHeader, user)])
            case .deleteTable:
                return fixture.send("DELETE", "/modules/\(module)/table", headers: headers)
            case .describe:
                return fixture.send("GET", "/modules/\(module)", headers: headers)
            }
        }
    }

    /// Ann's message 1 and conversation chat_1, to show that nothing changed.
    private func seed() {
        #expect(fixture.post("/dao/Messages/insertMessage",
                             #"{"model": {"msgId": 1, "time": 1, "content": "hi", "uin": 7, "read": false}}"#, user: "ann").status == 200)
        #expect(fixture.post("/dao/ChatMessages/send", #"["bob", "hello"]"#, user: "ann", table: "chat_1").status == 200)
    }

    private func expectUntouched() {
        #expect(fixture.post("/dao/Messages/getMessage", "[1]", user: "ann").json[member: "result"]?[member: "uin"] == .integer(7))
        #expect(fixture.post("/dao/ChatMessages/latest", "[10]", user: "ann", table: "chat_1").json[member: "result"]?.arrayValue?.count == 1)
    }

    @Test(arguments: Route.allCases, ["messages", "MESSAGES", "Messages", "books", "demoTable", "templates"])
    func anotherModulesFixedTableIsRefused(route: Route, table: String) {
        seed()
        let reply = route.send(fixture, module: "ChatMessages", table: table)
        #expect(reply.status == 400, "\(reply.text)")
        #expect(reply.code == "invalid_table")
        #expect(reply.json[member: "detail"]?.stringValue?.contains("may only use tables of its own") == true)
        expectUntouched()
    }

    /// Two templates, one table name: the table is the one that made it, the other gets 409 `table_owned`.
    @Test(arguments: Route.allCases, ["chat_1", "CHAT_1"])
    func aTableTheStorageRecordsAsAnotherModulesIsRefused(route: Route, table: String) {
        seed()
        let reply = route.send(fixture, module: "Drafts", table: table)
        #expect(reply.status == 409, "\(reply.text)")
        #expect(reply.code == "table_owned")
        #expect(reply.json[member: "owner"] == .string("ChatMessages"))
        #expect(reply.json[member: "detail"]?.stringValue?.contains("was made by module ChatMessages") == true)
        expectUntouched()
    }

    /// Messages' initializer makes an index, `messages_uin_idx`, which no
    /// module records as its table.
    @Test(arguments: Route.allCases, ["messages_uin_idx", "Messages_Uin_Idx"])
    func aNameInTheSchemaThatNoModuleRecordsIsRefused(route: Route, table: String) {
        seed()
        let reply = route.send(fixture, module: "ChatMessages", table: table)
        #expect(reply.status == 400, "\(reply.text)")
        #expect(reply.code == "invalid_table")
        expectUntouched()
    }

    @Test(arguments: Route.allCases, ["TableVersions", "tableversions", "daogate_kv", "daogate_lru_caches", "sqlite_master", "sqlite_sequence"])
    func storageLayerTablesAreRefused(route: Route, table: String) {
        seed()
        #expect(fixture.send("PUT", "/kv/user/b/k", #"{"value": 1}"#, headers: [(Gateway.userHeader, "ann")]).status == 200)
        let reply = route.send(fixture, module: "ChatMessages", table: table)
        #expect(reply.status == 400, "\(reply.text)")
        #expect(reply.code == "invalid_table")
        expectUntouched()
        #expect(fixture.send("GET", "/kv/user/b/k", headers: [(Gateway.userHeader, "ann")]).json[member: "value"] == .integer(1))
    }

    /// A module with a table of its own takes no other (its statements are
    /// compiled for it), on every route; its own name, in any case, is fine.
    @Test(arguments: Route.allCases)
    func aModuleWithATableTakesNoOther(route: Route) {
        seed()
        let other = route.send(fixture, module: "Messages", table: "messages_2020")
        #expect(other.status == 400, "\(other.text)")
        #expect(other.code == "invalid_table")
        #expect(other.json[member: "detail"]?.stringValue?.contains("always uses its table messages") == true)
        #expect(route.send(fixture, module: "Messages", table: "MESSAGES").status == 200)
    }

    /// A template module's tables are its own: dropped, the name is free again.
    @Test func aDroppedTableIsFreeAgain() {
        seed()
        #expect(fixture.send("DELETE", "/modules/ChatMessages/table", headers: [(Gateway.userHeader, "ann"), (Gateway.tableHeader, "Chat_1")])
            .json[member: "deleted"] == .bool(true))
        #expect(fixture.post("/dao/Drafts/count", nil, user: "ann", table: "chat_1").json[member: "result"] == .integer(0))
        #expect(fixture.post("/dao/ChatMessages/latest", "[10]", user: "ann", table: "chat_1").code == "table_owned")
    }

    /// Each user's storage has its own tables: chat_1 is ChatMessages' in
    /// ann's storage, and free in bob's.
    @Test func ownershipIsPerStorage() {
        seed()
        #expect(fixture.post("/dao/Drafts/count", nil, user: "bob", table: "chat_1").status == 200)
        #expect(fixture.post("/dao/Drafts/count", nil, user: "ann", table: "chat_1").code == "table_owned")
    }

    /// A call that overlaps `DELETE /modules/{m}/table` runs before the drop
    /// or after it, on the table created again: never "no such table".
    @Test(.timeLimit(.minutes(1)))
    func callsRacingATableDropNeverFail() {
        seed()
        let deadline = ContinuousClock.now + .seconds(3)
        let fixture = self.fixture
        // Threads of their own, not tasks: the calls block, and tasks could wait for the cooperative pool's
        // threads (two on this machine, shared with the other suites) until the deadline has passed.
        let all = Mutex<[Int: Int]>([:])
        let group = DispatchGroup()
        func onThread(_ body: @escaping @Sendable () -> [Int: Int]) {
            group.enter()
            Thread {
                let counts = body()
                all.withLock { $0.merge(counts, uniquingKeysWith: +) }
                group.leave()
            }.start()
        }
        onThread {
            var counts: [Int: Int] = [:]
            while ContinuousClock.now < deadline {
                for table in [nil, "chat_1"] as [String?] {
                    let module = table == nil ? "Messages" : "ChatMessages"
                    var headers = [(Gateway.userHeader, "ann")]
                    if let table { headers.append((Gateway.tableHeader, table)) }
                    counts[fixture.send("DELETE", "/modules/\(module)/table", headers: headers).status, default: 0] += 1
                }
            }
            return counts
        }
        for worker in 0..<3 {
            onThread {
                var counts: [Int: Int] = [:]
                var round = 0
                while ContinuousClock.now < deadline {
                    round += 1
                    let replies = [
                        fixture.post("/dao/Messages/unreadCount", nil, user: "ann"),
                        fixture.post("/dao/Messages/getMessage", "[1]", user: "ann"),
                        fixture.post("/dao/Messages/remove", "[\(round)]", user: "ann"),
                        fixture.post("/dao/ChatMessages/latest", "[5]", user: "ann", table: "chat_1"),
                        fixture.post("/dao/ChatMessages/send", #"["w\#(worker)", "m\#(round)"]"#, user: "ann", table: "chat_1"),
                        fixture.send("POST", "/transaction", #"{"calls": [{"module": "Messages", "method": "unreadCount"}, {"module": "ChatMessages", "method": "clear", "table": "chat_1"}]}"#,
                                     headers: [(Gateway.userHeader, "ann")]),
                    ]
                    for reply in replies {
                        if reply.status != 200, counts[reply.status] == nil { print("racing a drop: \(reply.status) \(reply.text)") }
                        counts[reply.status, default: 0] += 1
                    }
                }
                return counts
            }
        }
        group.wait()
        let statuses = all.withLock { $0 }
        #expect(statuses.keys.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses[200, default: 0] > 100)
    }
}

/// A module with no tableName whose statements never write ${T} names no
/// table: its calls need no X-Table-Name, and refuse one.
@Suite struct TablelessModuleTests {
    static let constants = """
        <module name="Constants" version="1.0">
          <select id="one" result="int">select 1</select>
        </module>
        """

    @Test func aModuleThatNamesNoTableNeedsNoTableName() throws {
        let fixture = try GatewayFixture(extraModules: [Self.constants])
        #expect(fixture.post("/dao/Constants/one").text == #"{"result":1}"#)
        let named = fixture.post("/dao/Constants/one", nil, table: "t")
        #expect(named.status == 400)
        #expect(named.code == "invalid_table")
        let described = fixture.send("GET", "/modules/Constants")
        #expect(described.status == 200, "\(described.text)")
        #expect(described.json[member: "template"] == .bool(false))
        #expect(fixture.send("POST", "/transaction", #"{"calls": [{"module": "Constants", "method": "one"}]}"#).text
            == #"{"results":[{"result":1}]}"#)
    }
}
