import Foundation
import Testing

/// `serve --cors-origin` over real sockets, with curl: preflights, real answers and problems for a listed
/// origin; nothing for an origin not listed; no CORS header at all without the option.
@Suite struct CORSLiveTests {
    static let app = "https://app.example.com"
    static let local = "http://localhost:3000"

    static func preflight(_ server: LiveServer, _ path: String, origin: String, method: String = "POST") throws -> LiveServer.Reply {
        try server.curl(path, method: "OPTIONS", headers: ["Origin: \(origin)", "Access-Control-Request-Method: \(method)",
                                                          "Access-Control-Request-Headers: content-type, x-user-id"])
    }

    static func corsHeaders(_ reply: LiveServer.Reply) -> [String: String] {
        reply.headers.filter { $0.key.hasPrefix("access-control-") }
    }

    @Test func aListedOriginsPreflightIsA204NamingTheMethodsAndHeadersDaogateReads() throws {
        let server = try LiveServer(arguments: ["--cors-origin", Self.app, "--cors-origin", Self.local])
        for origin in [Self.app, Self.local] {
            let reply = try Self.preflight(server, "/dao/Demo/insertItem", origin: origin)
            #expect(reply.status == 204, "\(reply)")
            #expect(reply.headers["access-control-allow-origin"] == origin)
            #expect(reply.headers["vary"] == "Origin")
            let methods = Set((reply.headers["access-control-allow-methods"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(methods.isSuperset(of: ["GET", "HEAD", "POST", "PUT", "DELETE"]), "\(methods)")
            let headers = Set((reply.headers["access-control-allow-headers"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
            #expect(headers.isSuperset(of: ["x-user-id", "x-storage", "x-table-name", "authorization", "content-type", "last-event-id"]), "\(headers)")
            #expect(Int(reply.headers["access-control-max-age"] ?? "") ?? 0 > 0)
            #expect(reply.body.isEmpty)
        }
        #expect(server.log.contains("daogate CORS origins: \(Self.app), \(Self.local)"))
    }

    @Test func aListedOriginsAnswersAndProblemsCarryTheOrigin() throws {
        let server = try LiveServer(arguments: ["--cors-origin", Self.app, "--max-body-size", "1000"])
        let origin = "Origin: \(Self.app)"
        let inserted = try server.curl("/dao/Demo/insertItem", body: #"{"content": "from a page"}"#, headers: [origin])
        #expect(inserted.status == 200)
        #expect(inserted.headers["access-control-allow-origin"] == Self.app)
        #expect(inserted.headers["vary"] == "Origin")
        // Problems: a missing argument (400), an unknown route (404), a method the route does not take (405), a
        // user-dependent module without a user, and the transport's own refusal of a body too large (413).
        let problems = [
            try server.curl("/dao/Books/addBook", body: #"{"year": 2001}"#, headers: [origin]),
            try server.curl("/nowhere", headers: [origin]),
            try server.curl("/dao/Demo/insertItem", method: "PUT", headers: [origin]),
            try server.curl("/dao/Messages/unreadCount", body: "{}", headers: [origin]),
            try server.curl("/dao/Demo/insertItem", body: #"{"content": "\#(String(repeating: "x", count: 2000))"}"#, headers: [origin]),
        ]
        #expect(problems.map(\.status) == [400, 404, 405, 400, 413], "\(problems.map(\.body))")
        for problem in problems {
            #expect(problem.headers["access-control-allow-origin"] == Self.app, "\(problem.status) \(problem.body)")
            #expect(problem.headers["content-type"]?.hasPrefix("application/problem+json") == true || problem.status == 413)
        }
        // A request without Origin (curl, a server) gets no CORS header, only the Vary that says the answer depends on it.
        let plain = try server.curl("/healthz")
        #expect(Self.corsHeaders(plain).isEmpty)
        #expect(plain.headers["vary"] == "Origin")
    }

    @Test func anOriginNotListedGetsNoCORSHeaderAndItsPreflightIsAnsweredAsWithoutTheOption() throws {
        let server = try LiveServer(arguments: ["--cors-origin", Self.app])
        for origin in ["https://evil.example.com", "https://app.example.com.evil.example", "http://app.example.com", "null"] {
            let preflight = try Self.preflight(server, "/dao/Demo/insertItem", origin: origin)
            #expect(preflight.status == 405 && preflight.code == "method_not_allowed", "\(origin): \(preflight.body)")
            #expect(Self.corsHeaders(preflight).isEmpty, "\(origin)")
            let call = try server.curl("/dao/Demo/insertItem", body: #"["x"]"#, headers: ["Origin: \(origin)"])
            #expect(call.status == 200)
            #expect(Self.corsHeaders(call).isEmpty, "\(origin)")
        }
        // The origin sent twice is not one origin: no CORS header.
        let twice = try server.curl("/healthz", headers: ["Origin: \(Self.app)", "Origin: \(Self.app)"])
        #expect(Self.corsHeaders(twice).isEmpty)
    }

    @Test func withoutTheOptionThereIsNoCORSHeaderAtAll() throws {
        let server = try LiveServer()
        let preflight = try Self.preflight(server, "/dao/Demo/insertItem", origin: Self.app)
        #expect(preflight.status == 405)
        let call = try server.curl("/dao/Demo/insertItem", body: #"["x"]"#, headers: ["Origin: \(Self.app)"])
        let problem = try server.curl("/dao/Books/addBook", body: "{}", headers: ["Origin: \(Self.app)"])
        for reply in [preflight, call, problem] {
            #expect(Self.corsHeaders(reply).isEmpty)
            #expect(reply.headers["vary"] == nil)
        }
        #expect(!server.log.contains("CORS"))
    }

    @Test func theEnvironmentListsSeveralOriginsCommaSeparated() throws {
        let server = try LiveServer(environment: ["DAOGATE_CORS_ORIGIN": "\(Self.app), HTTP://LocalHost:3000/"])
        // Written in any case, with a trailing slash: kept as browsers send it.
        for origin in [Self.app, Self.local] {
            #expect(try Self.preflight(server, "/kv/user/biz/k", origin: origin, method: "PUT").headers["access-control-allow-origin"] == origin)
        }
    }

    @Test(arguments: ["*", "app.example.com", "https://app.example.com/path", "ftp://app.example.com", "https://user@app.example.com"])
    func anOriginThatIsNoneIsRefusedAtStart(_ origin: String) throws {
        let (status, output) = try LiveServer.refusal(["--modules", "modules", "--port", "0", "--cors-origin", origin])
        #expect(status == 64, "\(output)")
        #expect(output.contains("the CORS origin '\(origin)'"), "\(output)")
    }

    @Test func inJwtModeAPreflightNeedsNoToken() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-cors-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = try AuthLiveTests.secret(in: folder, "jwt.secret")
        let server = try LiveServer(arguments: ["--auth", "jwt", "--cors-origin", Self.app], environment: ["DAOGATE_JWT_SECRET_FILE": secret])
        let preflight = try Self.preflight(server, "/dao/Demo/insertItem", origin: Self.app)
        #expect(preflight.status == 204)
        // The call itself does: its 401 carries the origin, so the page can show why.
        let call = try server.curl("/dao/Demo/insertItem", body: #"["x"]"#, headers: ["Origin: \(Self.app)"])
        #expect(call.status == 401 && call.headers["access-control-allow-origin"] == Self.app)
        let ann = try AuthLiveTests.mint(secret, "ann")
        let allowed = try server.curl("/dao/Demo/insertItem", body: #"["x"]"#, headers: ["Origin: \(Self.app)", "Authorization: Bearer \(ann)"])
        #expect(allowed.status == 200 && allowed.headers["access-control-allow-origin"] == Self.app)
    }
}
