import ASCIIBytes
import DAODialect
import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport
import OpenAPIKit

/// One route of the API: its path template, whether it is answered without a token in jwt mode, the space it
/// touches, the handler of each method it takes, and the function that describes it in the OpenAPI document.
/// The table of them is `Gateway.routes`; the router, the 405 answers, the document's paths, a shard's
/// admission (`ShardAdmission`) and HAProxy's routing lists (`Gateway.commonPaths`) are all read from it.
///
/// Immutable objects, a route and each of its endpoints: every request takes one of each from the table, and a
/// reference costs a retain where a structure of arrays and closures costs one for each of its parts.
public final class Route: Sendable {
    /// What a handler gets: the request, its encoding, and the path's parameters, each checked once. Handlers
    /// throw `Problem`s (a closure's typed throws is not inferred, so the table's closures throw untyped and
    /// `Route.answer` takes the problem back out).
    typealias Handler = @Sendable (Gateway, RouteCall) throws -> HTTPResponse
    /// The route's path items in the document, one per concrete path (`{space}`, `{kind}` and the DAO
    /// methods are written out there), built from its template.
    typealias Describer = @Sendable (inout OpenAPIDescription, RouteTemplate) -> [OpenAPIDescription.DescribedPath]

    final class Endpoint: Sendable {
        /// The methods this handler answers (`GET` with `HEAD`).
        let methods: [String]
        /// The codes the handler can give: the document lists their statuses (`OpenAPIDescription.responses`).
        let errors: RouteErrors
        let handler: Handler

        init(methods: [String], errors: RouteErrors, handler: @escaping Handler) {
            self.methods = methods
            self.errors = errors
            self.handler = handler
        }
    }

    public let template: RouteTemplate
    /// Answered without a token in jwt mode: the route reaches no storage.
    public let isPublic: Bool
    /// The space the route's requests touch: what a shard admits them by, and HAProxy routes them by.
    public let space: RouteSpace
    /// A page of the API explorer (`GET /docs`, its script and style, the redirect of `/`): public, not in the
    /// OpenAPI document (it is a page for people, not API), and a 404 on a server started with `--docs off`.
    public let isExplorer: Bool
    let endpoints: [Endpoint]
    /// Nil for the explorer's pages, which the document leaves out.
    let describe: Describer?
    /// Answered on a thread kept for such answers, not libmicrohttpd's worker thread
    /// (`HTTPResponse.answeredOffWorkerThread`): a shard's calls of a bucket move, which take seconds, while a
    /// worker thread serves many connections.
    public let answersOffWorkerThread: Bool

    init(_ template: RouteTemplate, public isPublic: Bool = false, space: RouteSpace, describedBy describe: @escaping Describer) {
        self.template = template
        self.answersOffWorkerThread = false
        self.isPublic = isPublic
        self.space = space
        switch space {
        case .pathSpace: precondition(template.segments.contains(.parameter(.space)), "\(template) has no {space}")
        case .module: precondition(template.segments.contains(.parameter(.module)), "\(template) has no {module}")
        case .none, .shard, .caller, .callerOrQuery, .firstCall: break
        }
        self.isExplorer = false
        self.endpoints = []
        self.describe = describe
    }

    /// A page of the API explorer (`isExplorer`).
    init(explorer template: RouteTemplate) {
        self.template = template
        self.isPublic = true
        self.space = .none
        self.isExplorer = true
        self.endpoints = []
        self.describe = nil
        self.answersOffWorkerThread = false
    }

    /// The route with these endpoints and this thread.
    private init(_ route: Route, endpoints: [Endpoint], offWorkerThread: Bool) {
        template = route.template
        isPublic = route.isPublic
        space = route.space
        isExplorer = route.isExplorer
        self.endpoints = endpoints
        describe = route.describe
        answersOffWorkerThread = offWorkerThread
    }

    /// The route with one more endpoint.
    private convenience init(_ route: Route, adding endpoint: Endpoint) {
        self.init(route, endpoints: route.endpoints + [endpoint], offWorkerThread: route.answersOffWorkerThread)
    }

    /// The route, answered off libmicrohttpd's worker thread (`answersOffWorkerThread`).
    func offWorkerThread() -> Route {
        Route(self, endpoints: endpoints, offWorkerThread: true)
    }

    /// Whether the OpenAPI document describes the route (every route but the explorer's pages).
    public var isDescribed: Bool { describe != nil }

    /// The methods the route takes, in the order `Allow` lists them.
    public var methods: [String] { endpoints.flatMap(\.methods) }

    /// The codes the route declares for a method (nil: it does not take the method); answered off the worker
    /// thread, also the transport's refusal past the limit of such answers.
    public func errors(of method: String) -> RouteErrors? {
        guard let errors = endpoints.first(where: { $0.methods.contains(method) })?.errors else { return nil }
        return answersOffWorkerThread ? RouteErrors([errors, [.request(.tooManyLongCalls)]]) : errors
    }

    /// `GET` (and `HEAD`, unless `head` is false: the body is built and dropped by the transport), giving `errors`.
    func get(head: Bool = true, errors: RouteErrors..., handler: @escaping Handler) -> Route {
        Route(self, adding: Endpoint(methods: head ? ["GET", "HEAD"] : ["GET"], errors: RouteErrors(errors), handler: handler))
    }
    func put(errors: RouteErrors..., handler: @escaping Handler) -> Route {
        Route(self, adding: Endpoint(methods: ["PUT"], errors: RouteErrors(errors), handler: handler))
    }
    func post(errors: RouteErrors..., handler: @escaping Handler) -> Route {
        Route(self, adding: Endpoint(methods: ["POST"], errors: RouteErrors(errors), handler: handler))
    }
    func delete(errors: RouteErrors..., handler: @escaping Handler) -> Route {
        Route(self, adding: Endpoint(methods: ["DELETE"], errors: RouteErrors(errors), handler: handler))
    }

    /// The handler of the request's method, or a 405 with `Allow`.
    func endpoint(_ request: HTTPRequest) throws(Problem) -> Endpoint {
        if let endpoint = endpoints.first(where: { $0.methods.contains(request.method) }) { return endpoint }
        var problem = Problem(.methodNotAllowed, "\(request.path.prefix(200)) takes \(methods.joined(separator: ", ")), not \(request.method.prefix(20))")
        problem.headers = [("Allow", methods.joined(separator: ", "))]
        throw problem
    }
}

extension Route.Endpoint {
    /// Runs the handler; what it throws comes back as a problem.
    func answer(_ gateway: Gateway, _ call: RouteCall) throws(Problem) -> HTTPResponse {
        do {
            return try handler(gateway, call)
        } catch {
            throw Problem(thrown: error)
        }
    }
}

/// A request as its route's handler gets it (Hummingbird's request and its context): the request, its
/// encoding, the path's parameters, and the request's context, which carries what is learnt while it is
/// answered (its caller, its shard ticket).
struct RouteCall {
    let request: HTTPRequest
    let encoding: JSONWriteOptions
    let parameters: RouteParameters
    let context: RequestContext

    init(request: HTTPRequest, encoding: JSONWriteOptions, parameters: RouteParameters, context: RequestContext) {
        self.request = request
        self.encoding = encoding
        self.parameters = parameters
        self.context = context
    }

    /// A request answered outside the route table (the metrics address): no parameters, a context of its own.
    init(request: HTTPRequest) {
        self.init(request: request, encoding: JSONWriteOptions(), parameters: RouteParameters(), context: RequestContext())
    }
}

/// The path's parameters, each read and checked once by the router. A handler reads only those of its own
/// template (another is a programming error, caught by the first call of the route).
///
/// The values are held in one object: the parameters are copied from the module set's table of paths, into the
/// request's `RouteCall`, and a copy retains that object alone, not each of seven strings (every request).
struct RouteParameters {
    private var values: Values

    fileprivate struct Fields {
        var module: String?
        var method: String?
        var space: StorageSpace?
        var kind: Gateway.CacheKind?
        var business: String?
        var cache: String?
        var key: String?
        var resolved: ResolvedMethod?
    }

    /// Never changed once made: the router reads a template's parameters into `Fields`, then makes one.
    private final class Values: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    /// The module and method themselves, when the module set's table of paths found them (`ModuleSet.callPaths`).
    var resolved: ResolvedMethod? { values.fields.resolved }
    /// A module's name (the engine says whether one has it).
    var module: String { present(values.fields.module, .module) }
    /// A method's name.
    var method: String { present(values.fields.method, .method) }
    var space: StorageSpace { present(values.fields.space, .space) }
    var kind: Gateway.CacheKind { present(values.fields.kind, .kind) }
    /// A business, checked (`Names.checkBusiness`).
    var business: String { present(values.fields.business, .business) }
    /// A cache name, checked (`Names.checkCacheName`).
    var cache: String { present(values.fields.cache, .cache) }
    /// A key, checked (`Names.checkKey`); the rest of the path, `/` included.
    var key: String { present(values.fields.key, .key) }
    /// Whether the template names a module's method (`/dao/{module}/{method}`).
    var hasModuleAndMethod: Bool { values.fields.module != nil && values.fields.method != nil }

    private func present<T>(_ value: T?, _ parameter: PathParameter) -> T {
        guard let value else { preconditionFailure("the route's template has no {\(parameter.rawValue)}") }
        return value
    }

    /// Reads one parameter's value: a business, cache name or key that is not one is a 400 `invalid_name`; a
    /// space or kind that is none is a 404 (a path no route has). A module or method is taken as named.
    fileprivate static func read(_ parameter: PathParameter, _ value: String, into fields: inout Fields) throws(Problem) {
        switch parameter {
        case .module: fields.module = value
        case .method: fields.method = value
        case .space:
            guard let space = StorageSpace(rawValue: value) else {
                throw Problem(.notFound, "the space is common or user, not '\(value.prefix(40))'")
            }
            fields.space = space
        case .kind:
            guard let kind = Gateway.CacheKind(rawValue: value) else {
                throw Problem(.notFound, "the cache routes are /lru/memory/{space}/… and /lru/disk/{space}/…")
            }
            fields.kind = kind
        case .business: fields.business = try Self.checked(value, Names.checkBusiness)
        case .cache: fields.cache = try Self.checked(value, Names.checkCacheName)
        case .key: fields.key = try Self.checked(value, Names.checkKey)
        }
    }

    /// No parameters (a template without any): one set of empty values for all.
    init() {
        values = Self.none
    }

    private static let none = Values(Fields())

    /// The parameters the router read (`RouteTemplate.parameters`).
    fileprivate init(_ fields: Fields) {
        values = Values(fields)
    }

    /// A DAO method's parameters, as the router reads them from `/dao/{module}/{method}`, with the module and
    /// method they name (`ModuleSet.callPaths`).
    init(module: Module, method: DAODialect.Method) {
        values = Values(Fields(module: module.name, method: method.name, resolved: ResolvedMethod(module: module, method: method)))
    }

    private static func checked(_ value: String, _ check: (String) throws(KeyValueError) -> Void) throws(Problem) -> String {
        do {
            try check(value)
        } catch {
            throw Problem(error)
        }
        return value
    }
}

/// A path parameter: what kind of name its segment holds.
public enum PathParameter: String, CaseIterable, Sendable {
    case module, method, space, kind, business, cache, key
}

/// A route's path: literal segments and `{parameter}`s; a `{key}` is the last and takes the rest of the path.
/// The root, `/`, is one empty literal segment, as the router splits the path `/`.
public struct RouteTemplate: Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(PathParameter)
    }

    public let segments: [Segment]
    public let description: String

    public init(stringLiteral path: String) {
        description = path
        guard path != "/" else {
            segments = [.literal("")]
            return
        }
        segments = path.split(separator: "/").map { part in
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return .literal(String(part)) }
            guard let parameter = PathParameter(rawValue: String(part.dropFirst().dropLast())) else {
                preconditionFailure("unknown path parameter \(part) in \(path)")
            }
            return .parameter(parameter)
        }
        if let key = segments.firstIndex(of: .parameter(.key)) {
            precondition(key == segments.count - 1, "{key} takes the rest of the path, so it is last: \(path)")
        }
    }

    /// Whether the decoded segments fit the template: its literals where they stand, as many segments (or more,
    /// for a `{key}`, which takes the rest).
    func fits(_ parts: [String]) -> Bool {
        if segments.last == .parameter(.key) {
            guard parts.count >= segments.count else { return false }
        } else {
            guard parts.count == segments.count else { return false }
        }
        for (index, segment) in segments.enumerated() {
            if case .literal(let literal) = segment, parts[index] != literal { return false }
        }
        return true
    }

    /// The parameters of segments that fit, each read and checked once.
    func parameters(_ parts: [String]) throws(Problem) -> RouteParameters {
        var fields = RouteParameters.Fields()
        for (index, segment) in segments.enumerated() {
            guard case .parameter(let parameter) = segment else { continue }
            let rest = parameter == .key && index < parts.count - 1
            try RouteParameters.read(parameter, rest ? parts[index...].joined(separator: "/") : parts[index], into: &fields)
        }
        return RouteParameters(fields)
    }

    /// The path with some parameters written out (`{space}` → `user`); the others stay `{name}`.
    func path(_ values: [PathParameter: String]) -> String {
        segments.map { segment in
            switch segment {
            case .literal(let text): "/" + text
            case .parameter(let parameter): "/" + (values[parameter] ?? "{\(parameter.rawValue)}")
            }
        }.joined()
    }
}

/// The router: the table's routes by their first segment, a literal in each.
struct Router: Sendable {
    private let routesByFirstSegment: [String: [Route]]

    init(_ routes: [Route]) {
        routesByFirstSegment = Dictionary(grouping: routes, by: { route in
            guard case .literal(let first)? = route.template.segments.first else {
                preconditionFailure("\(route.template) starts with a parameter")
            }
            return first
        })
    }

    /// The route the path fits and its parameters, checked: a 400 for a path that is not percent-encoded UTF-8
    /// or a parameter that is not what it names, a 404 when no template fits.
    func match(_ request: HTTPRequest) throws(Problem) -> (Route, RouteParameters) {
        let segments = try Self.pathSegments(request.path)
        for route in routesByFirstSegment[segments.first ?? ""] ?? [] where route.template.fits(segments) {
            return (route, try route.template.parameters(segments))
        }
        throw Problem(.notFound, "no route for \(request.method.prefix(20)) \(request.path.prefix(200)); see GET /openapi.json")
    }

    /// The decoded segments of a path, the leading `/` dropped; a path that does not start with `/` has none.
    static func pathSegments(_ path: String) throws(Problem) -> [String] {
        // Split on the byte, not on Characters: "/" followed by a combining
        // mark or an emoji modifier is one Character, and must still split.
        let segments = withUTF8Bytes(of: path) { bytes -> Result<[String], Problem> in
            guard bytes.first == UInt8(ascii: "/") else { return .success([]) }
            var segments: [String] = []
            // Allocated once, at its size, not grown segment by segment.
            var count = 0
            for byte in bytes where byte == UInt8(ascii: "/") { count += 1 }
            segments.reserveCapacity(count)
            var start = 1
            for index in 1...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                switch decodeSegment(UnsafeBufferPointer(rebasing: bytes[start..<index])) {
                case .success(let segment): segments.append(segment)
                case .failure(let problem): return .failure(problem)
                }
                start = index + 1
            }
            return .success(segments)
        }
        return try segments.get()
    }

    /// One segment, percent-decoded: UTF-8 without control characters, or a 400.
    private static func decodeSegment(_ raw: UnsafeBufferPointer<UInt8>) -> Result<String, Problem> {
        // The common case: printable ASCII with nothing to decode.
        if raw.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") }) {
            return .success(String(decoding: raw, as: UTF8.self))
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            guard raw[index] == UInt8(ascii: "%") else {
                decoded.append(raw[index])
                index += 1
                continue
            }
            guard index + 2 < raw.count, let high = hexValue(raw[index + 1]), let low = hexValue(raw[index + 2]) else {
                return .failure(Problem(.invalidPath, "a % in the path is not followed by two hexadecimal digits (write a % as %25)"))
            }
            decoded.append(high << 4 | low)
            index += 3
        }
        if let control = decoded.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            let hex = String(control, radix: 16, uppercase: true)
            return .failure(Problem(.invalidPath, "a path segment holds the control character %\(hex.count == 1 ? "0" : "")\(hex)"))
        }
        guard let text = String(validating: decoded, as: UTF8.self) else {
            return .failure(Problem(.invalidPath, "a path segment, decoded, is not UTF-8"))
        }
        return .success(text)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
