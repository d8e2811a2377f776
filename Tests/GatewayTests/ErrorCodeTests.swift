import DAOValue
import Foundation
@testable import Gateway
import HTTPTransport
import Testing

/// The errors are declared once (`ErrorCode`: each code with its status), and each route declares the codes its
/// methods can give: the document lists their statuses, and what a route answers is among them.
@Suite struct ErrorCodeTests {
    /// A code's name means one status, whichever areas declare it (`invalid_arguments` is the engine's and the
    /// renderer's).
    @Test func everyCodeHasExactlyOneStatus() {
        let statuses = Dictionary(grouping: ErrorCode.allCases, by: \.name).mapValues { Set($0.map(\.status)) }
        #expect(statuses.count == Problem.statusOfCode.count)
        #expect(statuses.count >= 70)
        for (name, status) in statuses.sorted(by: { $0.key < $1.key }) {
            #expect(status.count == 1, "\(name) has the statuses \(status.sorted())")
            #expect(name.wholeMatch(of: /[a-z]+(_[a-z]+)*/) != nil, "\(name)")
        }
    }

    /// What the transport refuses by itself has its status there too (for a responder other than the gateway):
    /// the gateway's problem of each refusal, whose status is its code's, says the same.
    @Test func aRefusalOfTheTransportKeepsItsStatus() throws {
        let fixture = try GatewayFixture()
        let request = HTTPRequest(method: "POST", path: "/transaction", query: [], headers: [], body: [])
        for refusal in [TransportRefusal.bodyTooLarge(limit: 10), .shuttingDown, .invalidRequest("two Hosts"), .unsupportedTransferCoding,
                             .tooManyLongCalls(limit: 16)] {
            #expect(fixture.gateway.respond(to: refusal, request: request).status == refusal.status, "\(refusal)")
        }
    }

    /// Every code a route declares is in the table (and so on docs/errors.md, `ProblemRemedyTests`).
    @Test func everyDeclaredCodeIsInTheTable() {
        for route in Gateway.routes {
            for method in route.methods {
                for code in route.errors(of: method)?.codes ?? [] {
                    #expect(Problem.statusOfCode[code.name] == code.status, "\(method) \(route.template): \(code.name)")
                }
            }
        }
    }

    /// The document's problem responses of each operation are statuses its route declares for the method; the
    /// operations of a route that writes them out alike (KV, cache lists) list them all.
    @Test func theDocumentListsTheStatusesOfTheDeclaredErrors() throws {
        let fixture = try GatewayFixture()
        let document = try Value(parsingJSON: fixture.send("GET", "/openapi.json").response.body)
        let paths = try #require(document[member: "paths"]?.objectValue)
        var checked = 0
        for route in Gateway.routes where route.isDescribed {
            for (path, item) in paths where Self.instance(path, of: route.template) {
                for method in route.methods where method != "HEAD" {
                    let operation = try #require(item[member: method.lowercased()], "\(method) \(path)")
                    let listed = Set((operation[member: "responses"]?.objectValue ?? [:]).keys.compactMap(Int.init)).subtracting([200])
                    let declared = Set(try #require(route.errors(of: method)).statuses)
                    #expect(listed.isSubset(of: declared), "\(method) \(path): \(listed.subtracting(declared).sorted()) listed, not declared")
                    checked += 1
                }
            }
        }
        #expect(checked >= 100)
    }

    /// Whether a document path is one the route's template writes out (`{space}`, `{kind}`, DAO methods).
    static func instance(_ path: String, of template: RouteTemplate) -> Bool {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard parts.count == template.segments.count else { return false }
        for (part, segment) in zip(parts, template.segments) {
            switch segment {
            case .literal(let literal): if part != literal { return false }
            case .parameter(.module), .parameter(.method), .parameter(.space), .parameter(.kind):
                if part.hasPrefix("{") { return false }
            case .parameter(let parameter): if part != "{\(parameter.rawValue)}" { return false }
            }
        }
        return true
    }

    /// Codes no route declares because any request can get them before its route is known: the framing, the
    /// path, a method the route does not take, the server stopping.
    static let beforeTheRoute: Set<String> = ["invalid_request", "invalid_path", "method_not_allowed", "shutting_down",
                                              "body_too_large", "not_found"]

    /// Every route, with every method it takes, sent what a careless or hostile caller sends — no body, a body
    /// that is not JSON, JSON of each wrong shape, another content type, no user, a user, an admin, a name that
    /// is none — answers only codes its declaration lists: a handler that gives a code its route does not
    /// declare (and so the document does not list) fails here.
    @Test func whatEveryRouteAnswersIsDeclared() throws {
        let fixture = try GatewayFixture()
        let bodies: [(String?, String?)] = [
            (nil, nil), ("{", "application/json"), ("[]", "application/json"), ("{}", "application/json"),
            (#""text""#, "application/json"), ("null", "application/json"), (#"{"nope": 1}"#, "application/json"),
            (#"{"value": 1, "capacity": 0, "bucket": -1, "all": 3, "vacuum": 2, "calls": 1, "pattern": 1}"#, "application/json"),
            ("{}", "text/plain"),
        ]
        let callers: [[(String, String)]] = [
            [], [(Gateway.userHeader, "ann")], [("Authorization", "Bearer \(GatewayFixture.adminToken)"), (Gateway.userHeader, "ann")],
            [("Authorization", "Bearer wrong-token-0123456789")], [(Gateway.userHeader, "a b"), ("X-Storage", "no/pe")],
        ]
        let queries: [[(String, String)]] = [[], [("limit", "0"), ("values", "maybe"), ("space", "nope"), ("default", "{"), ("from", "middle")]]
        let variants = bodies.flatMap { body in callers.flatMap { headers in queries.map { (body, headers, $0) } } }
        var answered = 0
        for route in Gateway.routes {
            for path in Self.paths(route.template) {
                for method in route.methods where method != "HEAD" {
                    let declared = try #require(route.errors(of: method))
                    for ((body, type), headers, query) in variants {
                        let reply = fixture.send(method, path, body, headers: headers, query: query, contentType: type)
                        guard reply.status >= 400, let code = reply.code else { continue }
                        answered += 1
                        #expect(declared.contains(code) || Self.beforeTheRoute.contains(code),
                                "\(method) \(path) answered \(reply.status) \(code), which its route does not declare: \(reply.text)")
                    }
                }
            }
        }
        #expect(answered > 5000)
    }

    /// Concrete paths of a template: each parameter a valid value, and a business, cache name or key that is none.
    static func paths(_ template: RouteTemplate) -> [String] {
        let valid: [PathParameter: String] = [.module: "Books", .method: "addBook", .space: "user", .kind: "memory",
                                              .business: "biz", .cache: "c1", .key: "k"]
        var paths = [template.path(valid)]
        if template.segments.contains(.parameter(.kind)) { paths.append(template.path(valid.merging([.kind: "disk"]) { $1 })) }
        if template.segments.contains(.parameter(.space)) { paths.append(template.path(valid.merging([.space: "common"]) { $1 })) }
        if template.segments.contains(.parameter(.module)) {
            paths.append(template.path(valid.merging([.module: "Nope"]) { $1 }))
            paths.append(template.path(valid.merging([.module: "Templates", .method: "getTemplate"]) { $1 }))
        }
        for parameter in [PathParameter.business, .cache] where template.segments.contains(.parameter(parameter)) {
            paths.append(template.path(valid.merging([parameter: "a%2Fb"]) { $1 }))
        }
        return paths
    }
}
