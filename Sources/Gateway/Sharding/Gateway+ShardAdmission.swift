import DAODialect
import DAOEngine
import DAOValue
import HTTPTransport
import Sharding

/// A layer around the routes' handlers (Hummingbird's `RouterMiddleware`, `apply(to:next:)`): it sees each
/// call with its route, and answers it itself or passes it on.
protocol RouteMiddleware {
    func apply(to call: RouteCall, route: Route, next: (RouteCall) throws(Problem) -> HTTPResponse) throws(Problem) -> HTTPResponse
}

/// A shard's admission (`serve --shard`), wrapped around the gateway's handlers: a request for a space
/// another shard owns is a 421 `misdirected_request` before anything is opened or created; a write to a
/// bucket being moved, and any request for a bucket this shard gave away moments ago, is a 503
/// `bucket_moving` with `Retry-After`. The space is the route's declared one (`Route.space`), resolved with
/// the path and the caller; an admitted request for a user's bucket is counted until it is answered (a freeze
/// waits for its writes, the removal of a bucket given away for all of them). A transaction's space is its first
/// call's, known once its body is read (`Gateway.admitTransaction`).
struct ShardAdmission: RouteMiddleware {
    let shard: Shard
    let gateway: Gateway

    func apply(to call: RouteCall, route: Route, next: (RouteCall) throws(Problem) -> HTTPResponse) throws(Problem) -> HTTPResponse {
        let ticket = ShardTicket(shard: shard)
        call.context.shardTicket = ticket
        defer { if let bucket = ticket.bucket { shard.finish(bucket: bucket, write: ticket.writes) } }
        try gateway.admit(try space(route.space, call), write: isWrite(call), ticket)
        return try next(call)
    }

    /// The space a request reaches, by its route's declaration: from the path's module or space, the query,
    /// and the caller.
    func space(_ declared: RouteSpace, _ call: RouteCall) throws(Problem) -> ShardSpace {
        func user() throws(Problem) -> ShardSpace? { try gateway.caller(call).user.map { .user($0.rawValue) } }
        switch declared {
        case .none, .shard, .firstCall:
            return .anywhere
        case .caller:
            return try user() ?? .common
        case .callerOrQuery:
            // A stream follows one space on a shard: the user's, or the common one when asked (or without a user).
            if call.request.query.contains(where: { $0.name == "space" && $0.value == "common" }) { return .common }
            return try user() ?? .common
        case .pathSpace:
            switch call.parameters.space {
            case .common: return .common
            case .user: return try user() ?? .anywhere
            }
        case .module:
            guard let module = call.parameters.resolved?.module ?? gateway.engine.modules[call.parameters.module] else {
                return .anywhere
            }
            guard module.userDependent, module.database == nil else { return .common }
            return try user() ?? .anywhere
        }
    }

    /// Whether a request may write: anything but GET and HEAD, and a method call that is not a select.
    func isWrite(_ call: RouteCall) -> Bool {
        let request = call.request
        if request.method == "GET" || request.method == "HEAD" { return false }
        if let resolved = call.parameters.resolved { return resolved.method.kind != .select }
        if call.parameters.hasModuleAndMethod, let module = gateway.engine.modules[call.parameters.module],
           let method = module.method(named: call.parameters.method) {
            return method.kind != .select
        }
        return true
    }
}

extension Gateway {
    /// The layers around the handlers: on a shard, its admission.
    func applyMiddleware(to call: RouteCall, route: Route, _ handler: (RouteCall) throws(Problem) -> HTTPResponse) throws(Problem) -> HTTPResponse {
        guard let shard = configuration.shard else { return try handler(call) }
        return try ShardAdmission(shard: shard, gateway: self).apply(to: call, route: route, next: handler)
    }


    /// A transaction's space is its first call's database (the shard refuses one the proxy sent to the wrong
    /// shard: HAProxy routes `/transaction` by `X-Space: common`, else by the user).
    func admitTransaction(_ calls: [Call], _ context: CallContext, _ request: RequestContext) throws(Problem) {
        guard let ticket = request.shardTicket, !ticket.checked,
              let first = calls.first, let module = engine.modules[first.module],
              let location = try? engine.location(of: module, context: context) else { return }
        let space: ShardSpace = if case .user(let user, _) = location { .user(user.rawValue) } else { .common }
        try admit(space, write: true, ticket)
    }

    fileprivate func admit(_ space: ShardSpace, write: Bool, _ ticket: ShardTicket) throws(Problem) {
        guard space != .anywhere else { return }  // nothing to check yet: a transaction is checked by its calls' database
        let shard = ticket.shard
        let (bucket, admission) = shard.admit(space, write: write)
        switch admission {
        case .admitted:
            ticket.checked = true
            ticket.bucket = bucket
            ticket.writes = write
        case .misdirected(let owner, let epoch):
            let what = bucket.map { "this user's bucket \($0)" } ?? "the common space"
            var problem = Problem(.misdirectedRequest, "\(what) belongs to shard \(owner) (shard map epoch \(epoch)), not to shard \(shard.name); nothing was read or created here")
            if let bucket { problem.extensions["bucket"] = .integer(Int64(bucket)) }
            problem.extensions["shard"] = .string(owner)
            problem.extensions["epoch"] = .integer(epoch)
            throw problem
        case .handedOver(let owner, let epoch):
            var problem = Problem(.bucketMoving, "this user's bucket \(bucket ?? 0) moved to shard \(owner) moments ago (shard map epoch \(epoch)); nothing was read or created here: try again, the proxy now sends it there")
            problem.extensions["bucket"] = .integer(Int64(bucket ?? 0))
            problem.extensions["shard"] = .string(owner)
            problem.extensions["epoch"] = .integer(epoch)
            problem.retry(after: 1)
            throw problem
        case .behind(let newer, let mapEpoch):
            let what = bucket.map { "this user's bucket \($0)" } ?? "the common space"
            var problem = Problem(.misdirectedRequest, "shard \(newer.shard) has shard map epoch \(newer.epoch) and this shard's map is epoch \(mapEpoch): \(what) may belong to another shard now, so shard \(shard.name) serves none of its spaces until its map is at least epoch \(newer.epoch); nothing was read or created here")
            if let bucket { problem.extensions["bucket"] = .integer(Int64(bucket)) }
            problem.extensions["epoch"] = .integer(newer.epoch)
            problem.extensions["mapEpoch"] = .integer(mapEpoch)
            throw problem
        case .frozen:
            var problem = Problem(.bucketMoving, "this user's bucket \(bucket ?? 0) is moving to another shard: reads go on, writes wait; try again")
            problem.extensions["bucket"] = .integer(Int64(bucket ?? 0))
            problem.retry(after: 1)
            throw problem
        }
    }

    // MARK: HAProxy's routing, from the same declarations

    /// What HAProxy sends to the common shard, derived from each route's declared space (`Route.space`) and
    /// the modules: a `{space}` route's common form, a common module's paths under a `{module}` route, and the
    /// routes whose space a header or the query names. `daogate haproxy-config` writes it.
    public static func shardRouting(modules: [Module]) -> ShardRouting {
        var exact: [String] = [], prefixes: [String] = [], header: [String] = [], query: [String] = []
        func add(_ template: RouteTemplate, _ values: [PathParameter: String]) {
            // The path up to the last parameter written out: whole when nothing follows, else a prefix.
            let fixed = template.segments.lastIndex { segment in
                if case .parameter(let parameter) = segment { values[parameter] != nil } else { false }
            } ?? template.segments.count - 1
            let path = template.segments.prefix(fixed + 1).map { segment in
                switch segment {
                case .literal(let text): "/" + text
                case .parameter(let parameter): "/" + values[parameter]!
                }
            }.joined()
            if fixed == template.segments.count - 1 {
                if !exact.contains(path) { exact.append(path) }
            } else if !prefixes.contains(path + "/") {
                prefixes.append(path + "/")
            }
        }
        let described = routes.filter(\.isDescribed)
        for route in described {
            switch route.space {
            case .pathSpace:
                let kinds = route.template.segments.contains(.parameter(.kind)) ? CacheKind.allCases.map(\.rawValue) : [""]
                for kind in kinds { add(route.template, kind.isEmpty ? [.space: "common"] : [.kind: kind, .space: "common"]) }
            case .firstCall: header.append(route.template.description)
            case .callerOrQuery: query.append(route.template.description)
            case .none, .shard, .caller, .module: break
            }
        }
        for module in modules.sorted(by: { $0.name < $1.name }) where !(module.userDependent && module.database == nil) {
            for route in described where route.space == .module { add(route.template, [.module: module.name]) }
        }
        return ShardRouting(commonPaths: exact, commonPrefixes: prefixes, spaceHeaderPaths: header, spaceQueryPaths: query)
    }
}
