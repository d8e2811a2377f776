import Foundation
import Testing

/// The explorer as `daogate serve` serves it: the URLs it prints at start, the page over a real socket, and
/// `--docs off` / `DAOGATE_DOCS=off`.
@Suite struct ExplorerLiveTests {
    @Test func serveSaysWhereTheExplorerTheAPIAndTheDescriptionAre() throws {
        let server = try LiveServer()
        let lines = server.log.split(separator: "\n").map(String.init).filter { $0.hasPrefix("daogate ") }
        let listening = try #require(lines.firstIndex(of: "daogate listening on \(server.base)"))
        #expect(Array(lines[listening...].prefix(4)) == [
            "daogate listening on \(server.base)",
            "daogate API explorer on \(server.base)/docs",
            "daogate API on \(server.base)/dao/{module}/{method}",
            "daogate OpenAPI description on \(server.base)/openapi.json",
        ])
        let page = try server.curl("/docs")
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.body.contains(#"data-testid="send""#))
        let root = try server.curl("/")
        #expect(root.status == 302 && root.headers["location"] == "docs")
        // Followed as a browser does, the redirect lands on the page.
        let followed = try run("/usr/bin/curl", ["-s", "-L", "-o", "/dev/null", "-w", "%{http_code} %{url_effective}", server.base + "/"])
        #expect(followed == "200 \(server.base)/docs")
    }

    @Test(arguments: [(["--docs", "off"], [String: String]()), ([], ["DAOGATE_DOCS": "off"])])
    func docsOffLeavesNoPageAndNoRedirect(_ arguments: [String], _ environment: [String: String]) throws {
        let server = try LiveServer(arguments: arguments, environment: environment)
        for path in ["/", "/docs", "/docs/explorer.js"] {
            let reply = try server.curl(path)
            #expect(reply.status == 404 && reply.code == "not_found", "\(path): \(reply.body)")
        }
        #expect(!server.log.contains("API explorer"))
        #expect(server.log.contains("daogate OpenAPI description on \(server.base)/openapi.json"))
        #expect(try server.curl("/openapi.json").status == 200)
    }

    @Test func aDocsValueThatIsNeitherOnNorOffIsRefused() throws {
        let (status, output) = try LiveServer.refusal(["--modules", "modules", "--port", "0", "--docs", "maybe"])
        #expect(status == 64 && output.contains("docs must be on or off, not maybe"), "\(output)")
    }
}
