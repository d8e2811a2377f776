import DAODialect
import DAOEngine
import DAOValue
import Foundation
@testable import Gateway
import HTTPTransport
import Testing

/// Each problem a caller can fix says how: the header or token that names the user, the methods a module has,
/// the arguments a method takes, the option that configures an admin token or a key. And every problem's
/// `title` is the reason phrase of its status.
@Suite struct ProblemRemedyTests {
    // MARK: user_required

    @Test func aUserDependentCallWithoutAUserNamesTheHeader() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.post("/dao/Messages/unreadCount")
        #expect(reply.status == 400)
        #expect(reply.code == "user_required")
        #expect(reply.json[member: "detail"]
            == "module Messages keeps each user's data apart: the call needs a user id; send it in the X-User-Id header")
    }

    /// The KV routes and the change feed learn the user as the DAO routes do, and say so alike.
    @Test(arguments: [("GET", "/kv/user/biz/k", [(String, String)]()), ("GET", "/changes", [("space", "user")])])
    func everyRouteNeedingAUserNamesTheHeader(method: String, path: String, query: [(String, String)]) throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send(method, path, query: query)
        #expect(reply.status == 400, "\(reply.text)")
        #expect(reply.code == "user_required")
        #expect(reply.json[member: "detail"]?.stringValue?.hasSuffix("needs a user id; send it in the X-User-Id header") == true,
                "\(reply.text)")
    }

    /// In jwt mode the user comes from the token; only the static admin token names one with the header.
    @Test func inJWTModeTheProblemNamesTheTokensClaimAndTheHeader() throws {
        let (fixture, _) = try AuthTests.fixture()
        let reply = fixture.send("POST", "/dao/Messages/unreadCount", headers: [("Authorization", "Bearer \(GatewayFixture.adminToken)")])
        #expect(reply.status == 400)
        #expect(reply.code == "user_required")
        #expect(reply.json[member: "detail"] == .string("module Messages keeps each user's data apart: the call needs a user id; "
            + "it is the sub claim of the bearer token (Authorization: Bearer <JWT>); with the admin token, send it in the X-User-Id header"))
    }

    // MARK: unknown_method and unknown_argument

    @Test func anUnknownMethodListsTheModulesMethods() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.post("/dao/Books/addBok", #"{"title": "t"}"#)
        #expect(reply.status == 404)
        #expect(reply.code == "unknown_method")
        let methods = try #require(fixture.gateway.engine.modules["Books"]).methods.map(\.name)
        #expect(methods.contains("addBook"))
        #expect(reply.json[member: "detail"]
            == .string("module Books has no method 'addBok'; its methods are \(methods.joined(separator: ", "))"))
        #expect(reply.json[member: "methods"] == .array(methods.map(Value.string)))
    }

    @Test(arguments: [
        ("/dao/Books/addBook", #"{"title": "t", "prio": 1}"#,
         "method Books.addBook has no argument named 'prio'; its arguments are title, year, authorName, state, featured, isbn"),
        ("/dao/Demo/getItem", "[1, 2]", "method Demo.getItem takes 1 argument (index), got 2"),
        ("/dao/Messages/unreadCount", "[1]", "method Messages.unreadCount takes no arguments, got 1"),
        ("/dao/Messages/unreadCount", #"{"all": true}"#, "method Messages.unreadCount has no argument named 'all'; it takes none"),
    ])
    func anUnknownArgumentNamesItsMethodAndItsArguments(path: String, body: String, detail: String) throws {
        let fixture = try GatewayFixture()
        let reply = fixture.post(path, body, user: "ann")
        #expect(reply.status == 400)
        #expect(reply.code == "unknown_argument")
        #expect(reply.json[member: "detail"] == .string(detail), "\(reply.text)")
    }

    // MARK: admin_required, admin_disabled

    @Test func anAdminOperationOnAServerWithoutAnAdminTokenSaysSoAndHowToGiveOne() throws {
        let fixture = try GatewayFixture(adminToken: nil)
        let required = fixture.send("DELETE", "/modules/Demo/table")
        #expect(required.status == 401)
        #expect(required.code == "admin_required")
        #expect(required.json[member: "detail"] == .string("this operation needs Authorization: Bearer <admin token>, and this server has no "
            + "admin token: start daogate with --admin-token-file FILE (DAOGATE_ADMIN_TOKEN_FILE), or the token itself in DAOGATE_ADMIN_TOKEN"))
        let disabled = fixture.send("DELETE", "/modules/Demo/table", headers: [("Authorization", "Bearer some-token-0123456789")])
        #expect(disabled.status == 403)
        #expect(disabled.code == "admin_disabled")
        #expect(disabled.json[member: "detail"] == .string("this operation needs the admin token, and none is configured: "
            + "start daogate with --admin-token-file FILE (DAOGATE_ADMIN_TOKEN_FILE), or the token itself in DAOGATE_ADMIN_TOKEN"))
    }

    @Test func withAnAdminTokenConfiguredTheProblemOnlyAsksForIt() throws {
        let fixture = try GatewayFixture()
        let required = fixture.send("DELETE", "/modules/Demo/table")
        #expect(required.status == 401)
        #expect(required.code == "admin_required")
        #expect(required.json[member: "detail"] == "this operation needs Authorization: Bearer <admin token>")
    }

    // MARK: the missing key

    /// A gateway over the example modules but Messages (the one with `<crypt>`), and no key.
    static func keylessGateway(_ root: URL) throws -> Gateway {
        let (modules, errors) = ModuleLoader.loadDirectory(GatewayFixture.modulesDirectory)
        #expect(errors.isEmpty)
        let engine = try Engine(modules: modules.filter { $0.encryptedProperties.isEmpty },
                                configuration: Engine.Configuration(dataDirectory: root.path), observer: EventLog())
        return try Gateway(engine: engine, events: EventLog())
    }

    @Test func aModuleThatEncryptsCannotLoadWithoutAKeyAndTheErrorNamesTheOption() throws {
        let (modules, _) = ModuleLoader.loadDirectory(GatewayFixture.modulesDirectory)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-keyless-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        #expect {
            _ = try Engine(modules: modules, configuration: Engine.Configuration(dataDirectory: root.path))
        } throws: { error in
            "\(error)" == "module Messages encrypts properties (<crypt>), but no key is configured: "
                + "start daogate with --key-file FILE (DAOGATE_KEY_FILE), or the key itself in DAOGATE_KEY"
        }
    }

    @Test(arguments: [("PUT", "/kv/common/biz/k", #"{"value": "s", "encrypted": true}"#),
                      ("PUT", "/lru/disk/common/d", #"{"capacity": 10, "encrypted": true}"#)])
    func encryptionAskedOfAServerWithoutAKeyNamesTheKeyFileOption(method: String, path: String, body: String) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-keyless-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let gateway = try Self.keylessGateway(root)
        defer { gateway.engine.shutdown() }
        let response = gateway.respond(to: HTTPRequest(method: method, path: path, query: [],
                                                       headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
        let json = try Value(parsingJSON: response.body)
        #expect(response.status == 400)
        #expect(json[member: "code"] == "encryption_unavailable")
        let detail = json[member: "detail"]?.stringValue ?? ""
        #expect(detail.hasSuffix(", and the server has none: start daogate with --key-file FILE (DAOGATE_KEY_FILE), or the key itself in DAOGATE_KEY"),
                "\(detail)")
    }

    // MARK: titles

    /// RFC 9110's reason phrases (§15), written out here rather than read from the code under test.
    static let rfc9110: [Int: String] = [
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        406: "Not Acceptable", 409: "Conflict", 410: "Gone", 413: "Content Too Large", 415: "Unsupported Media Type",
        421: "Misdirected Request", 422: "Unprocessable Content", 429: "Too Many Requests",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout", 507: "Insufficient Storage",
    ]

    /// Every code the gateway answers with: its problem's title is its status's reason phrase (none is "Error").
    @Test func everyCodesTitleIsTheReasonPhraseOfItsStatus() throws {
        for code in ErrorCode.allCases {
            let status = code.status
            let body = try Value(parsingJSON: Problem(code, "x").response(JSONWriteOptions()).body)
            let expected = try #require(Self.rfc9110[status], "\(code): status \(status) is not in the test's table")
            #expect(body[member: "title"] == .string(expected), "\(code) (\(status))")
        }
        for status in [421, 429, 502] { #expect(Problem.statusOfCode.values.contains(status)) }
    }

    /// No problem in the gateway's sources names its status: each names a code (`Problem(.invalidBody, …)`), whose
    /// status is declared once (`ErrorCode.status`).
    @Test func noProblemInTheSourcesWritesAStatus() throws {
        let sources = URL(fileURLWithPath: GatewayFixture.modulesDirectory).deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 100)
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(text.firstMatch(of: /Problem\(\d{3}|Problem\([a-z.]*status, "/) == nil, "\(file) writes a problem's status")
        }
    }

    /// docs/errors.md's table lists every code the gateway answers with, at its status, and no other (but HAProxy's
    /// own `shard_unavailable`): a code added later without a row, or a row of a code no longer declared, fails here.
    @Test func theErrorsPageListsEveryCodeAtItsStatus() throws {
        let page = URL(fileURLWithPath: GatewayFixture.modulesDirectory).deletingLastPathComponent()
            .appendingPathComponent("docs/errors.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        var rows: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            guard let match = line.wholeMatch(of: /\| (\d{3}) \| ([^|]+) \|.*/) else { continue }
            for code in match.2.matches(of: /`([a-z_]+)`/) { rows[String(code.1)] = Int(match.1)! }
        }
        for (code, status) in Problem.statusOfCode.sorted(by: { $0.key < $1.key }) {
            #expect(rows[code] == status, "\(code) (\(status)) is \(rows[code].map(String.init) ?? "absent") in docs/errors.md")
        }
        let undeclared = Set(rows.keys).subtracting(Problem.statusOfCode.keys)
        #expect(undeclared == ["shard_unavailable"], "docs/errors.md lists codes ErrorCode does not declare: \(undeclared.sorted())")
    }

    /// On the wire: the status line's reason phrase and the body's title are the same words.
    @Test func theTitleIsWhatTheStatusLineSays() throws {
        let fixture = try GatewayFixture()
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 1), responder: fixture.gateway)
        try server.start()
        defer { server.shutdown(gracePeriod: .seconds(1)) }
        for (method, path) in [("POST", "/dao/Books/nope"), ("GET", "/dao/Books/addBook"), ("POST", "/dao/Messages/unreadCount"),
                               ("DELETE", "/modules/Demo/table")] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-s", "-i", "-X", method, "\(server.url)\(path)"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let statusLine = try #require(output.split(separator: "\r\n").first)
            let phrase = statusLine.split(separator: " ", maxSplits: 2).dropFirst(2).first.map(String.init)
            let body = try Value(parsingJSON: Array(output[output.range(of: "\r\n\r\n")!.upperBound...].utf8))
            #expect(phrase != nil && body[member: "title"] == .string(phrase!), "\(method) \(path): \(statusLine)")
        }
    }
}
