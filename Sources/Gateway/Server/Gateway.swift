import DAODialect
import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport
import Logging
import Sharding

/// How the gateway answers, beyond the modules themselves.
public struct GatewayConfiguration: Sendable {
    /// The bearer token of administrative operations (global arguments,
    /// destructive operations on shared databases); nil disables them.
    public var adminToken: String?
    /// The limits of the memory caches: capacity, caches per space, bytes in all.
    public var memoryCaches: MemoryCaches.Limits
    /// The largest capacity of a disk cache.
    public var maximumDiskCacheCapacity: Int
    /// The time cache expiry compares with.
    public var clock: ExpiryClock
    /// Whether responses carry what the access log shows of the caller (a
    /// digest of the user id); without an access log there is no need to compute it.
    public var accessLog: Bool
    /// Whether `GET /metrics` is served on an address of its own (`Gateway.metricsResponder`), and so not on the
    /// API's; otherwise the API serves it to the admin token only.
    public var separateMetrics: Bool
    /// Who the caller is: `X-User-Id` as sent, or a verified JWT's claim.
    public var authentication: Authentication
    /// The shard this server is in a sharded deployment (`--shard`), or nil: every user is served.
    public var shard: Shard?
    /// The limits of `GET /changes` streams.
    public var changeStreams = ChangeStreamLimits()
    /// The folder of module files that a reload (`POST /admin/reload`, SIGHUP) reads; nil: no reload.
    public var modulesDirectory: String?
    /// Whether the API explorer is served (`GET /docs`, and `/` redirecting there); `--docs off` turns it off.
    public var explorer = true

    public init(adminToken: String? = nil, memoryCaches: MemoryCaches.Limits = .init(),
                maximumDiskCacheCapacity: Int = 1_000_000, clock: ExpiryClock = .system, accessLog: Bool = true,
                separateMetrics: Bool = false, authentication: Authentication = .trustedHeader, shard: Shard? = nil,
                modulesDirectory: String? = nil) {
        self.adminToken = adminToken
        self.shard = shard
        self.modulesDirectory = modulesDirectory
        self.separateMetrics = separateMetrics
        self.authentication = authentication
        self.memoryCaches = memoryCaches
        self.maximumDiskCacheCapacity = maximumDiskCacheCapacity
        self.clock = clock
        self.accessLog = accessLog
    }
}

/// The HTTP API of daogate: every DAO method a `POST` endpoint, plus
/// transactions, introspection, proxy operations, the key-value store, the
/// caches, health and the OpenAPI description. The routes are declared once,
/// in `Gateway.routes` (Gateway+Routes.swift); routing and error mapping live
/// here, apart from the socket, so they are tested in-process.
///
/// A gateway is the server's long-lived state (`ServerState`) seen through
/// one module set (`ModuleSet`). `respond` reads the set in use once per
/// request and answers with a gateway over it, so each request is answered
/// wholly by the set current when it arrived, and a reload swaps the set,
/// never the server (Gateway+Reload.swift).
public struct Gateway: HTTPResponder {
    /// What every module set shares, held once for the life of the server.
    public let state: ServerState
    /// The module set this gateway answers with.
    public let moduleSet: ModuleSet

    public var engine: Engine { moduleSet.engine }
    public var configuration: GatewayConfiguration { state.configuration }
    public var events: EventLog { state.events }
    var metrics: Metrics { state.metrics }
    var userDigests: UserDigests { state.userDigests }
    var openAPIDocument: [UInt8] { moduleSet.openAPIDocument }
    var kv: KVStore { state.kv }
    var memoryCaches: MemoryCaches { state.memoryCaches }
    var diskCaches: DiskCaches { state.diskCaches }
    var clock: ExpiryClock { configuration.clock }
    var changeStreams: ChangeStreams { state.changeStreams }

    /// The header naming the caller's user (their own storage).
    public static let userHeader = "X-User-Id"
    /// The header naming the table of a template module.
    public static let tableHeader = "X-Table-Name"
    /// The header naming a custom storage.
    public static let storageHeader = "X-Storage"
    /// `string` writes integers beyond ±(2^53 − 1) as JSON strings.
    public static let int64Header = "X-Int64-Format"
    /// The header fields of a JSON response, made once (not an array per response).
    static let jsonHeaders: [(name: String, value: String)] = [("Content-Type", "application/json")]

    /// A server over the engine's modules (a new `ServerState`); `GET /openapi.json` answers with
    /// their description (`OpenAPIDescription`), made once here.
    public init(engine: Engine, events: EventLog, configuration: GatewayConfiguration = GatewayConfiguration()) throws {
        let state = try ServerState(engine: engine, events: events, configuration: configuration)
        self.init(state: state, moduleSet: state.modules)
    }

    init(state: ServerState, moduleSet: ModuleSet) {
        self.state = state
        self.moduleSet = moduleSet
    }

    /// The gateway over the module set in use now.
    public var current: Gateway { Gateway(state: state, moduleSet: state.modules) }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        // The module set is read once: the whole request sees one. What is learnt while answering (the caller,
        // derived once however many steps ask; a shard's ticket) travels with the request in its context.
        return current.answer(request, RequestContext())
    }

    func answer(_ request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        var encoding = JSONWriteOptions()
        let response: HTTPResponse
        do {
            encoding = try int64Encoding(request, context)
            response = try route(request, encoding, context)
        } catch {
            response = explained(error).response(encoding)
        }
        // An answer worked out off the worker thread is counted and logged with what it answers, once it is (the
        // closure only then: made for every request, it would cost each an allocation).
        guard response.offWorkerThread == nil else { return response.changed { [self] in finished($0, request, context) } }
        return finished(consume response, request, context)
    }

    /// The response is taken, not lent: returned as it is, a lent one would be copied (a retain and release of each
    /// of its parts).
    private func finished(_ response: consuming HTTPResponse, _ request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        metrics.count(status: response.status)
        return withLogMetadata(response, request, context)
    }

    public func respond(to refusal: TransportRefusal, request: HTTPRequest) -> HTTPResponse {
        var problem = switch refusal {
        case .bodyTooLarge(let limit): Problem(.bodyTooLarge, "the body is larger than the limit of \(limit) bytes")
        case .shuttingDown: Problem(.shuttingDown, "the server is shutting down")
        case .invalidRequest(let reason): Problem(.invalidRequest, reason)
        case .unsupportedTransferCoding:
            Problem(.unsupportedTransferCoding, "the only Transfer-Encoding taken is chunked; send a Content-Length instead")
        case .tooManyLongCalls: Problem(.tooManyLongCalls, refusal.reason + "; nothing of this one was done")
        }
        if case .tooManyLongCalls = refusal { problem.retry(after: 1) }
        metrics.count(status: problem.status)
        return withLogMetadata(problem.response(JSONWriteOptions()), request, RequestContext())
    }

    /// Adds what the access log may show of the caller: a digest of the user, never the id.
    private func withLogMetadata(_ response: consuming HTTPResponse, _ request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        guard configuration.accessLog, let user = loggedUser(request, context) else { return response }
        var response = response
        response.logMetadata.append(("user", userDigests.digest(user)))
        return response
    }

    private func int64Encoding(_ request: HTTPRequest, _ context: RequestContext) throws(Problem) -> JSONWriteOptions {
        switch try header(request, .int64Format, context)?.lowercased() {
        case nil, "number": return JSONWriteOptions()
        case "string": return JSONWriteOptions(int64AsString: true)
        case let other?:
            throw Problem(.invalidHeader, "\(Self.int64Header) must be number or string, not '\(other.prefix(40))'")
        }
    }

    // MARK: Routing

    /// The route of the request (`Gateway.routes`), its parameters checked once; in jwt mode the token,
    /// unless the route is public; the method (405 with `Allow`); then the route's handler, through the
    /// layers that wrap it (on a shard, its admission: `applyMiddleware`, `ShardAdmission`).
    private func route(_ request: HTTPRequest, _ encoding: JSONWriteOptions, _ context: RequestContext) throws(Problem) -> HTTPResponse {
        let (route, parameters) = try match(request)
        if route.isExplorer, !configuration.explorer {
            throw Problem(.notFound, "no route for \(request.method.prefix(20)) \(request.path.prefix(200)): this server's API explorer is off (--docs off); see GET /openapi.json")
        }
        let call = RouteCall(request: request, encoding: encoding, parameters: parameters, context: context)
        // In jwt mode, no route reaching storage reads anything before the token is checked.
        if case .jwt = configuration.authentication, !route.isPublic { _ = try caller(call) }
        let endpoint = try route.endpoint(request)
        guard route.answersOffWorkerThread else {
            return try applyMiddleware(to: call, route: route) { call throws(Problem) in try endpoint.answer(self, call) }
        }
        return .answeredOffWorkerThread { [self] in
            do throws(Problem) {
                return try applyMiddleware(to: call, route: route) { call throws(Problem) in try endpoint.answer(self, call) }
            } catch {
                return explained(error).response(encoding)
            }
        }
    }

    /// The route of the request and its parameters: a call to one of the set's methods by its plain path with
    /// one lookup (`ModuleSet.callPaths`), anything else through the router.
    func match(_ request: HTTPRequest) throws(Problem) -> (Route, RouteParameters) {
        if let parameters = moduleSet.callPaths[request.path] { return (Self.callRoute, parameters) }
        return try Self.router.match(request)
    }

    // MARK: Service routes

    /// `GET /healthz`.
    func health() -> HTTPResponse {
        json(["status": "ok", "modules": .integer(Int64(engine.modules.count))])
    }

    /// `GET /openapi.json`, made once at start.
    func openAPIResponse() -> HTTPResponse {
        HTTPResponse(status: 200, headers: Self.jsonHeaders, body: openAPIDocument)
    }

    /// `GET /events`: the admin sees every storage's events; anyone else shared storages' and their own.
    func eventSummary(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let request = call.request
        let caller = try caller(call)
        var everything = caller.isAdmin
        if case .trustedHeader = configuration.authentication, try header(request, "Authorization") != nil {
            try authorizeAdmin(call)
            everything = true
        }
        return json(events.summary(user: caller.user, everything: everything))
    }

    /// `GET /metrics`: the admin's, unless served on the metrics address.
    func metrics(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        guard !configuration.separateMetrics else {
            throw Problem(.notFound, "the metrics are served on the metrics address (--metrics-listen), not here")
        }
        try authorizeAdmin(call)
        return metricsResponse()
    }

    /// The Prometheus exposition of the counters.
    func metricsResponse() -> HTTPResponse {
        let text = metrics.exposition(events: events, openDatabases: engine.openDatabaseCount,
                                      userDatabases: engine.userDatabaseUsage().map(\.bytes), memory: memoryCaches.budget)
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")], body: Array(text.utf8))
    }

    /// What the metrics address answers: `GET /metrics` to anyone who reaches it (a network only Prometheus
    /// reaches), problem+json refusals otherwise.
    /// The responder of the metrics address. Beyond loopback (`requiresAdmin`)
    /// it asks for the admin's credentials as `/metrics` does on the API's
    /// address, so that whoever reaches the port still cannot read it.
    public func metricsResponder(requiresAdmin: Bool) -> some HTTPResponder {
        MetricsResponder(gateway: self, requiresAdmin: requiresAdmin)
    }

    /// Refuses a method the metrics address does not take (405, with `Allow`); the API's routes take theirs
    /// from the table (`Route.handler`).
    func allow(_ request: HTTPRequest, _ methods: [String]) throws(Problem) {
        guard !methods.contains(request.method) else { return }
        var problem = Problem(.methodNotAllowed, "\(request.path.prefix(200)) takes \(methods.joined(separator: ", ")), not \(request.method.prefix(20))")
        problem.headers = [("Allow", methods.joined(separator: ", "))]
        throw problem
    }

    // MARK: Requests

    /// The caller's user and storage, from the headers: the one place every
    /// route learns who calls. In trusted-header mode the user is `X-User-Id`;
    /// in jwt mode the token's claim (`authenticate`). Either header, when
    /// sent, must be valid (even where a route would not use it), as the description says. Derived once per
    /// request, and kept in its context.
    func caller(_ call: RouteCall) throws(Problem) -> Caller {
        try deriveCaller(call)
        return call.context.caller!
    }

    /// Derives the caller into the request's context, unless it is there already (`caller(_:)`, without a copy
    /// of it to return).
    func deriveCaller(_ call: RouteCall) throws(Problem) {
        if call.context.hasCaller { return }
        var userHeader = try header(call.request, .user, call.context)
        if let sent = userHeader { userHeader = try Self.decodedUserHeader(sent) }
        switch configuration.authentication {
        case .trustedHeader:
            let user: UserID?
            do {
                user = try userHeader.map(UserID.init)
            } catch {
                throw Problem(error)
            }
            // Made where the context keeps it: a caller made first and stored then would be copied and destroyed
            // (a retain and release of each of its strings, every request).
            call.context.caller = Caller(user: user, storage: try storage(call))
        case .jwt(let verifier):
            var caller = try authenticate(verifier, call.request, userHeader: userHeader)
            caller.storage = try storage(call)
            call.context.caller = caller
        }
    }

    /// The custom storage `X-Storage` names, nil when none; a name no storage can have is refused.
    private func storage(_ call: RouteCall) throws(Problem) -> String? {
        let storage = nonEmpty(try header(call.request, .storage, call.context))
        if let storage, let problem = storageNameProblem(storage) {
            throw Problem(.invalidStorage, "storage '\(storage.prefix(80))': \(problem)")
        }
        return storage
    }

    /// The value of a header the gateway reads; every one takes a single value,
    /// so a header sent twice is a 400 `duplicate_header` (which copy counts
    /// would be ambiguous, and a proxy in front could have checked the other).
    func header(_ request: HTTPRequest, _ name: String) throws(Problem) -> String? {
        do {
            return try request.header(name)
        } catch {
            throw Problem(.duplicateHeader, "the header \(error.name) was sent more than once; it takes one value")
        }
    }

    /// `header(_:_:)` for a field most requests have read: from the request's one walk over its fields, kept in
    /// its context.
    func header(_ request: HTTPRequest, _ header: GatewayHeader, _ context: RequestContext) throws(Problem) -> String? {
        // Not `context.headers ?? GatewayHeaders(request)`: the autoclosure would capture a copy of the request
        // (a retain and release of each of its parts) on every call, found or not.
        let headers: GatewayHeaders
        if let found = context.headers {
            headers = found
        } else {
            headers = GatewayHeaders(request)
            context.headers = headers
        }
        switch headers[header] {
        case GatewayHeaders.none: return nil
        case GatewayHeaders.more: throw Problem(.duplicateHeader, "the header \(header.name) was sent more than once; it takes one value")
        case let index: return request.headers[index].value
        }
    }

    /// `header(_:_:)` for a field most requests have read, in a route's handler.
    func header(_ call: RouteCall, _ header: GatewayHeader) throws(Problem) -> String? {
        try self.header(call.request, header, call.context)
    }

    /// The caller's user and storage, for the engine.
    func context(_ call: RouteCall) throws(Problem) -> CallContext {
        try deriveCaller(call)
        // The caller's two fields read where the context keeps it: no copy of the whole caller.
        return call.context.callContext
    }

    func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }

    /// The body as JSON: null when empty. A body needs `Content-Type: application/json`.
    func jsonBody(_ request: HTTPRequest) throws(Problem) -> Value {
        if request.body.isEmpty { return .null }
        return try jsonBody(request, contentType: try header(request, "Content-Type"))
    }

    /// `jsonBody(_:)` in a route's handler, its `Content-Type` from the request's one walk over its fields.
    func jsonBody(_ call: RouteCall) throws(Problem) -> Value {
        if call.request.body.isEmpty { return .null }
        return try jsonBody(call.request, contentType: try header(call, .contentType))
    }

    private func jsonBody(_ request: HTTPRequest, contentType: String?) throws(Problem) -> Value {
        guard let type = contentType else {
            throw Problem(.unsupportedMediaType, "a body needs Content-Type: application/json")
        }
        guard Self.isJSON(type) else {
            throw Problem(.unsupportedMediaType, "the body must be application/json (UTF-8), not \(type.prefix(80))")
        }
        do {
            return try Value(parsingJSON: request.body, options: JSONParseOptions(binaryMarkers: true))
        } catch {
            throw Problem(error)
        }
    }

    /// The body as an object with only `allowed` members.
    func bodyObject(_ request: HTTPRequest, allowed: [String], example: String) throws(Problem) -> OrderedObject {
        guard case .object(let members) = try jsonBody(request) else {
            throw Problem(.invalidBody, "the body is an object: \(example)")
        }
        if let extra = members.keys.first(where: { !allowed.contains($0) }) {
            throw Problem(.invalidBody, "unknown member '\(extra.prefix(40))': the body has \(allowed.joined(separator: ", "))")
        }
        return members
    }

    /// Whether a Content-Type is JSON in UTF-8: `application/json` or a `+json`
    /// type, with no charset or `charset=utf-8`, in any case.
    static func isJSON(_ contentType: String) -> Bool {
        if contentType == "application/json" { return true }
        let lowered = contentType.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        let parameters = lowered.split(separator: UInt8(ascii: ";")).map { part in
            part.drop { $0 == 32 || $0 == 9 }.reversed().drop { $0 == 32 || $0 == 9 }.reversed()
        }
        guard let media = parameters.first.map(Array.init) else { return false }
        let json = Array("application/json".utf8)
        guard media == json || media.reversed().starts(with: Array("+json".utf8).reversed()) else { return false }
        return parameters.dropFirst().allSatisfy { parameter in
            let bytes = Array(parameter)
            return !bytes.starts(with: Array("charset=".utf8)) || bytes == Array("charset=utf-8".utf8)
                || bytes == Array(#"charset="utf-8""#.utf8)
        }
    }

    // MARK: Responses

    /// A 200 `application/json` response.
    func json(_ value: Value, _ encoding: JSONWriteOptions = JSONWriteOptions()) -> HTTPResponse {
        HTTPResponse(status: 200, headers: Self.jsonHeaders, body: value.jsonBytes(options: encoding))
    }
}


/// The responder of the metrics address: `/metrics` only.
struct MetricsResponder: HTTPResponder {
    let gateway: Gateway
    let requiresAdmin: Bool

    func respond(to request: HTTPRequest) -> HTTPResponse {
        do throws(Problem) {
            guard request.path == "/metrics" else {
                throw Problem(.notFound, "the metrics address serves GET /metrics only")
            }
            try gateway.allow(request, ["GET", "HEAD"])
            if requiresAdmin { try gateway.authorizeAdmin(RouteCall(request: request)) }
            return gateway.metricsResponse()
        } catch {
            return error.response(JSONWriteOptions())
        }
    }

    func respond(to refusal: TransportRefusal, request: HTTPRequest) -> HTTPResponse {
        gateway.respond(to: refusal, request: request)
    }
}
