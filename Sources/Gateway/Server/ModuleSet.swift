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

    /// The set of `engine`'s modules, described once.
    init(engine: Engine, authentication: Authentication) throws {
        self.engine = engine
        self.hasAdminOnlyAccess = engine.modules.values.contains { $0.adminOnly || !$0.adminOnlyMethods.isEmpty }
        self.openAPIDocument = try OpenAPIDescription.json(OpenAPIDescription.document(
            modules: Array(engine.modules.values), descriptions: engine.descriptions, version: daogateVersion,
            jwt: { if case .jwt = authentication { true } else { false } }()))
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
