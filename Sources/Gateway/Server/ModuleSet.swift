import DAODialect
import DAOEngine

/// One generation of the modules a server answers with: the engine over
/// them and the OpenAPI document describing them, made once. Immutable: a
/// reload makes another and swaps it into the server's state whole
/// (`ServerState`), as PostgREST swaps its schema cache; a request reads the
/// set in use once and is answered by it from start to end.
public final class ModuleSet: Sendable {
    /// The engine over this set's modules (the databases are the server's, shared by every set).
    public let engine: Engine
    /// `GET /openapi.json`'s body.
    let openAPIDocument: [UInt8]
    /// Whether a module declares `access="admin"` (itself or a method): without one, no call looks for it.
    let hasAdminOnlyAccess: Bool
    /// The path of each method of the set as a caller sends it (`/dao/Demo/getItem`: no byte in it needs
    /// percent-encoding), with what the router reads from it: a call to one of them is routed with one lookup of
    /// its path, not split and decoded segment by segment (`Gateway.match`). Any other spelling of the same
    /// path (`%44emo`) goes through the router, which decodes it to the same parameters.
    let callPaths: FixedStringTable<RouteParameters>

    /// The set of `engine`'s modules, described once.
    init(engine: Engine, authentication: Authentication) throws {
        self.engine = engine
        self.hasAdminOnlyAccess = engine.modules.values.contains { $0.adminOnly || !$0.adminOnlyMethods.isEmpty }
        var callPaths: [String: RouteParameters] = [:]
        for module in engine.modules.values where Self.isLiteralSegment(module.name) {
            for method in module.methods where Self.isLiteralSegment(method.name) {
                let path = Gateway.callTemplate.path([.module: module.name, .method: method.name])
                callPaths[path] = RouteParameters(module: module, method: method)
            }
        }
        self.callPaths = FixedStringTable(callPaths)
        self.openAPIDocument = try OpenAPIDescription.json(OpenAPIDescription.document(
            modules: Array(engine.modules.values), descriptions: engine.descriptions, version: daogateVersion,
            jwt: { if case .jwt = authentication { true } else { false } }()))
    }

    /// Whether a name is a path segment as sent, which the router decodes to itself: printable ASCII without `/`
    /// or `%` (every identifier; the check keeps a name the dialect might allow from being matched raw).
    static func isLiteralSegment(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "%") }
    }

    /// A module folder read and checked, as `daogate check`, `daogate serve` and a reload all do it.
    public struct Loaded: Sendable {
        public var modules: [Module]
        /// The dialect's problems, then SQLite's (each initializer, upgrade and statement run or prepared).
        public var problems: [LoadError]
        /// The full table scans of the statements (`check --plans`); only asked of a set without problems,
        /// where plans mean something.
        public var warnings: [PlanWarning]
    }

    /// Reads every module of `directory` and checks it: the one load-and-check of modules.
    /// `plans`: also list the full table scans, when there is no problem.
    public static func load(_ directory: String, plans: Bool = true) -> Loaded {
        let (modules, loadErrors) = ModuleLoader.loadDirectory(directory)
        let problems = loadErrors + SQLCheck.check(modules)
        return Loaded(modules: modules, problems: problems, warnings: plans && problems.isEmpty ? SQLCheck.plans(modules) : [])
    }
}
