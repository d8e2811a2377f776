import DAODialect
import DAOEngine
import DAOValue
import HTTPTransport

/// Introspection and the reference's proxy operations, under `/modules/{module}`
/// (apart from `/dao/`, so no method id can collide with them).
extension Gateway {
    /// `GET /modules`.
    func modules() -> Value {
        let modules = engine.modules.values.sorted { $0.name < $1.name }
        return ["modules": .array(modules.map { module in
            [
                "name": .string(module.name), "table": module.tableName.map(Value.string) ?? .null,
                "version": .string(module.version.description), "userDependent": .bool(module.userDependent),
                "methods": .array(module.methods.map { .string($0.name) }),
            ]
        })]
    }

    /// The module a `/modules/{module}/…` call names (404 `unknown_module`), the caller's context, and
    /// `X-Table-Name`, checked whenever sent, as the description says, and confined to the module's own
    /// tables (the engine). A proxy operation (all but the description) is an admin's on an admin-only module.
    private func moduleScope(_ call: RouteCall, proxy: Bool = true) throws(Problem) -> (Module, CallContext, table: String?) {
        let name = call.parameters.module
        guard let module = engine.modules[name] else {
            throw Problem(.unknownModule, "no module is named '\(name.prefix(80))'")
        }
        let context = try context(call)
        if proxy { try authorizeAccess(module: name, method: nil, call) }
        let table = try self.header(call.request, Self.tableHeader)
        if let table, let problem = tableNameProblem(table) {
            throw Problem(.invalidTable, "table '\(table.prefix(80))': \(problem)")
        }
        return (module, context, table)
    }

    /// Runs an engine operation; its errors become problems.
    private func engineCall<T>(_ body: () throws -> T) throws(Problem) -> T {
        do {
            return try body()
        } catch {
            throw Problem(thrown: error)
        }
    }

    /// `GET /modules/{module}`.
    func describeModule(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, context, table) = try moduleScope(call, proxy: false)
        return json(try engineCall { try describe(module, context: context, table: table) }, call.encoding)
    }

    /// `GET /modules/{module}/last-insert-rowid`.
    func lastInsertRowID(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, context, _) = try moduleScope(call)
        return json(["lastInsertRowId": .integer(try engineCall { try engine.lastInsertRowID(module: module.name, context: context) })],
                    call.encoding)
    }

    /// `DELETE /modules/{module}/table`. With the admin's token, the module's table is dropped even when another
    /// module made it (`table_owned` otherwise): how the admin frees a name a template's caller took first.
    func deleteTable(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, context, table) = try moduleScope(call)
        try authorizeChange(of: module, context: context, call)
        let admin = (try? authorizeAdmin(call)) != nil
        return try engineCall {
            let existed = try engine.deleteTable(module: module.name, table: table, context: context, whoeverMadeIt: admin)
            return json(["deleted": .bool(existed), "table": .string(try engine.tableName(of: module, requested: table))])
        }
    }

    /// `POST /modules/{module}/tables/delete`: the tables matching a pattern.
    func deleteTables(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, context, _) = try moduleScope(call)
        try authorizeChange(of: module, context: context, call)
        let example = #"{"pattern": "chat_\\d+", "vacuum": false}"#
        let body = try bodyObject(call.request, allowed: ["pattern", "vacuum"], example: example)
        guard case .string(let pattern)? = body["pattern"] else {
            throw Problem(.invalidBody, "the pattern is a string: \(example)")
        }
        var vacuum = false
        switch body["vacuum"] {
        case nil, .null?: break
        case .bool(let flag)?: vacuum = flag
        default: throw Problem(.invalidBody, "vacuum must be true or false")
        }
        var progress: [Value] = []
        let deleted = try engineCall {
            try engine.deleteTables(module: module.name, matching: pattern, vacuum: vacuum, context: context) {
                progress.append(.double($0))
            }
        }
        return json(["deleted": .array(deleted.tables.map(Value.string)), "vacuumed": .bool(deleted.vacuumed),
                     "progress": .array(progress)])
    }

    /// `POST /modules/{module}/vacuum`.
    func vacuum(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, context, _) = try moduleScope(call)
        try authorizeChange(of: module, context: context, call)
        try engineCall { try engine.vacuum(module: module.name, context: context) }
        return json(["ok": true])
    }

    /// `GET /modules/{module}/globals` (admin).
    func globals(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, _, _) = try moduleScope(call)
        try authorizeAdmin(call)
        return globalsResponse(module, call.encoding)
    }

    /// `PUT /modules/{module}/globals` (admin): replaces them, only names the module declares.
    func setGlobals(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (module, _, _) = try moduleScope(call)
        try authorizeAdmin(call)
        guard case .object(let values) = try jsonBody(call.request) else {
            throw Problem(.invalidBody, "the global arguments are a JSON object of name → value")
        }
        if let unknown = values.keys.first(where: { !module.globals.contains($0) }) {
            throw Problem(.invalidBody, "module \(module.name) declares no global argument '\(unknown.prefix(40))' (globals: \(module.globals.joined(separator: ", ")))")
        }
        try engineCall { try engine.setGlobalArguments(Dictionary(uniqueKeysWithValues: values.map { ($0.key, $0.value) }), module: module.name) }
        return globalsResponse(module, call.encoding)
    }

    private func globalsResponse(_ module: Module, _ encoding: JSONWriteOptions) -> HTTPResponse {
        let globals = engine.globalArguments(module: module.name)
        return json(.object(OrderedObject(uniqueKeysWithValues: globals.sorted { $0.key < $1.key })), encoding)
    }

    /// `GET /modules/{module}`: its methods with arguments and result types,
    /// its table and version, and the stored version in the caller's storage.
    func describe(_ module: Module, context: CallContext, table: String?) throws(EngineError) -> Value {
        var description: OrderedObject = [
            "name": .string(module.name),
            "table": module.tableName.map(Value.string) ?? .null,
            "template": .bool(module.isTemplate),
            "version": .string(module.version.description),
            "userDependent": .bool(module.userDependent),
            "storage": module.storage.map(Value.string) ?? .null,
            "database": module.database.map(Value.string) ?? .null,
            "initializer": module.initializer.map(Value.string) ?? .null,
            "globals": .array(module.globals.map(Value.string)),
        ]
        // The caller's storage: only when the call would reach it (a user-dependent
        // module needs the caller's user id; a template its table).
        var reachable = true
        do {
            _ = try engine.location(of: module, context: context)
        } catch where error.code == .userRequired {
            reachable = false
        }
        if reachable {
            if module.isTemplate {
                description["tables"] = .array(try engine.tables(module: module.name, context: context).map {
                    ["table": .string($0.table), "version": $0.version.map { .string($0.description) } ?? .null]
                })
            }
            if !module.isTemplate || table != nil {
                description["storedVersion"] = try engine.storedVersion(module: module.name, table: table, context: context)
                    .map { .string($0.description) } ?? .null
            }
        }
        description["methods"] = .array(module.methods.map { method in
            var entry: OrderedObject = [
                "name": .string(method.name),
                "kind": .string(method.kind.rawValue),
                "path": .string("/dao/\(module.name)/\(method.name)"),
                "arguments": .array(method.arguments.map { argument in
                    ["name": .string(argument.name), "required": .bool(argument.required),
                     "type": argument.type.map { .string($0.description) } ?? .null]
                }),
                "result": method.result.map { .string($0.description) } ?? .null,
            ]
            if let foreach = method.foreach {
                entry["foreach"] = .string("\(method.arguments[foreach.collection].name).\(foreach.item)")
            }
            if let documentation = method.documentation { entry["documentation"] = .string(documentation) }
            return .object(entry)
        })
        return .object(description)
    }

    /// Destructive operations reach shared databases only with the admin
    /// token; a caller's own database is theirs to clean.
    func authorizeChange(of module: Module, context: CallContext, _ call: RouteCall) throws(Problem) {
        do {
            if case .user = try engine.location(of: module, context: context) { return }
        } catch {
            throw Problem(error)
        }
        try authorizeAdmin(call)
    }
}
