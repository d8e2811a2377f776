import DAOValue
import Gateway
import Testing

/// In jwt mode a token for ann reaches none of bob's data through any route:
/// every template of `Gateway.routeTemplates`, with every method, both cache
/// kinds, naming bob in `X-User-Id` (refused) or not (ann's own storage).
/// A route added to the table is probed without a change here.
@Suite struct AuthIsolationTests {
    static let marker = "BOB-SECRET-MARKER"
    static let bobTable = "chat_bob_secret"

    /// The path of a template, its parameters filled in.
    static func paths(_ template: RouteTemplate) -> [String] {
        var paths = [""]
        for segment in template.segments {
            let values: [String]
            switch segment {
            case .literal(let literal): values = [literal]
            case .parameter(let parameter):
                switch parameter {
                case .module: values = ["ChatMessages"]
                case .method: values = ["latest"]
                case .space: values = ["user"]
                case .kind: values = ["memory", "disk"]
                case .business: values = ["biz"]
                case .cache: values = ["feed"]
                case .key: values = ["k"]
                }
            }
            paths = paths.flatMap { path in values.map { path + "/" + $0 } }
        }
        return paths
    }

    /// A body that would do something on the route, where one is needed.
    static func body(_ template: RouteTemplate) -> String? {
        switch template.description {
        case "/dao/{module}/{method}": "[10]"
        case "/transaction": #"{"calls": [{"module": "ChatMessages", "method": "latest", "arguments": [10]}]}"#
        case "/modules/{module}/tables/delete": #"{"pattern": "chat_.*"}"#
        case "/kv/{space}/{business}/{key}", "/lru/{kind}/{space}/{cache}/entries/{key}": #"{"value": "overwritten"}"#
        case "/lru/{kind}/{space}/{cache}": #"{"capacity": 1}"#
        case "/lru/{kind}/{space}/{cache}/entries": #"{"entries": {"k": "overwritten"}}"#
        case "/lru/{kind}/{space}/{cache}/remove": #"{"keys": ["k"]}"#
        default: nil
        }
    }

    static let publicRoutes: Set<String> = ["/healthz", "/openapi.json", "/modules", "/metrics",
                                            "/", "/docs", "/docs/explorer.js", "/docs/explorer.css"]

    @Test func aTokenForAnnReachesNoneOfBobsDataThroughAnyRoute() throws {
        let (fixture, _) = try AuthTests.fixture()
        let ann = AuthTests.token(.hs256, AuthTests.claims("ann"))
        let bob = AuthTests.token(.es256, AuthTests.claims("bob"))
        // Ann names a table of her own: her events and descriptions list it, and must list nothing of bob's.
        func send(_ token: String, _ method: String, _ path: String, _ body: String?, user: String? = nil) -> GatewayFixture.Reply {
            var headers = [("Authorization", "Bearer \(token)"), (Gateway.tableHeader, token == bob ? Self.bobTable : "chat_ann")]
            if let user { headers.append((Gateway.userHeader, user)) }
            return fixture.send(method, path, body, headers: headers)
        }
        func bobsData() -> [String] {
            [
                send(bob, "POST", "/dao/ChatMessages/latest", "[10]").text,
                send(bob, "GET", "/kv/user/biz/k", nil).text,
                send(bob, "GET", "/lru/memory/user/feed/entries/k", nil).text,
                send(bob, "GET", "/lru/disk/user/feed/entries/k", nil).text,
            ]
        }
        #expect(send(bob, "POST", "/dao/ChatMessages/send", #"["bob", "\#(Self.marker)"]"#).status == 200)
        #expect(send(bob, "PUT", "/kv/user/biz/k", #"{"value": "\#(Self.marker)"}"#).status == 200)
        for kind in ["memory", "disk"] {
            #expect(send(bob, "PUT", "/lru/\(kind)/user/feed", #"{"capacity": 10}"#).status == 200)
            #expect(send(bob, "PUT", "/lru/\(kind)/user/feed/entries/k", #"{"value": "\#(Self.marker)"}"#).status == 200)
        }
        #expect(bobsData().allSatisfy { $0.contains(Self.marker) })

        var probes = 0
        for template in Gateway.routeTemplates {
            for path in Self.paths(template) {
                for method in ["GET", "HEAD", "PUT", "POST", "DELETE"] {
                    probes += 1
                    let named = send(ann, method, path, Self.body(template), user: "bob")
                    if Self.publicRoutes.contains(template.description) {
                        #expect(!named.text.contains(Self.marker), "\(method) \(path)")
                    } else {
                        #expect(named.status == 403 && named.code == "user_mismatch", "\(method) \(path) naming bob: \(named.text)")
                    }
                    let own = send(ann, method, path, Self.body(template))
                    #expect(own.status < 500, "\(method) \(path): \(own.text)")
                    #expect(!own.text.contains(Self.marker) && !own.text.contains(Self.bobTable), "\(method) \(path): \(own.text)")
                }
            }
        }
        #expect(probes >= Gateway.routeTemplates.count * 5)
        // Whatever ann's token deleted, reset or overwrote was ann's own.
        #expect(bobsData().allSatisfy { $0.contains(Self.marker) }, "\(bobsData())")
    }
}
