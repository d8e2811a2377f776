import DAOValue
import Foundation
import Gateway
import Testing

/// The API explorer's routes in process: the page and its two files, `/` redirecting to it, all of it off with
/// `--docs off`, public in jwt mode, and nothing in it that points at another server. (Tests/Browser/run
/// drives the page itself in Chromium.)
@Suite struct ExplorerTests {
    static let files = [("/docs", "text/html; charset=utf-8"), ("/docs/explorer.js", "text/javascript; charset=utf-8"),
                        ("/docs/explorer.css", "text/css; charset=utf-8")]

    @Test func thePageAndItsFilesAreServedWithAPolicyThatKeepsThemToThisServer() throws {
        let fixture = try GatewayFixture()
        for (path, type) in Self.files {
            let reply = fixture.send("GET", path)
            #expect(reply.status == 200, "\(path): \(reply.text.prefix(200))")
            #expect(reply.header("Content-Type") == type)
            let policy = try #require(reply.header("Content-Security-Policy"))
            #expect(policy.contains("default-src 'none'") && policy.contains("connect-src 'self'") && policy.contains("script-src 'self'"))
            #expect(reply.header("X-Content-Type-Options") == "nosniff")
            // Nothing is loaded from elsewhere: no absolute URL, no protocol-relative one, no path from the root
            // (which would leave a proxy's prefix).
            #expect(!reply.text.contains("://"), "\(path) names a URL of another server")
            #expect(reply.text.range(of: #"(src|href)\s*=\s*"/"#, options: .regularExpression) == nil, "\(path)")
            #expect(reply.text.range(of: #"fetch\(\s*["'`]/"#, options: .regularExpression) == nil, "\(path)")
        }
        let page = fixture.send("GET", "/docs").text
        for hook in ["operation", "user-id", "arguments", "send", "response"] {
            #expect(page.contains(#"data-testid="\#(hook)""#) || fixture.send("GET", "/docs/explorer.js").text.contains(#""data-testid": "\#(hook)""#),
                    "the hook \(hook) is missing")
        }
        #expect(page.contains(#"src="docs/explorer.js""#) && page.contains(#"href="docs/explorer.css""#))
        #expect(fixture.send("GET", "/docs/explorer.js").text.contains(#"fetch("openapi.json""#))
        #expect(fixture.send("HEAD", "/docs").status == 200)
    }

    @Test func theRootRedirectsToTheExplorerRelatively() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send("GET", "/")
        #expect(reply.status == 302)
        #expect(reply.header("Location") == "docs")
        // Only the root: a path the router does not know is still a 404 problem.
        #expect(fixture.send("GET", "/docs/").status == 404)
        #expect(fixture.send("GET", "//").status == 404)
        #expect(fixture.send("POST", "/").status == 405)
    }

    @Test(arguments: ["GET", "HEAD", "POST", "PATCH", "OPTIONS"])
    func withTheExplorerOffEveryOneOfItsPathsIsA404(_ method: String) throws {
        let fixture = try GatewayFixture(explorer: false)
        for path in ["/", "/docs", "/docs/explorer.js", "/docs/explorer.css"] {
            let reply = fixture.send(method, path)
            #expect(reply.status == 404 && reply.code == "not_found", "\(method) \(path): \(reply.text)")
            #expect(reply.text.contains("--docs off"))
        }
        // The API is served as ever.
        #expect(fixture.send("GET", "/openapi.json").status == 200)
    }

    @Test func inJwtModeThePageNeedsNoTokenButTheCallsDo() throws {
        let (fixture, _) = try AuthTests.fixture()
        for (path, _) in Self.files { #expect(fixture.send("GET", path).status == 200, "\(path)") }
        #expect(fixture.send("GET", "/").status == 302)
        #expect(fixture.send("POST", "/dao/Demo/insertItem", #"["x"]"#).status == 401)
        #expect(fixture.send("GET", "/openapi.json").json[member: "components"]?[member: "securitySchemes"]?[member: "bearer"] != nil,
                "the page tells jwt mode by the document's bearer scheme")
    }
}
