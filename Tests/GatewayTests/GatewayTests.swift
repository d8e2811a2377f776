import DAODialect
import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Gateway
import HTTPTransport
import Sharding
import Synchronization
import Testing

/// A gateway over the example modules in a temporary data folder, called in-process.
/// What curl writes to its standard output, run with `arguments`: a real client for tests of a served gateway.
func curl(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

final class GatewayFixture: Sendable {
    let root: URL
    let gateway: Gateway
    static let adminToken = "admin-token-0123456789"

    static var modulesDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("modules").path
    }

    /// The time the gateway's caches see; tests move it.
    let clock = TestClock()

    /// A gateway over the modules of `modulesDirectory` (the examples by
    /// default) and `extraModules`, module files (XML) loaded beside them;
    /// `reloadable`: a reload reads `modulesDirectory` again.
    init(adminToken: String? = GatewayFixture.adminToken, memoryCaches: MemoryCaches.Limits = .init(),
         modulesDirectory: String = GatewayFixture.modulesDirectory, extraModules: [String] = [],
         authentication: Authentication = .trustedHeader, shard: ((URL) throws -> Shard)? = nil,
         reloadable: Bool = false, explorer: Bool = true, userJournal: JournalMode = .rollback) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-gateway-\(UUID().uuidString)")
        var (modules, errors) = ModuleLoader.loadDirectory(modulesDirectory)
        if !extraModules.isEmpty {
            let folder = root.appendingPathComponent("extra-modules")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (index, xml) in extraModules.enumerated() {
                try xml.write(to: folder.appendingPathComponent("Extra\(index).xml"), atomically: true, encoding: .utf8)
            }
            let (extra, extraErrors) = ModuleLoader.loadDirectory(folder.path)
            modules += extra
            errors += extraErrors
        }
        #expect(errors.isEmpty)
        let events = EventLog()
        var engineConfiguration = Engine.Configuration(dataDirectory: root.path, cipher: try Cipher(key: .generate()))
        engineConfiguration.userJournal = userJournal
        let engine = try Engine(modules: modules, configuration: engineConfiguration, observer: events)
        var configuration = GatewayConfiguration(adminToken: adminToken, memoryCaches: memoryCaches,
                                                 clock: clock.expiryClock, authentication: authentication,
                                                 shard: try shard?(root),
                                                 modulesDirectory: reloadable ? modulesDirectory : nil)
        configuration.explorer = explorer
        gateway = try Gateway(engine: engine, events: events, configuration: configuration)
    }

    deinit {
        gateway.engine.shutdown()
        try? FileManager.default.removeItem(at: root)
    }

    /// A response with its body as text and as JSON.
    struct Reply {
        let response: HTTPResponse
        var status: Int { response.status }
        var text: String { String(decoding: response.body, as: UTF8.self) }
        var json: Value { (try? Value(parsingJSON: response.body)) ?? .null }
        var code: String? { json[member: "code"]?.stringValue }
        func header(_ name: String) -> String? { response.headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    @discardableResult
    func send(_ method: String, _ path: String, _ body: String? = nil, headers: [(String, String)] = [],
              query: [(String, String)] = [], contentType: String? = "application/json") -> Reply {
        var all = headers.map { (name: $0.0, value: $0.1) }
        if body != nil, let contentType { all.append(("Content-Type", contentType)) }
        let response = gateway.respond(to: HTTPRequest(method: method, path: path, query: query.map { (name: $0.0, value: $0.1) },
                                                       headers: all, body: Array((body ?? "").utf8)))
        // As the transport does, an answer worked out off its worker thread (a shard's move calls) is worked out.
        return Reply(response: response.offWorkerThread?() ?? response)
    }

    @discardableResult
    func post(_ path: String, _ body: String? = nil, user: String? = nil, table: String? = nil) -> Reply {
        var headers: [(String, String)] = []
        if let user { headers.append((Gateway.userHeader, user)) }
        if let table { headers.append((Gateway.tableHeader, table)) }
        return send("POST", path, body, headers: headers)
    }
}

/// A clock the test sets.
final class TestClock: Sendable {
    private let seconds = Mutex(1_700_000_000.0)
    var now: Double {
        get { seconds.withLock { $0 } }
        set { seconds.withLock { $0 = newValue } }
    }
    var expiryClock: ExpiryClock { ExpiryClock { [self] in now } }
}

@Suite struct GatewayTests {
    let fixture: GatewayFixture

    init() throws { fixture = try GatewayFixture() }

    @Test func demoInsertThenGetItemFollowsTheContract() {
        let inserted = fixture.post("/dao/Demo/insertItem", #"["something"]"#)
        #expect(inserted.status == 200)
        #expect(inserted.header("Content-Type") == "application/json")
        #expect(inserted.text == #"{"ok":true,"changes":1,"lastInsertRowId":1}"#)
        #expect(fixture.post("/dao/Demo/getItem", #"{"index": 1}"#).text == #"{"result":"something"}"#)
        #expect(fixture.post("/dao/Demo/getItem", "[1]").text == #"{"result":"something"}"#)
        #expect(fixture.post("/dao/Demo/getItem", "[99]").text == #"{"result":null}"#)
        #expect(fixture.send("GET", "/modules/Demo/last-insert-rowid").text == #"{"lastInsertRowId":1}"#)
    }

    @Test func anEmptyBodyMeansNoArguments() {
        #expect(fixture.post("/dao/Messages/unreadCount", nil, user: "ann").text == #"{"result":0}"#)
        #expect(fixture.send("POST", "/dao/Messages/unreadCount", nil, headers: [(Gateway.userHeader, "ann")], contentType: nil).status == 200)
        #expect(fixture.post("/dao/Messages/unreadCount", "{}", user: "ann").status == 200)
        let null = fixture.post("/dao/Messages/unreadCount", "null", user: "ann")
        #expect(null.status == 400)
        #expect(null.code == "invalid_body")
    }

    @Test(arguments: [
        ("{", 400, "invalid_json"),
        (#"{"index": 1,}"#, 400, "invalid_json"),
        (#""just a string""#, 400, "invalid_body"),
        ("42", 400, "invalid_body"),
        (#"{"index": "one"}"#, 400, "wrong_type"),
        (#"{"idx": 1}"#, 400, "unknown_argument"),
        ("[1, 2]", 400, "unknown_argument"),
        (#"{"index": 99999999999999999999}"#, 400, "invalid_json"),
    ])
    func badArgumentsAre400(body: String, status: Int, code: String) {
        let reply = fixture.post("/dao/Demo/getItem", body)
        #expect(reply.status == status)
        #expect(reply.code == code)
        #expect(reply.header("Content-Type") == "application/problem+json")
        #expect(reply.json[member: "status"] == .integer(Int64(status)))
        #expect(reply.json[member: "type"] == "about:blank")
        #expect(reply.json[member: "detail"]?.stringValue?.isEmpty == false)
    }

    @Test func problemsNameTheMethodAndArgument() {
        let reply = fixture.post("/dao/Books/addBook", #"{"year": 2000}"#)
        #expect(reply.status == 400)
        #expect(reply.code == "missing_argument")
        #expect(reply.json[member: "method"] == "Books.addBook")
        #expect(reply.json[member: "argument"] == "title")
        #expect(reply.json[member: "detail"] == "argument 'title' is required ($title) and was null or missing")
    }

    @Test func wrongContentTypeIs415() {
        let reply = fixture.send("POST", "/dao/Demo/getItem", "[1]", contentType: "text/plain")
        #expect(reply.status == 415)
        #expect(reply.code == "unsupported_media_type")
        #expect(fixture.send("POST", "/dao/Demo/getItem", "[1]", contentType: nil).status == 415)
        #expect(fixture.send("POST", "/dao/Demo/getItem", "[1]", contentType: "application/json; charset=latin1").status == 415)
        #expect(fixture.send("POST", "/dao/Demo/getItem", "[1]", contentType: "application/json; charset=UTF-8").status == 200)
    }

    @Test func unknownModulesMethodsAndRoutesAre404() {
        #expect(fixture.post("/dao/Nope/getItem").code == "unknown_module")
        #expect(fixture.post("/dao/Demo/nope").code == "unknown_method")
        #expect(fixture.post("/dao/Demo/nope").status == 404)
        #expect(fixture.send("GET", "/nowhere").code == "not_found")
        #expect(fixture.post("/dao/Demo").status == 404)
        #expect(fixture.post("/dao/Demo/getItem/extra").status == 404)
        #expect(fixture.send("GET", "/modules/Nope").code == "unknown_module")
    }

    @Test func aWrongMethodIs405WithAllow() {
        let reply = fixture.send("GET", "/dao/Demo/getItem")
        #expect(reply.status == 405)
        #expect(reply.code == "method_not_allowed")
        #expect(reply.header("Allow") == "POST")
        #expect(fixture.send("DELETE", "/healthz").header("Allow") == "GET, HEAD")
    }

    @Test func userDependentModulesNeedAUserAndKeepUsersApart() {
        let missing = fixture.post("/dao/Messages/unreadCount")
        #expect(missing.status == 400)
        #expect(missing.code == "user_required")
        #expect(fixture.post("/dao/Messages/insertMessage", #"[{"content": "hi"}]"#, user: "ann").status == 200)
        #expect(fixture.post("/dao/Messages/unreadCount", nil, user: "ann").text == #"{"result":1}"#)
        #expect(fixture.post("/dao/Messages/unreadCount", nil, user: "bob").text == #"{"result":0}"#)
    }

    @Test(arguments: ["", "a\u{1}b", String(repeating: "u", count: 10_240)])
    func invalidUserIDsAre400(user: String) {
        let reply = fixture.post("/dao/Messages/unreadCount", nil, user: user)
        #expect(reply.status == 400)
        #expect(reply.code == "invalid_user")
    }

    @Test func hostileButValidUserIDsGetTheirOwnDatabase() throws {
        #expect(fixture.post("/dao/Messages/insertMessage", #"[{"content": "x"}]"#, user: "../../etc/passwd").status == 200)
        let files = try FileManager.default.subpathsOfDirectory(atPath: fixture.root.path).filter { $0.hasSuffix(".db") }
        #expect(files.count == 1)
        #expect(files.first?.hasPrefix("users/x-") == true)
    }

    @Test func templateModulesTakeTheirTableFromAHeader() {
        #expect(fixture.post("/dao/ChatMessages/send", #"["ann", "hi"]"#, user: "u").code == "invalid_table")
        #expect(fixture.post("/dao/ChatMessages/send", #"["ann", "hi"]"#, user: "u", table: "chat; drop").code == "invalid_table")
        #expect(fixture.post("/dao/ChatMessages/send", #"["ann", "hi"]"#, user: "u", table: "chat_1").status == 200)
        let latest = fixture.post("/dao/ChatMessages/latest", "[5]", user: "u", table: "chat_1")
        #expect(latest.json[member: "result"]?.arrayValue?.first?[member: "body"] == "hi")
        #expect(fixture.post("/dao/Demo/getItem", "[1]", table: "other").code == "invalid_table")
    }

    @Test func constraintViolationsAre409() {
        #expect(fixture.post("/dao/Books/addBook", #"{"title": "Swift", "isbn": "978-1"}"#).status == 200)
        let conflict = fixture.post("/dao/Books/addBook", #"{"title": "Swift again", "isbn": "978-1"}"#)
        #expect(conflict.status == 409)
        #expect(conflict.code == "constraint_violation")
        #expect(conflict.json[member: "method"] == "Books.addBook")
        #expect(conflict.json[member: "detail"]?.stringValue?.contains("UNIQUE constraint failed: books.isbn") == true)
    }

    @Test func aTransactionErrorNamesTheFailingCallAndKeepsNothing() {
        let conflict = fixture.post("/transaction", #"""
            {"calls": [{"module": "Demo", "method": "insertItem", "arguments": ["x"]},
                       {"module": "Books", "method": "addBook", "arguments": {"title": "t", "isbn": "1"}},
                       {"module": "Books", "method": "addBook", "arguments": {"title": "u", "isbn": "1"}}]}
            """#)
        #expect(conflict.status == 409)
        #expect(conflict.json[member: "call"] == 2)
        let invalid = fixture.post("/transaction", #"""
            {"calls": [{"module": "Demo", "method": "insertItem", "arguments": ["x"]},
                       {"module": "Books", "method": "updateAuthor", "arguments": {"id": "not a number"}}]}
            """#)
        #expect(invalid.status == 400)
        #expect(invalid.code == "wrong_type")
        #expect(invalid.json[member: "call"] == 1)
        #expect(fixture.post("/dao/Demo/getItem", "[1]").text == #"{"result":null}"#)
        #expect(fixture.post("/dao/Books/titlesFrom", "[0]").text == #"{"result":[]}"#)
    }

    @Test func transactionsRunAllOrNothingAndListEachResult() {
        let reply = fixture.post("/transaction", #"""
            {"calls": [{"module": "Demo", "method": "insertItem", "arguments": ["one"]},
                       {"module": "Demo", "method": "insertItem", "arguments": {"content": "two"}},
                       {"module": "Demo", "method": "getItem", "arguments": [2]}]}
            """#)
        #expect(reply.status == 200)
        #expect(reply.text == #"{"results":[{"ok":true,"changes":1,"lastInsertRowId":1},{"ok":true,"changes":1,"lastInsertRowId":2},{"result":"two"}]}"#)
        for body in [#"{"calls": 1}"#, #"{"calls": [1]}"#, #"{"calls": [{"module": "Demo"}]}"#, #"{"calls": [], "x": 1}"#, "[]",
                     #"{"calls": [{"module": "Demo", "method": "getItem", "arguments": 1}]}"#] {
            let bad = fixture.post("/transaction", body)
            #expect(bad.status == 400)
            #expect(bad.code == "invalid_body")
        }
        #expect(fixture.post("/transaction", #"{"calls": []}"#).text == #"{"results":[]}"#)
    }

    @Test func largeIntegersStayExactAndCanComeAsStrings() {
        let row = fixture.post("/dao/Templates/insertTemplates", #"[[{"tplId": "big", "tplVersion": 9007199254740993, "data": "d"}]]"#)
        #expect(row.status == 200)
        let read = fixture.post("/dao/Templates/getTemplate", #"["big", 9007199254740993]"#)
        #expect(read.text.contains(#""tplVersion":9007199254740993"#))
        let strings = fixture.send("POST", "/dao/Templates/getTemplate", #"["big", 9007199254740993]"#,
                                   headers: [(Gateway.int64Header, "string")])
        #expect(strings.text.contains(#""tplVersion":"9007199254740993""#))
        #expect(strings.text.contains(#""rowid":1"#))
        #expect(fixture.send("GET", "/healthz", headers: [(Gateway.int64Header, "bignum")]).code == "invalid_header")
    }

    @Test func binaryArgumentsAndResultsTravelAsBase64() {
        #expect(fixture.post("/dao/Messages/insertMessage", #"[{"content": {"$base64": "AAEC/w=="}}]"#, user: "b").status == 200)
        #expect(fixture.post("/dao/Messages/getMessage", "[1]", user: "b").json[member: "result"]?[member: "content"] == "AAEC/w==")
    }

    @Test func introspectionDescribesModulesAndMethods() {
        let list = fixture.send("GET", "/modules").json
        #expect(list[member: "modules"]?.arrayValue?.map { $0[member: "name"] } == ["Books", "ChatMessages", "Demo", "Messages", "Templates"])
        let demo = fixture.send("GET", "/modules/Demo").json
        #expect(demo[member: "table"] == "demoTable")
        #expect(demo[member: "version"] == "1.0")
        #expect(demo[member: "storedVersion"] == .null)
        fixture.post("/dao/Demo/insertItem", #"["x"]"#)
        #expect(fixture.send("GET", "/modules/Demo").json[member: "storedVersion"] == "1.0")
        let getItem = demo[member: "methods"]?.arrayValue?.first { $0[member: "name"] == "getItem" }
        #expect(getItem?[member: "result"] == "string")
        #expect(getItem?[member: "kind"] == "select")
        #expect(getItem?[member: "path"] == "/dao/Demo/getItem")
        #expect(getItem?[member: "arguments"] == [["name": "index", "required": false, "type": "long long"]])
        #expect(getItem?[member: "documentation"] == "The content stored under an index.")
        let messages = fixture.send("GET", "/modules/Messages", headers: [(Gateway.userHeader, "ann")]).json
        #expect(messages[member: "storedVersion"] == .null)
        #expect(fixture.send("GET", "/modules/Messages").json[member: "storedVersion"] == nil)
        fixture.post("/dao/ChatMessages/send", #"["a", "b"]"#, user: "u", table: "c1")
        let chat = fixture.send("GET", "/modules/ChatMessages", headers: [(Gateway.userHeader, "u")]).json
        #expect(chat[member: "tables"] == [["table": "c1", "version": "1.0"]])
    }

    @Test func proxyOperationsOnAUsersOwnDatabase() {
        for table in ["chat_1", "chat_2", "keep"] {
            fixture.post("/dao/ChatMessages/send", #"["a", "b"]"#, user: "u", table: table)
        }
        let deleted = fixture.send("POST", "/modules/ChatMessages/tables/delete", #"{"pattern": "chat_[0-9]", "vacuum": true}"#,
                                   headers: [(Gateway.userHeader, "u")])
        #expect(deleted.json == ["deleted": ["chat_1", "chat_2"], "vacuumed": true, "progress": [0.5, 1.0]])
        let bad = fixture.send("POST", "/modules/ChatMessages/tables/delete", #"{"pattern": "("}"#, headers: [(Gateway.userHeader, "u")])
        #expect(bad.code == "invalid_regex")
        let table = fixture.send("DELETE", "/modules/ChatMessages/table", headers: [(Gateway.userHeader, "u"), (Gateway.tableHeader, "keep")])
        #expect(table.json == ["deleted": true, "table": "keep"])
        #expect(fixture.send("POST", "/modules/Messages/vacuum", headers: [(Gateway.userHeader, "u")]).json == ["ok": true])
    }

    @Test func destructiveOperationsOnSharedDatabasesNeedTheAdminToken() {
        fixture.post("/dao/Demo/insertItem", #"["x"]"#)
        let anonymous = fixture.send("DELETE", "/modules/Demo/table")
        #expect(anonymous.status == 401)
        #expect(anonymous.code == "admin_required")
        #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(fixture.send("DELETE", "/modules/Demo/table", headers: [("Authorization", "Bearer wrong")]).status == 401)
        #expect(fixture.post("/dao/Demo/getItem", "[1]").text == #"{"result":"x"}"#)
        let admin = fixture.send("DELETE", "/modules/Demo/table", headers: [("Authorization", "Bearer \(GatewayFixture.adminToken)")])
        #expect(admin.json == ["deleted": true, "table": "demoTable"])
        #expect(fixture.post("/dao/Demo/getItem", "[1]").text == #"{"result":null}"#)
    }

    @Test func adminOperationsAreDisabledWithoutAToken() throws {
        let open = try GatewayFixture(adminToken: nil)
        let reply = open.send("POST", "/modules/Demo/vacuum", headers: [("Authorization", "Bearer anything")])
        #expect(reply.status == 403)
        #expect(reply.code == "admin_disabled")
    }

    @Test func globalArgumentsAreSetByTheAdmin() throws {
        let reply = fixture.send("PUT", "/modules/Demo/globals", #"{"x": 1}"#, headers: [("Authorization", "Bearer \(GatewayFixture.adminToken)")])
        #expect(reply.status == 400)
        #expect(reply.code == "invalid_body")
        #expect(fixture.send("GET", "/modules/Demo/globals").status == 401)
        #expect(fixture.send("GET", "/modules/Demo/globals", headers: [("Authorization", "Bearer \(GatewayFixture.adminToken)")]).text == "{}")
    }

    @Test func healthEventsAndMetrics() {
        #expect(fixture.send("GET", "/healthz").json == ["status": "ok", "modules": 5])
        #expect(fixture.send("GET", "/openapi.json").status == 200)
        fixture.post("/dao/Demo/insertItem", #"["x"]"#)
        #expect(fixture.send("GET", "/metrics").status == 401)
        let metrics = fixture.send("GET", "/metrics", headers: [("Authorization", "Bearer \(GatewayFixture.adminToken)")])
        #expect(metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
        #expect(metrics.text.contains(#"daogate_responses_total{status="200"}"#))
        #expect(metrics.text.contains("daogate_open_databases 1"))
    }

    @Test func refusalsFromTheTransportAreProblems() {
        let request = HTTPRequest(method: "POST", path: "/dao/Demo/getItem", query: [], headers: [], body: [])
        let tooLarge = fixture.gateway.respond(to: .bodyTooLarge(limit: 10), request: request)
        #expect(tooLarge.status == 413)
        #expect(String(decoding: tooLarge.body, as: UTF8.self).contains(#""code":"body_too_large""#))
        #expect(fixture.gateway.respond(to: .shuttingDown, request: request).status == 503)
    }

    @Test func theAccessLogGetsADigestOfTheUserNeverTheID() {
        let reply = fixture.post("/dao/Messages/unreadCount", nil, user: "alice@example.com")
        let user = reply.response.logMetadata.first { $0.name == "user" }?.value
        #expect(user?.hasPrefix("user#") == true)
        #expect(user?.contains("alice") == false)
    }

    @Test func everyProblemCodeHasAStatus() {
        #expect(Problem.statusOfCode.count >= 30)
        #expect(Problem.statusOfCode.values.allSatisfy { (400...599).contains($0) })
        #expect(Problem.statusOfCode["constraint_violation"] == 409)
        #expect(Problem.statusOfCode["missing_argument"] == 400)
        #expect(Problem.statusOfCode["unknown_method"] == 404)
    }
}
