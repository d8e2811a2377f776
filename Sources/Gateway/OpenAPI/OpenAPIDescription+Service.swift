import DAODialect
import DAOEngine
import OpenAPIKit

/// The routes beside the methods: transactions, introspection, the proxy
/// operations, and the service's own.
extension OpenAPIDescription {
    /// `/transaction`.
    ///
    /// A call's `arguments` is any JSON (an object by name or an array by position): each method's own request
    /// body describes them, and the two-branch `oneOf` that said so broke openapi-generator's Java (it does not
    /// compile), Go (it matches neither branch) and TypeScript (it always sends `{}`). A call's result is one
    /// titled object, `CallResult`, whose members are all optional: a select's `result`, or a write's `ok`,
    /// `changes` and `lastInsertRowId`. A `oneOf` of the two results could not be told apart by Java's
    /// generated client, which checks neither `required` nor `additionalProperties`.
    mutating func transactionPaths(_ template: RouteTemplate) -> [DescribedPath] {
        addTransactionComponents()
        let call = JSONSchema.object(
            properties: [
                "module": .string(allowedValues: modules.map { .init($0.name) }),
                "method": .string,
                "arguments": .fragment(required: false, description: "The call's arguments: a JSON object by name or a JSON array by position, as the method's own request body describes them; left out or null, none. Any value in them, at any depth, may be a ResultReference (#/components/schemas/ResultReference), {\"$result\": \"/0/lastInsertRowId\"}: the value at that JSON Pointer in the results of the calls before this one."),
                "table": .string(required: false, nullable: true, description: "The table of a template module (else X-Table-Name).",
                                 minLength: 1, maxLength: 128, pattern: Self.identifierPattern),
            ],
            additionalProperties: .init(false))
        let operation = OpenAPI.Operation(
            tags: ["daogate"],
            summary: "Run several calls in one transaction",
            description: "The calls run in order in one transaction of one database, all or nothing; on a failure the problem's `call` is the index of the failing call. An argument value may be a ResultReference, {\"$result\": JSON Pointer}, into the results of the earlier calls (each as `results` writes it: `/0/lastInsertRowId`, `/2/result/id`); it is resolved when its call runs and checked like any value (400 wrong_type). A reference that is malformed, names the same or a later call, or a member that does not exist is 400 invalid_reference, with `call` and `reference`; nothing is kept. In a call's SQL, last_insert_rowid() is the previous insert of the transaction.",
            operationId: "transaction",
            parameters: [.reference(.component(named: "OptionalUser")), .reference(.component(named: "Storage")),
                         .reference(.component(named: "Int64Format"))],
            requestBody: OpenAPI.Request(
                content: [.json: .init(OpenAPI.Content(schema: .object(properties: ["calls": .array(items: call)], additionalProperties: .init(false))))],
                required: true),
            responses: responses(.object(properties: ["results": .array(items: .reference(.component(named: "CallResult")))], additionalProperties: .init(false)),
                                 for: "POST"))
        return one(template, OpenAPI.PathItem(post: operation))
    }

    /// What one call of a transaction gives, as one titled component: a select's `result` (as the method's own
    /// response describes it), or a write's members (`ok` present marks a write).
    mutating func addTransactionComponents() {
        components.schemas["ResultReference"] = .object(
            title: "ResultReference",
            description: "In a transaction call's arguments, in place of any value: the value at a JSON Pointer (RFC 6901: ~0 for ~, ~1 for /) into the results of the calls before it, each as the transaction's results writes it. The first token is an earlier call's index: /0/lastInsertRowId, /2/result/id, /1/result/0/name.",
            properties: ["$result": .string(description: "A JSON Pointer whose first token is the index of an earlier call.",
                                            pattern: #"^/(0|[1-9][0-9]*)(/([^~/]|~[01])*)*$"#)],
            additionalProperties: .init(false))
        components.schemas["CallResult"] = .object(
            title: "CallResult",
            description: "One call's result in a transaction: a select gives `result`; an insert, update or delete gives `ok`, `changes` and `lastInsertRowId` (the WriteResult members).",
            properties: [
                "result": .fragment(required: false, description: "A select's result, as the method's own response describes it."),
                "ok": .boolean(required: false, description: "Present, and true, for a write."),
                "changes": .integer(format: .int64, required: false, description: "A write's rows inserted, updated or deleted."),
                "lastInsertRowId": .integer(format: .int64, required: false, description: "A write's last inserted rowid, 0 when none."),
            ],
            additionalProperties: .init(false))
    }

    /// The `{module}` parameter: one of the modules.
    var modulePathParameter: OpenAPI.Parameter {
        .path(name: "module", schema: .string(allowedValues: modules.map { .init($0.name) }))
    }
    static var moduleUserHeader: OpenAPI.Parameter {
        .header(name: "X-User-Id", required: false, schema: Self.userSchema,
                description: "The caller's user, for a user-dependent module.")
    }
    static var moduleTableHeader: OpenAPI.Parameter {
        .header(name: "X-Table-Name", required: false, schema: Self.tableSchema,
                description: "The table of a template module (for another module, its own table or nothing); never a table of another module.")
    }
    static var storageParameter: Parameter { .reference(.component(named: "Storage")) }
    static let adminOrOwner = "On a user's own database the caller may do this; on a shared one it needs the admin token."

    /// `/modules`.
    func listModulesPaths(_ template: RouteTemplate) -> [DescribedPath] {
        one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "List the modules", operationId: "listModules",
            responses: responses(.object(properties: ["modules": .array(items: .object(
                properties: ["name": .string, "table": .string(nullable: true), "version": .string,
                             "userDependent": .boolean, "methods": .array(items: .string)],
                additionalProperties: .init(false)))], additionalProperties: .init(false)), for: "GET")))
        )
    }

    /// `/modules/{module}`.
    func describeModulePaths(_ template: RouteTemplate) -> [DescribedPath] {
        let module = modulePathParameter
        let user = Self.moduleUserHeader
        let table = Self.moduleTableHeader
        let storage = Self.storageParameter
        let argument = JSONSchema.object(
            properties: ["name": .string, "required": .boolean, "type": .string(nullable: true)], additionalProperties: .init(false))
        let methodSchema = JSONSchema.object(
            properties: ["name": .string, "kind": .string(allowedValues: ["select", "insert", "update", "delete"]), "path": .string,
                         "arguments": .array(items: argument), "result": .string(nullable: true),
                         "foreach": .string(required: false), "documentation": .string(required: false)],
            additionalProperties: .init(false))
        let tableVersion = JSONSchema.object(properties: ["table": .string, "version": .string(nullable: true)], additionalProperties: .init(false))
        return one(template, OpenAPI.PathItem(parameters: [.init(module)], get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Describe a module",
            description: "Its methods with arguments and result types, its table and version, and in the caller's storage the stored version (`storedVersion`; for a template module with X-Table-Name) and a template module's tables.",
            operationId: "describeModule",
            parameters: [.init(user), .init(table), storage],
            responses: responses(.object(
                properties: ["name": .string, "table": .string(nullable: true), "template": .boolean, "version": .string,
                             "userDependent": .boolean, "storage": .string(nullable: true), "database": .string(nullable: true),
                             "initializer": .string(nullable: true), "globals": .array(items: .string),
                             "storedVersion": .string(required: false, nullable: true),
                             "tables": .array(required: false, items: tableVersion),
                             "methods": .array(items: methodSchema)],
                additionalProperties: .init(false)), for: "GET")))
        )
    }

    /// `/modules/{module}/last-insert-rowid`.
    func lastInsertRowIDPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let module = modulePathParameter
        let user = Self.moduleUserHeader
        let storage = Self.storageParameter
        return one(template, OpenAPI.PathItem(parameters: [.init(module)], get: OpenAPI.Operation(
            tags: ["daogate"], summary: "The last insert rowid of the module's database",
            description: "The rowid of the last row inserted by the last write in the module's database (APDAOProtocol's lastInsertRowId); a call's own result has its own.",
            operationId: "lastInsertRowId", parameters: [.init(user), storage],
            responses: responses(.object(properties: ["lastInsertRowId": .integer(format: .int64)], additionalProperties: .init(false)),
                                 for: "GET")))
        )
    }

    /// `/modules/{module}/table`.
    func deleteTablePaths(_ template: RouteTemplate) -> [DescribedPath] {
        let module = modulePathParameter
        let user = Self.moduleUserHeader
        let table = Self.moduleTableHeader
        let storage = Self.storageParameter
        let adminOrOwner = Self.adminOrOwner
        return one(template, OpenAPI.PathItem(parameters: [.init(module)], delete: OpenAPI.Operation(
            tags: ["daogate"], summary: "Delete the module's table",
            description: "Drops the table (APDAOProtocol's deleteTable); the module's next call creates it again. A table another module made in this storage is refused (409 table_owned), but to the admin, who may drop the module's own tableName whoever made it. \(adminOrOwner)",
            operationId: "deleteTable", parameters: [.init(user), .init(table), storage],
            responses: responses(.object(properties: ["deleted": .boolean, "table": .string], additionalProperties: .init(false)),
                                 for: "DELETE"),
            security: [[.component(named: "admin"): []], [:]]))
        )
    }

    /// `/modules/{module}/tables/delete`.
    func deleteTablesPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let module = modulePathParameter
        let user = Self.moduleUserHeader
        let storage = Self.storageParameter
        let adminOrOwner = Self.adminOrOwner
        return one(template, OpenAPI.PathItem(parameters: [.init(module)], post: OpenAPI.Operation(
            tags: ["daogate"], summary: "Delete the module's tables matching a pattern",
            description: "Drops the tables the module created (but those another module's tableName names) whose whole name matches a regular expression (deleteTablesWithRegex; RE2 syntax, the Perl/ICU syntax less back-references, lookaround, atomic groups and possessive quantifiers; matched in linear time), optionally followed by VACUUM. \(adminOrOwner)",
            operationId: "deleteTables", parameters: [.init(user), storage],
            requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: .object(
                properties: ["pattern": .string(maxLength: CallerRegex.maximumPatternLength), "vacuum": .boolean(required: false, nullable: true)],
                additionalProperties: .init(false))))], required: true),
            responses: responses(.object(properties: ["deleted": .array(items: .string), "vacuumed": .boolean,
                                                      "progress": .array(items: .number(format: .double))],
                                         additionalProperties: .init(false)),
                                 for: "POST"),
            security: [[.component(named: "admin"): []], [:]]))
        )
    }

    /// `/modules/{module}/vacuum`.
    func vacuumPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let module = modulePathParameter
        let user = Self.moduleUserHeader
        let storage = Self.storageParameter
        let adminOrOwner = Self.adminOrOwner
        return one(template, OpenAPI.PathItem(parameters: [.init(module)], post: OpenAPI.Operation(
            tags: ["daogate"], summary: "Vacuum the module's database",
            description: "Rebuilds the database file (vacuumDatabase). \(adminOrOwner)",
            operationId: "vacuum", parameters: [.init(user), storage],
            responses: responses(.object(properties: ["ok": .boolean], additionalProperties: .init(false)),
                                 for: "POST"),
            security: [[.component(named: "admin"): []], [:]]))
        )
    }

    /// `/modules/{module}/globals`.
    func globalsPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let module = modulePathParameter
        let globals = JSONSchema.object(additionalProperties: .init(true))
        return one(template, OpenAPI.PathItem(
            parameters: [.init(module)],
            get: OpenAPI.Operation(
                tags: ["daogate"], summary: "The module's global arguments", operationId: "getGlobals",
                responses: responses(globals, for: "GET"), security: [[.component(named: "admin"): []]]),
            put: OpenAPI.Operation(
                tags: ["daogate"], summary: "Set the module's global arguments",
                description: "Replaces the global arguments (globalArguments) every method of the module sees; only names the module declares in `globals`.",
                operationId: "setGlobals",
                requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: globals))], required: true),
                responses: responses(globals, for: "PUT"), security: [[.component(named: "admin"): []]]))
        )
    }

    /// `/healthz`.
    func healthPaths(_ template: RouteTemplate) -> [DescribedPath] {
        return one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Health", operationId: "health",
            responses: responses(.object(properties: ["status": .string(allowedValues: ["ok"]), "modules": .integer(format: .int64)],
                                         additionalProperties: .init(false)), for: "GET")))
        )
    }

    /// `/openapi.json`.
    func openAPIPaths(_ template: RouteTemplate) -> [DescribedPath] {
        return one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "This description", operationId: "openAPI",
            responses: responses(.object(additionalProperties: .init(true)), for: "GET")))
        )
    }

    /// One pass of the background sweep, and the sweep's summary in `GET /events`.
    static var sweepsSchema: JSONSchema {
        let pass = JSONSchema.object(properties: [
            "time": .string(format: .dateTime), "files": .integer(format: .int64), "kvEntries": .integer(format: .int64),
            "diskCacheEntries": .integer(format: .int64), "memoryCacheEntries": .integer(format: .int64),
            "vacuums": .integer(format: .int64), "bytesReturned": .integer(format: .int64), "errors": .integer(format: .int64),
            "seconds": .number,
        ], additionalProperties: .init(false))
        return .object(required: false, properties: [
            "passes": .integer(format: .int64), "last": pass.nullableSchemaObject(), "recent": .array(items: pass),
        ], additionalProperties: .init(false))
    }

    /// `/events`.
    func eventsPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let event = JSONSchema.object(
            properties: ["kind": .string, "module": .string, "table": .string, "location": .string, "time": .string(format: .dateTime),
                         "fromVersion": .string(required: false), "toVersion": .string(required: false), "error": .string(required: false)],
            additionalProperties: .init(false))
        return one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Table events",
            description: "Counts of table events (should_upgrade, upgrade_failed, table_created, table_deleted, table_owned: a module refused a table another module made) and the latest hundred, newest first: of shared storages and the caller's own (X-User-Id), or with the admin token of every storage. Also the latest module reloads (POST /admin/reload, SIGHUP), newest first; their problems and warnings for the admin only. For the admin, `sweeps`: the background sweep's passes (`serve --purge-every`), the last one and the latest twenty that removed or gave back something, newest first.",
            operationId: "events",
            parameters: [.parameter(OpenAPI.Parameter.header(name: "X-User-Id", required: false, schema: Self.userSchema,
                                                             description: "The caller's user: their own storage's events are shown too."))],
            responses: responses(.object(properties: ["counts": .object(additionalProperties: .init(.integer(format: .int64))),
                                                      "recent": .array(items: event),
                                                      "reloads": .array(items: Self.reloadSchema),
                                                      "sweeps": Self.sweepsSchema], additionalProperties: .init(false)), for: "GET"),
            security: [[.component(named: "admin"): []], [:]]))
        )
    }

    /// `/metrics`.
    func metricsPaths(_ template: RouteTemplate) -> [DescribedPath] {
        var metricsResponses = responses(.string, for: "GET")
        metricsResponses[200] = .init(OpenAPI.Response(description: "The text exposition format.",
                                                       content: [.txt: .init(OpenAPI.Content(schema: .string))]))
        return one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Prometheus counters",
            description: "For operators: the admin token, or, with `--metrics-listen`, only on that address (404 here).",
            operationId: "metrics",
            responses: metricsResponses,
            security: [[.component(named: "admin"): []]]))
        )
    }
}
