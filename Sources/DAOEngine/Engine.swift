import ASCIIBytes
import SQLiteDatabase
import DAODialect
import DAOValue
import Synchronization

/// Runs DAO modules on SQLite files: the server-side APDataCenter.
///
/// Thread-safe: libmicrohttpd's worker threads call it concurrently. Each
/// database file has one writer connection, and in WAL a pool of readers;
/// every write method runs in one transaction, every select in its own
/// snapshot.
public final class Engine: Sendable {
    public struct Configuration: Sendable {
        /// The folder that holds every database file.
        public var dataDirectory: String
        public var database: DatabaseConfiguration
        /// Database files open at once, whatever they hold; beyond it idle ones are closed.
        public var maximumOpenDatabases: Int
        /// File descriptors the open database files may hold; beyond it idle ones are closed.
        public var maximumOpenDescriptors: Int
        /// Bytes the open database files may hold (estimated, `DatabasePool.resourceCost`); beyond it idle ones are closed.
        public var maximumOpenBytes: Int
        /// The journal of users' files (`--user-journal`); the common and
        /// bound files keep WAL, as many callers read them at once.
        public var userJournal: JournalMode = .rollback
        /// The cipher of `crypt` properties; required when a module declares one.
        public var cipher: Cipher?
        /// Events of one database kept for a change feed's client to resume (`ChangeFeed.window`).
        public var changeWindow = 256
        /// How long a database's change window is kept once nobody follows it (`ChangeFeed.retention`).
        public var changeRetention = Duration.seconds(300)
        /// The most bytes the common space's files of every storage hold together (`DiskQuotas`); nil: no cap.
        /// What one user stores, all their storages together, is capped by `database.maximumDatabaseBytes`.
        public var maximumCommonBytes: Int?
        /// The custom storages (`X-Storage`) a user may have files in, the default storage not counted; nil: no bound.
        public var maximumStoragesPerUser: Int? = 16

        public init(dataDirectory: String, database: DatabaseConfiguration = .init(),
                    maximumOpenDatabases: Int = 100_000, maximumOpenDescriptors: Int = 4096,
                    maximumOpenBytes: Int = 256 << 20, cipher: Cipher? = nil) {
            self.dataDirectory = dataDirectory
            self.database = database
            self.maximumOpenDatabases = maximumOpenDatabases
            self.maximumOpenDescriptors = maximumOpenDescriptors
            self.maximumOpenBytes = maximumOpenBytes
            self.cipher = cipher
        }
    }

    public let configuration: Configuration
    /// The modules by name.
    public let modules: [String: Module]
    /// What each method takes and gives, inferred from the modules' own tables.
    public let descriptions: [String: [String: MethodDescription]]
    let argumentChecks: ArgumentChecks
    let registry: DatabaseRegistry
    let observer: (any EngineObserver)?
    /// The committed changes of module tables, for `GET /changes` (ChangeFeed.swift); an engine over
    /// reloaded modules shares it, as the connections' hooks report to it.
    public let changes: ChangeFeed
    /// Global arguments (`globalArguments`) by module name; an engine over
    /// reloaded modules (`replacingModules`) shares them.
    private let globalArguments: GlobalArguments

    /// - Throws: when a module declares `crypt` and no cipher is configured.
    public convenience init(modules: [Module], configuration: Configuration, observer: (any EngineObserver)? = nil) throws(EngineError) {
        try self.init(modules: modules, configuration: configuration, observer: observer,
                      registry: DatabaseRegistry(root: configuration.dataDirectory, budget: configuration.openFileBudget,
                                                 configuration: configuration.database, userJournal: configuration.userJournal,
                                                 maximumCommonBytes: configuration.maximumCommonBytes,
                                                 maximumStoragesPerUser: configuration.maximumStoragesPerUser),
                      globalArguments: GlobalArguments(),
                      changes: ChangeFeed(window: configuration.changeWindow, retention: configuration.changeRetention))
    }

    private init(modules: [Module], configuration: Configuration, observer: (any EngineObserver)?,
                 registry: DatabaseRegistry, globalArguments: GlobalArguments, changes: ChangeFeed) throws(EngineError) {
        if configuration.cipher == nil, let module = modules.first(where: { !$0.encryptedProperties.isEmpty }) {
            throw EngineError(.encryption, "module \(module.name) encrypts properties (<crypt>), but no key is configured: \(CipherKey.howToConfigure)")
        }
        if let cipher = configuration.cipher {
            try Self.checkKeys(cipher.keyring.snapshot, modules: modules)
        } else if let module = modules.first(where: { $0.keyID != nil }) {
            throw EngineError(.encryption, "module \(module.name) names the key '\(module.keyID!)', but no key is configured")
        }
        self.configuration = configuration
        self.modules = Dictionary(modules.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.descriptions = MethodDescriber.describe(modules)
        self.argumentChecks = ArgumentChecks(modules: modules, descriptions: descriptions)
        self.registry = registry
        self.observer = observer
        self.changes = changes
        self.globalArguments = globalArguments
    }

    /// An engine over another set of modules (a reload), on this engine's
    /// databases, global arguments, change feed and observer: the two run side by side,
    /// each call wholly on the engine it started on. A table whose module
    /// changed its version is brought up to date on its next call in each
    /// database, as at a start.
    ///
    /// - Throws: as `init`, when a module declares `crypt` and no cipher is configured.
    public func replacingModules(_ modules: [Module]) throws(EngineError) -> Engine {
        try Engine(modules: modules, configuration: configuration, observer: observer, registry: registry,
                   globalArguments: globalArguments, changes: changes)
    }

    /// Throws `keyMissing` naming the first module (by name) whose `key` the ring lacks.
    static func checkKeys(_ ring: Keyring.Snapshot, modules: some Collection<Module>) throws(EngineError) {
        for module in modules.sorted(by: { $0.name < $1.name }) {
            if let id = module.keyID, ring.keys[id] == nil {
                var error = EngineError(.keyMissing, "module \(module.name) (\(module.file):\(module.line)) names the key '\(id)', which is not in the keyring (\(Keyring.list(ring.keys.keys)))")
                error.keyID = id
                throw error
            }
        }
    }

    /// Throws unless `ring` holds every key a module of this engine names: a key folder reloaded without one is refused.
    public func checkKeys(_ ring: Keyring.Snapshot) throws(EngineError) {
        try Self.checkKeys(ring, modules: modules.values)
    }

    /// Closes every database, after in-flight work; later calls fail.
    public func shutdown() { registry.closeAll() }

    /// Database files open right now.
    public var openDatabaseCount: Int { registry.openCount }

    /// What the open database files hold, as last measured.
    public var openDatabaseCost: ResourceCost { registry.openCost }

    /// Sets the global arguments every method of `module` may read (the
    /// reference's `globalArguments`); only names the module declares in
    /// `globals` are visible.
    public func setGlobalArguments(_ arguments: [String: Value], module: String) throws(EngineError) {
        _ = try self.module(module)
        globalArguments.values.withLock { $0[module] = arguments }
    }

    public func globalArguments(module: String) -> [String: Value] {
        globalArguments.values.withLock { $0[module] ?? [:] }
    }

    /// The global arguments a call of `module` sees: none, without a lock,
    /// when the module declares none.
    func globals(of module: Module) -> [String: Value] {
        module.globals.isEmpty ? [:] : globalArguments(module: module.name)
    }
}

/// The global arguments of every module, by module name: kept across reloads.
final class GlobalArguments: Sendable {
    let values = Mutex<[String: [String: Value]]>([:])
}

/// Who a call is for: the reference's current user and custom storage.
public struct CallContext: Sendable, Hashable {
    /// The caller's user id; required by user-dependent modules.
    public var user: String?
    /// A custom storage, overriding the module's `storage` attribute.
    public var storage: String?

    public init(user: String? = nil, storage: String? = nil) {
        self.user = user
        self.storage = storage
    }
}

/// One method call.
public struct Call: Sendable {
    public var module: String
    public var method: String
    /// A JSON object by name, an array by position, or null.
    public var arguments: Value
    /// The table of a template module (the reference's `setTableName`).
    public var table: String?

    public init(module: String, method: String, arguments: Value = .null, table: String? = nil) {
        self.module = module
        self.method = method
        self.arguments = arguments
        self.table = table
    }
}

/// A module's method as found once, ahead of its calls (`Engine.call(_:arguments:table:context:)`). A class: a
/// call copies one reference.
package final class ResolvedMethod: Sendable {
    package let module: Module
    package let method: Method

    package init(module: Module, method: Method) {
        self.module = module
        self.method = method
    }
}

/// What a call returns.
public enum CallResult: Sendable, Equatable {
    /// A select's result, shaped by its `result` type.
    case value(Value)
    /// A write's `APDAOResult`.
    case write(WriteResult)
}

/// The reference's `APDAOResult`: success is implied (failures throw).
public struct WriteResult: Sendable, Equatable {
    /// Rows inserted, updated or deleted.
    public var changes: Int
    /// The rowid of the last row this call inserted, 0 when it inserted none.
    public var lastInsertRowID: Int64

    public init(changes: Int, lastInsertRowID: Int64) {
        self.changes = changes
        self.lastInsertRowID = lastInsertRowID
    }
}

/// A call resolved to its module, method, database and table.
struct Target {
    let module: Module
    let method: Method
    let location: DatabaseLocation
    let table: TableChoice
}

/// The table of a call, and whether the caller named it (then it must be the module's own).
struct TableChoice: Equatable {
    let name: String
    let chosenByCaller: Bool
}

/// Whether two names are the same table in SQLite, which compares identifiers without regard to ASCII case
/// (and byte for byte otherwise: not as Swift compares strings, which would equate canonically equivalent ones).
public func sameTable(_ name: String, _ other: String?) -> Bool {
    guard let other else { return false }
    return asciiCaseInsensitiveEquals(name, other)
}

extension Engine {
    /// Resolves a module and method by name, with no database involved.
    public func method(_ module: String, _ method: String) throws(EngineError) -> (Module, Method) {
        let found = try self.module(module)
        guard let method = found.method(named: method) else {
            let methods = found.methods.map(\.name)
            var error = EngineError(.unknownMethod, "module \(module) has no method '\(method.prefix(80))'; "
                + (methods.isEmpty ? "it has none" : "its methods are \(methods.joined(separator: ", "))"))
            error.methods = methods
            throw error
        }
        return (found, method)
    }

    /// The database a module uses for a caller.
    public func location(of module: Module, context: CallContext) throws(EngineError) -> DatabaseLocation {
        if let database = module.database { return .file(database) }
        // The module's own storage was checked when it loaded.
        if let storage = context.storage, let problem = storageNameProblem(storage) {
            throw EngineError(.invalidStorage, "storage '\(storage.prefix(80))': \(problem)")
        }
        let storage = context.storage ?? module.storage
        guard module.userDependent else { return .common(storage: storage) }
        guard let user = context.user else {
            throw EngineError(.userRequired, "module \(module.name) keeps each user's data apart: the call needs a user id")
        }
        return .user(try UserID(user), storage: storage)
    }

    /// The table a call works on: the module's own (`tableName`), or for a
    /// template module the one the call names (`X-Table-Name`, the
    /// reference's `setTableName`).
    ///
    /// A table the caller names is confined to the module: a valid name, not
    /// a storage layer's (`tableNameProblem`), not another module's fixed
    /// table; whether the caller's storage gives it to another module is
    /// checked when the call reaches the database (`claim`). A module with a
    /// table of its own takes no other: its statements are compiled for that
    /// table, and the reference keeps one file over several tables for
    /// templates (an empty `tableName`).
    public func tableName(of module: Module, requested: String?) throws(EngineError) -> String {
        try table(of: module, requested: requested).name
    }

    func table(of module: Module, requested: String?) throws(EngineError) -> TableChoice {
        if let fixed = module.tableName {
            guard let requested, !sameTable(requested, fixed) else { return TableChoice(name: fixed, chosenByCaller: false) }
            throw EngineError(.invalidTable, "module \(module.name) always uses its table \(fixed); only a template module (no tableName) takes a table name")
        }
        guard module.isTemplate else {
            // No tableName and no ${T}: the module names no table. Its
            // initializer's version is kept under a name no table can take.
            if let requested {
                throw EngineError(.invalidTable, "module \(module.name) names no table (no tableName, no ${T}); '\(requested.prefix(80))' is only for template modules")
            }
            return TableChoice(name: ReservedTableNames.daogatePrefix + "module_" + module.name, chosenByCaller: false)
        }
        guard let requested else {
            throw EngineError(.invalidTable, "module \(module.name) is a template (no tableName, and its statements write ${T}): the call must name its table")
        }
        if let problem = tableNameProblem(requested) {
            throw EngineError(.invalidTable, "table '\(requested.prefix(80))': \(problem)")
        }
        if let owner = modules.values.first(where: { $0.name != module.name && sameTable(requested, $0.tableName) }) {
            throw EngineError(.invalidTable, "table '\(requested)' is module \(owner.name)'s; module \(module.name) may only use tables of its own")
        }
        return TableChoice(name: requested, chosenByCaller: true)
    }

    func target(of call: Call, context: CallContext) throws(EngineError) -> Target {
        let (module, method) = try self.method(call.module, call.method)
        return try target(module, method, table: call.table, context: context)
    }

    /// The target of a call of `method`, with the table the call names, for the caller `context` says.
    private func target(_ module: Module, _ method: Method, table: String?, context: CallContext) throws(EngineError) -> Target {
        Target(module: module, method: method, location: try location(of: module, context: context),
               table: try self.table(of: module, requested: table))
    }

    /// A call's arguments in the slots its method renders from, each checked (declared type and inferred
    /// shape) as it is placed: one walk. The built-in global `userId` is the context's user (null without
    /// one, or without a context: the initializer running by itself).
    private func frame(of arguments: Value, _ target: Target, _ context: CallContext?) throws(RenderError) -> Frame {
        let method = target.method
        var globals = globals(of: target.module)
        if target.module.usesUserID {
            globals[Module.userIDGlobal] = context?.user.map(Value.string) ?? .null
        }
        let argumentChecks = argumentChecks
        guard let checks = argumentChecks.checks(of: method) else {
            return try method.frame(arguments: arguments, globals: globals)
        }
        return try method.frame(arguments: arguments, globals: globals) { position, value throws(RenderError) in
            try argumentChecks.check(value, checks[position], path: method.arguments[position].name, method: method)
        }
    }

    /// Renders a call: nothing runs when this throws.
    func render(_ arguments: Value, _ target: Target, _ context: CallContext?) throws(EngineError) -> [RenderedRun] {
        do {
            return try target.method.render(frame: try frame(of: arguments, target, context), table: target.table.name)
        } catch {
            throw EngineError(error)
        }
    }

    /// Runs one method call.
    public func call(_ call: Call, context: CallContext = CallContext()) throws(EngineError) -> CallResult {
        try run(call.arguments, try target(of: call, context: context), context)
    }

    /// Runs a call of a method the caller found ahead (a server's paths of its methods, `ModuleSet.callPaths`),
    /// from its parts: no `Call` made, copied into the engine and destroyed twice on every request. `resolved`
    /// holds one of this engine's `modules` and its method, not looked up again by name.
    package func call(_ resolved: ResolvedMethod, arguments: Value, table: String?,
                      context: CallContext) throws(EngineError) -> CallResult {
        try run(arguments, try target(resolved.module, resolved.method, table: table, context: context), context)
    }

    private func run(_ arguments: Value, _ target: Target, _ context: CallContext) throws(EngineError) -> CallResult {
        if target.method.kind == .select, target.method.foreach == nil, target.method.singleStatement != nil {
            return .value(try selectSingle(arguments, target, context))
        }
        let runs = try render(arguments, target, context)
        return try withDatabase(target.location) { database throws(EngineError) in
            if target.method.kind == .select {
                return .value(try reading(target, in: database) { db throws(EngineError) in
                    try select(target, runs, on: db)
                })
            }
            return .write(try writing([target], in: database) { db throws(EngineError) in
                try transaction(db) { () throws(EngineError) in try write(target, runs, on: db) }
            })
        }
    }

    /// The common select: one statement (`Method.singleStatement`, read where the method keeps it), no
    /// `foreach`, no `<try>`.
    private func selectSingle(_ arguments: Value, _ target: Target, _ context: CallContext) throws(EngineError) -> Value {
        let rendered: RenderedStatement?
        do throws(RenderError) {
            var frame = try frame(of: arguments, target, context)
            switch try target.method.singleStatement!.render(frame: &frame, table: target.table.name, method: target.method.qualifiedName) {
            case .run(let statement): rendered = statement
            case .quit, .nothing: rendered = nil
            }
        } catch {
            throw EngineError(error)
        }
        let type = target.method.result ?? .array(.row)
        // Leased and given back here, not in a closure of `withDatabase`: its captures would be copies.
        let lease = try registry.lease(target.location)
        defer { registry.release(lease) }
        guard let rendered else {
            try prepareTable(target.module, target.table, in: lease.database)
            return type.noRows
        }
        return try reading(target, in: lease.database) { db throws(EngineError) in
            try query(rendered, type, target.origin, on: db)
        }
    }
}

// MARK: Typed-throw adapters over the SQLite layer's rethrowing closures

extension EngineError {
    /// What a rethrowing body of the SQLite layer threw, as an engine error.
    init(adapting error: any Error) {
        switch error {
        case let error as EngineError: self = error
        case let error as SQLiteError: self.init(error, method: nil, line: nil, file: nil)
        default: self.init(.storageFailed, "\(error)")
        }
    }
}

/// Runs `body`, giving what it throws the engine's type.
func adapting<T>(_ body: () throws -> T) throws(EngineError) -> T {
    do {
        return try body()
    } catch {
        throw EngineError(adapting: error)
    }
}

extension Engine {
    func withDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws(EngineError) -> T) throws(EngineError) -> T {
        try adapting { try registry.withDatabase(location) { database in try body(database) } }
    }

    /// As `withDatabase`, for reads and for what is a no-op on an empty
    /// database: nil, creating no file, when the location has none.
    func withDatabaseIfExists<T>(_ location: DatabaseLocation,
                                 _ body: (OpenDatabase) throws(EngineError) -> T) throws(EngineError) -> T? {
        try adapting { try registry.withExistingDatabase(location) { database in try body(database) } }
    }

    /// With `allOrNothing` (a body that is one transaction, or bookkeeping
    /// that may run twice), a write that ran out of file descriptors, and so
    /// was rolled back, runs once more after the idle databases and readers
    /// gave theirs back.
    func withWriter<T>(_ database: OpenDatabase, allOrNothing: Bool = false,
                       _ body: (Database) throws(EngineError) -> T) throws(EngineError) -> T {
        do {
            return try adapting { try database.pool.write { db in observeChanges(db, of: database); return try body(db) } }
        } catch where allOrNothing && error.code == .overloaded && registry.relieve() {
            return try adapting { try database.pool.write { db in observeChanges(db, of: database); return try body(db) } }
        }
    }

    /// A read that ran out of file descriptors (to open a reader, its
    /// `-wal`, a temporary file) runs once more after the idle databases and
    /// readers gave theirs back: a read can run twice.
    func withReader<T>(_ database: OpenDatabase, _ body: (Database) throws(EngineError) -> T) throws(EngineError) -> T {
        do {
            return try adapting { try database.pool.read { db in try body(db) } }
        } catch where error.code == .overloaded && registry.relieve() {
            return try adapting { try database.pool.read { db in try body(db) } }
        }
    }

    /// A read of a module's table on a reader, once the table is ready. A
    /// read that fails while the table was being dropped (`deleteTable`) is
    /// tried once more on the writer, which drops hold, once the table is
    /// ready again there: a call that overlaps a drop runs before it, or after
    /// it on the table created again.
    func reading<T>(_ target: Target, in database: OpenDatabase,
                    _ body: (Database) throws(EngineError) -> T) throws(EngineError) -> T {
        let drops = database.readiness.drops.load(ordering: .sequentiallyConsistent)
        try prepareTable(target.module, target.table, in: database)
        do {
            return try withReader(database, body)
        } catch {
            guard database.readiness.drops.load(ordering: .sequentiallyConsistent) != drops else { throw error }
            return try writing([target], in: database, body)
        }
    }

    /// `body` on the writer, once the targets' tables are ready: checked
    /// under the writer, so that a table dropped meanwhile is created again
    /// before `body` runs. Table events are reported, and the tables recorded
    /// as ready, once the writer is released (`Readied`).
    func writing<T>(_ targets: [Target], in database: OpenDatabase,
                    _ body: (Database) throws(EngineError) -> T) throws(EngineError) -> T {
        var readied = Readied()
        defer { publish(readied, in: database) }
        return try withWriter(database, allOrNothing: true) { db throws(EngineError) -> T in
            for target in targets { try readyTable(target.module, target.table, in: database, on: db, into: &readied) }
            return try body(db)
        }
    }

    /// `body` in `BEGIN IMMEDIATE … COMMIT` (a savepoint when nested); rolled back when it throws.
    func transaction<T>(_ db: Database, _ body: () throws(EngineError) -> T) throws(EngineError) -> T {
        try adapting { try db.inTransaction(.immediate) { try body() } }
    }

    /// `body` in a savepoint; rolled back to it when it throws.
    func savepoint<T>(_ db: Database, _ body: () throws(EngineError) -> T) throws(EngineError) -> T {
        try adapting { try db.inSavepoint { try body() } }
    }
}
