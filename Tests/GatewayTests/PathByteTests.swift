import Foundation
import Gateway
import HTTPTransport
import Testing

/// Every byte, percent-encoded, in every parameter of every route of the router's table, over a real socket:
/// a segment decoded to a byte its parameter does not take is a 400, no request reaches another route or
/// resource (data set up before is all still there, unchanged), and nothing answers 5xx.
@Suite("Every byte in every path parameter")
struct PathByteTests {
    /// What each parameter holds when another one is being swept; the sentinels below live at these names.
    static let samples: [PathParameter: String] = [
        .module: "Demo", .method: "insertItem", .space: "common", .kind: "memory",
        .business: "scratch", .cache: "m2", .key: "x",
    ]

    /// A body for the routes that read one, such that a request the router sent to the sentinels would change them.
    static let bodies: [String: String] = [
        "/dao/{module}/{method}": #"["evil"]"#,
        "/modules/{module}/tables/delete": #"{"pattern": ".*"}"#,
        "/modules/{module}/globals": "{}",
        "/kv/{space}/{business}/{key}": #"{"value": "evil"}"#,
        "/lru/{kind}/{space}/{cache}": #"{"capacity": 1}"#,
        "/lru/{kind}/{space}/{cache}/entries": #"{"entries": {"x": "evil"}}"#,
        "/lru/{kind}/{space}/{cache}/entries/{key}": #"{"value": "evil"}"#,
        "/lru/{kind}/{space}/{cache}/remove": #"{"all": true}"#,
    ]

    static let headers = [(Gateway.userHeader, "ann"), ("Authorization", "Bearer \(GatewayFixture.adminToken)")]

    /// The sentinels as the gateway shows them: each value, the cache's capacity, the Demo table's rows.
    static func snapshot(_ fixture: GatewayFixture) -> [String] {
        var reads = ["/kv/common/scratch/x", "/kv/common/scratch/y", "/lru/memory/common/m2/entries/x",
                     "/lru/memory/common/m2/entries/y", "/modules/Demo/last-insert-rowid"]
            .map { fixture.send("GET", $0, headers: headers).text }
        reads.append(fixture.send("GET", "/lru/memory/common/m2", headers: headers).json[member: "capacity"].map { "\($0)" } ?? "-")
        for index in 1...2 {
            reads.append(fixture.send("POST", "/dao/Demo/getItem", #"{"index": \#(index)}"#, headers: headers).text)
        }
        return reads
    }

    @Test func everyEncodedByteInEveryParameterReachesOnlyItsOwnResource() throws {
        let fixture = try GatewayFixture()
        for (path, body) in [("/kv/common/scratch/x", #"{"value": "one"}"#), ("/kv/common/scratch/y", #"{"value": "two"}"#),
                             ("/lru/memory/common/m2", #"{"capacity": 1000}"#),
                             ("/lru/memory/common/m2/entries/x", #"{"value": "one"}"#),
                             ("/lru/memory/common/m2/entries/y", #"{"value": "two"}"#)] {
            try #require(fixture.send("PUT", path, body, headers: Self.headers).status == 200)
        }
        try #require(fixture.send("POST", "/dao/Demo/insertItem", #"["sentinel"]"#, headers: Self.headers).status == 200)
        let before = Self.snapshot(fixture)

        // One curl, one keep-alive connection: a group of 256 requests per route, parameter and method.
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2),
                                responder: fixture.gateway)
        try server.start()
        defer { server.shutdown(gracePeriod: .seconds(2)) }
        var arguments: [String] = []
        var expected: [(request: String, byte: Int)] = []
        for template in Gateway.routeTemplates {
            let positions = template.segments.indices.filter {
                if case .parameter = template.segments[$0] { return true } else { return false }
            }
            guard !positions.isEmpty else { continue }
            // The methods the route takes, as its own 405 says.
            let probe = fixture.send("PATCH", path(template, swept: nil, escape: ""), headers: Self.headers)
            let methods = (probe.header("Allow") ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0 != "HEAD" }
            #expect(probe.status == 405 && !methods.isEmpty, "\(template): \(probe.text)")
            for position in positions {
                for method in methods {
                    if !arguments.isEmpty { arguments.append("--next") }
                    arguments += ["-s", "--path-as-is", "-X", method, "-w", "%{http_code}\\n"]
                    for (name, value) in Self.headers { arguments += ["-H", "\(name): \(value)"] }
                    if let body = Self.bodies[template.description] {
                        arguments += ["-H", "Content-Type: application/json", "--data-binary", body]
                    }
                    for byte in 0...255 {
                        let escape = String(format: "%%%02X", byte)
                        arguments += ["-o", "/dev/null", "http://127.0.0.1:\(server.port)" + path(template, swept: position, escape: escape)]
                        expected.append(("\(method) \(path(template, swept: position, escape: escape))", byte))
                    }
                }
            }
        }
        let statuses = try curl(arguments).split(separator: "\n").map { Int($0) ?? 0 }
        try #require(statuses.count == expected.count)
        for (status, request) in zip(statuses, expected) {
            let byte = request.byte
            if byte < 0x20 || byte == 0x7F || byte >= 0x80 {
                #expect(status == 400, "\(request.request) answered \(status)")
            } else {
                #expect(status >= 200 && status < 500, "\(request.request) answered \(status)")
            }
        }
        #expect(Self.snapshot(fixture) == before)
    }

    /// The router's table and the OpenAPI description name the same paths: a route added to one and not the
    /// other fails here, so the sweep above covers every documented route.
    @Test func theRouteTableAndTheDescriptionNameTheSamePaths() throws {
        let fixture = try GatewayFixture()
        let documented = try #require(fixture.send("GET", "/openapi.json").json[member: "paths"]?.objectValue).keys
        let samples = Dictionary(uniqueKeysWithValues: Self.samples.map { ("{\($0.key.rawValue)}", $0.value) })
        func instantiate(_ path: String) -> String {
            path.split(separator: "/").map { samples[String($0)] ?? String($0) }.reduce("") { $0 + "/" + $1 }
        }
        // The description has one path per kind and space where the table has a parameter.
        let kindsAndSpaces = ["disk": "memory", "user": "common"]
        let fromDocument = Set(documented.map { path in
            instantiate(path.split(separator: "/").map { kindsAndSpaces[String($0)] ?? String($0) }.joined(separator: "/"))
        })
        let fromTable = Set(Gateway.routes.filter(\.isDescribed).map { instantiate($0.template.description) })
        // Every documented path is one of the table's (a DAO method's path once, at the sample's), and back.
        #expect(fromDocument.filter { !$0.hasPrefix("/dao/") || $0 == "/dao/Demo/insertItem" } == fromTable)
    }

    /// The template's path with every parameter at its sample, the one at `swept` with `escape` and a `z` after it.
    private func path(_ template: RouteTemplate, swept: Int?, escape: String) -> String {
        template.segments.enumerated().map { index, segment in
            switch segment {
            case .literal(let text): "/" + text
            case .parameter(let parameter): "/" + Self.samples[parameter]! + (index == swept ? escape + "z" : "")
            }
        }.joined()
    }
}
