import DAOValue
import Gateway
import Testing

/// The route table (`Gateway.routes`) against the OpenAPI document built from it and against the router:
/// every route described, every described path routed to the route that describes it, with the same methods;
/// a method a route does not take is a 405 whose `Allow` lists the table's methods, before any handler runs.
@Suite struct RouteTableTests {
    let fixture: GatewayFixture
    init() throws { fixture = try GatewayFixture() }

    static let operations = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
    /// Values for the parameters the document leaves as `{name}`.
    static let samples = ["{module}": "Demo", "{business}": "scratch", "{cache}": "m2", "{key}": "x"]

    /// The document's paths, each with the methods described there (upper case).
    func documented() throws -> [(path: String, methods: Set<String>)] {
        let paths = try #require(fixture.send("GET", "/openapi.json").json[member: "paths"]?.objectValue)
        return paths.map { path, item in
            (path, Set(Self.operations.filter { item[member: $0] != nil }.map { $0.uppercased() }))
        }
    }

    /// Whether a documented path is one of a template's: its literals where they stand; at a parameter, the
    /// parameter itself or a value the document wrote out (a space, a kind, a DAO module and method).
    static func describes(_ path: String, _ template: RouteTemplate) -> Bool {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count == template.segments.count else { return false }
        for (part, segment) in zip(parts, template.segments) {
            switch segment {
            case .literal(let literal): if part != literal { return false }
            case .parameter(let parameter):
                if part.hasPrefix("{") && part != "{\(parameter.rawValue)}" { return false }
            }
        }
        return true
    }

    @Test func everyRouteIsDescribedWithItsMethods() throws {
        let documented = try documented()
        for route in Gateway.routes where route.isDescribed {
            let mine = documented.filter { Self.describes($0.path, route.template) }
            #expect(!mine.isEmpty, "\(route.template) is not described")
            for (path, methods) in mine {
                #expect(methods == Set(route.methods).subtracting(["HEAD"]), "\(path): \(methods) vs \(route.methods)")
            }
        }
        #expect(Set(Gateway.routeTemplates.map(\.description)).count == Gateway.routes.count, "a template declared twice")
    }

    /// The routes the document leaves out are the explorer's pages, and only they: public, for people, not API.
    @Test func onlyTheExplorersPagesAreLeftOutOfTheDocument() throws {
        let undescribed = Gateway.routes.filter { !$0.isDescribed }
        #expect(undescribed.map(\.template.description) == ["/", "/docs", "/docs/explorer.js", "/docs/explorer.css"])
        #expect(undescribed.allSatisfy { $0.isExplorer && $0.isPublic && $0.methods == ["GET", "HEAD"] })
        #expect(Gateway.routes.filter(\.isExplorer).count == undescribed.count)
        let paths = try #require(fixture.send("GET", "/openapi.json").json[member: "paths"]?.objectValue).keys
        #expect(!paths.contains { $0 == "/" || $0.hasPrefix("/docs") })
    }

    @Test func everyDescribedPathIsRoutedToItsRoute() throws {
        for (path, methods) in try documented() {
            let owners = Gateway.routes.filter { Self.describes(path, $0.template) }
            try #require(owners.count == 1, "\(path) is described by \(owners.map(\.template.description))")
            // The router, asked with a method no route takes, names the route's methods: it found that route.
            let concrete = path.split(separator: "/").map { Self.samples[String($0)] ?? String($0) }.reduce("") { $0 + "/" + $1 }
            let reply = fixture.send("PATCH", concrete, headers: [(Gateway.userHeader, "ann")])
            #expect(reply.status == 405 && reply.code == "method_not_allowed", "\(concrete): \(reply.text)")
            let allowed = (reply.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(allowed == owners[0].methods, "\(concrete)")
            #expect(Set(allowed).subtracting(["HEAD"]) == methods, "\(concrete)")
        }
    }

    /// The method is the router's to check, from the table, before the handler reads anything: a method a
    /// route does not take is a 405 even where the handler would first have refused the headers or the space.
    @Test func aMethodTheRouteDoesNotTakeIsA405BeforeTheHandler() {
        // The user space without a user: the handler would answer user_required.
        for path in ["/kv/user/scratch", "/kv/user/scratch/x", "/lru/memory/user", "/lru/disk/user/m2/entries"] {
            let reply = fixture.send("PATCH", path)
            #expect(reply.status == 405 && reply.header("Allow") != nil, "\(path): \(reply.text)")
        }
        // A module no one has: the handler would answer unknown_module.
        let unknown = fixture.send("POST", "/modules/NoSuchModule")
        #expect(unknown.status == 405 && unknown.header("Allow") == "GET, HEAD", "\(unknown.text)")
        // A space that is none is a path no route has, whatever the method.
        #expect(fixture.send("PATCH", "/kv/nowhere/scratch").status == 404)
        #expect(fixture.send("GET", "/lru/cloud/common").status == 404)
    }

    /// The parameters are checked once, by the router: a cache name or key that is not one is refused with the
    /// same 400 on every route and method that takes it.
    @Test func aParameterIsRefusedTheSameWayOnEveryMethod() {
        for (method, path) in [("GET", "/lru/memory/common/not-a-name"), ("PUT", "/lru/memory/common/not-a-name"),
                               ("GET", "/lru/memory/common/m2/exists/%7F"), ("DELETE", "/lru/disk/common/m2/entries/%01"),
                               ("PATCH", "/kv/common/scratch/%7F")] {
            let reply = fixture.send(method, path, #"{"capacity": 1}"#, headers: [("Content-Type", "application/json")])
            #expect(reply.status == 400, "\(method) \(path): \(reply.text)")
        }
    }
}
