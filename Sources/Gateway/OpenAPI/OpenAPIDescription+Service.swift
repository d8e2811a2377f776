import DAODialect
import DAOEngine
import OpenAPIKit

/// The routes beside the methods: transactions, introspection, the proxy
/// operations, and the service's own.
extension OpenAPIDescription {
    mutating func addTransaction() {
        let call = JSONSchema.object(
            properties: [
                "module": .string(allowedValues: modules.map { .init($0.name) }),
                "method": .string,
                "arguments": .any(of: .object(additionalProperties: .init(true)), .array(items: .fragment()), .null(),
                                  required: false, description: "An object by name or an array by position."),
                "table": .string(required: false, nullable: true, description: "The table of a template module (else X-Table-Name).",
                                 minLength: 1, maxLength: 128, pattern: Self.identifierPattern),
            ],
            additionalProperties: .init(false))
        let result = JSONSchema.any(of: [
            .object(properties: ["result": .fragment(description: "A select's result.")], additionalProperties: .init(false)),
            .reference(.component(named: "WriteResult")),
        ])
        let operation = OpenAPI.Operation(
            tags: ["daogate"],
            summary: "Run several calls in one transaction",
            description: "The calls run in order in one transaction of one database, all or nothing; on a failure the problem's `call` is the index of the failing call.",
            operationId: "transaction",
            parameters: [.reference(.component(named: "OptionalUser")), .reference(.component(named: "Storage"))],
            requestBody: OpenAPI.Request(
                content: [.json: .init(OpenAPI.Content(schema: .object(properties: ["calls": .array(items: call)], additionalProperties: .init(false))))],
                required: true),
            responses: responses(.object(properties: ["results": .array(items: result)], additionalProperties: .init(false)),
                                 errors: [400, 404, 409, 413, 415, 500, 503]))
        paths["/transaction"] = .init(OpenAPI.PathItem(post: operation))
    }

    mutating func addIntrospectionAndProxyOperations() {
        let module = OpenAPI.Parameter.path(name: "module", schema: .string(allowedValues: modules.map { .init($0.name) }))
        let user = OpenAPI.Parameter.header(name: "X-User-Id", required: false, schema: Self.userSchema,
                                            description: "The caller's user, for a user-dependent module.")
        let table = OpenAPI.Parameter.header(name: "X-Table-Name", required: false, schema: Self.tableSchema,
                                             description: "The table of a template module (for another module, its own table or nothing); never a table of another module.")
        let storage: Either<OpenAPI.Reference<OpenAPI.Parameter>, OpenAPI.Parameter> = .reference(.component(named: "Storage"))
        let adminOrOwner = "On a user's own database the caller may do this; on a shared one it needs the admin token."

        paths["/modules"] = .init(OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "List the modules", operationId: "listModules",
            responses: responses(.object(properties: ["modules": .array(items: .object(
                properties: ["name": .string, "table": .string(nullable: true), "version": .string,
                             "userDependent": .boolean, "methods": .array(items: .string)],
                additionalProperties: .init(false)))], additionalProperties: .init(false)), errors: [])))
        )

        let argument = JSONSchema.object(
            properties: ["name": .string, "required": .boolean, "type": .string(nullable: true)], additionalProperties: .init(false))
        let methodSchema = JSONSchema.object(
            properties: ["name": .string, "kind": .string(allowedValues: ["select", "insert", "update", "delete"]), "path": .string,
                         "arguments": .array(items: argument), "result": .string(nullable: true),
                         "foreach": .string(required: false), "documentation": .string(required: false)],
            additionalProperties: .init(false))
        let tableVersion = JSONSchema.object(properties: ["table": .string, "version": .string(nullable: true)], additionalProperties: .init(false))
        paths["/modules/{module}"] = .init(OpenAPI.PathItem(parameters: [.init(module)], get: OpenAPI.Operation(
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
                additionalProperties: .init(false)), errors: [400, 404, 500, 503])))
        )
        paths["/modules/{module}/last-insert-rowid"] = .init(OpenAPI.PathItem(parameters: [.init(module)], get: OpenAPI.Operation(
            tags: ["daogate"], summary: "The last insert rowid of the module's database",
            description: "The rowid of the last row inserted by the last write in the module's database (APDAOProtocol's lastInsertRowId); a call's own result has its own.",
            operationId: "lastInsertRowId", parameters: [.init(user), storage],
            responses: responses(.object(properties: ["lastInsertRowId": .integer(format: .int64)], additionalProperties: .init(false)),
                                 errors: [400, 404, 500, 503])))
        )
        paths["/modules/{module}/table"] = .init(OpenAPI.PathItem(parameters: [.init(module)], delete: OpenAPI.Operation(
            tags: ["daogate"], summary: "Delete the module's table",
            description: "Drops the table (APDAOProtocol's deleteTable); the module's next call creates it again. \(adminOrOwner)",
            operationId: "deleteTable", parameters: [.init(user), .init(table), storage],
            responses: responses(.object(properties: ["deleted": .boolean, "table": .string], additionalProperties: .init(false)),
                                 errors: [400, 401, 403, 404, 500, 503]),
            security: [[.component(named: "admin"): []], [:]]))
        )
        paths["/modules/{module}/tables/delete"] = .init(OpenAPI.PathItem(parameters: [.init(module)], post: OpenAPI.Operation(
            tags: ["daogate"], summary: "Delete the module's tables matching a pattern",
            description: "Drops the tables the module created whose whole name matches a regular expression (deleteTablesWithRegex; RE2 syntax, the Perl/ICU syntax less back-references, lookaround, atomic groups and possessive quantifiers; matched in linear time), optionally followed by VACUUM. \(adminOrOwner)",
            operationId: "deleteTables", parameters: [.init(user), storage],
            requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: .object(
                properties: ["pattern": .string(maxLength: CallerRegex.maximumPatternLength), "vacuum": .boolean(required: false, nullable: true)],
                additionalProperties: .init(false))))], required: true),
            responses: responses(.object(properties: ["deleted": .array(items: .string), "vacuumed": .boolean,
                                                      "progress": .array(items: .number(format: .double))],
                                         additionalProperties: .init(false)),
                                 errors: [400, 401, 403, 404, 413, 415, 500, 503]),
            security: [[.component(named: "admin"): []], [:]]))
        )
        paths["/modules/{module}/vacuum"] = .init(OpenAPI.PathItem(parameters: [.init(module)], post: OpenAPI.Operation(
            tags: ["daogate"], summary: "Vacuum the module's database",
            description: "Rebuilds the database file (vacuumDatabase). \(adminOrOwner)",
            operationId: "vacuum", parameters: [.init(user), storage],
            responses: responses(.object(properties: ["ok": .boolean], additionalProperties: .init(false)),
                                 errors: [400, 401, 403, 404, 500, 503]),
            security: [[.component(named: "admin"): []], [:]]))
        )
        let globals = JSONSchema.object(additionalProperties: .init(true))
        paths["/modules/{module}/globals"] = .init(OpenAPI.PathItem(
            parameters: [.init(module)],
            get: OpenAPI.Operation(
                tags: ["daogate"], summary: "The module's global arguments", operationId: "getGlobals",
                responses: responses(globals, errors: [400, 401, 403, 404]), security: [[.component(named: "admin"): []]]),
            put: OpenAPI.Operation(
                tags: ["daogate"], summary: "Set the module's global arguments",
                description: "Replaces the global arguments (globalArguments) every method of the module sees; only names the module declares in `globals`.",
                operationId: "setGlobals",
                requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: globals))], required: true),
                responses: responses(globals, errors: [400, 401, 403, 404, 413, 415]), security: [[.component(named: "admin"): []]]))
        )
    }

    mutating func addService() {
        paths["/healthz"] = .init(OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Health", operationId: "health",
            responses: responses(.object(properties: ["status": .string(allowedValues: ["ok"]), "modules": .integer(format: .int64)],
                                         additionalProperties: .init(false)), errors: [])))
        )
        paths["/openapi.json"] = .init(OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "This description", operationId: "openAPI",
            responses: responses(.object(additionalProperties: .init(true)), errors: [])))
        )
        let event = JSONSchema.object(
            properties: ["kind": .string, "module": .string, "table": .string, "location": .string, "time": .string(format: .dateTime),
                         "fromVersion": .string(required: false), "toVersion": .string(required: false), "error": .string(required: false)],
            additionalProperties: .init(false))
        paths["/events"] = .init(OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Table events",
            description: "Counts of table events (should_upgrade, upgrade_failed, table_created, table_deleted) and the latest hundred, newest first: of shared storages and the caller's own (X-User-Id), or with the admin token of every storage. Also the latest module reloads (POST /admin/reload, SIGHUP), newest first; their problems and warnings for the admin only.",
            operationId: "events",
            parameters: [.parameter(OpenAPI.Parameter.header(name: "X-User-Id", required: false, schema: Self.userSchema,
                                                             description: "The caller's user: their own storage's events are shown too."))],
            responses: responses(.object(properties: ["counts": .object(additionalProperties: .init(.integer(format: .int64))),
                                                      "recent": .array(items: event),
                                                      "reloads": .array(items: Self.reloadSchema)], additionalProperties: .init(false)), errors: [400, 401, 403]),
            security: [[.component(named: "admin"): []], [:]]))
        )
        var metricsResponses = responses(.string, errors: [401, 403, 404])
        metricsResponses[200] = .init(OpenAPI.Response(description: "The text exposition format.",
                                                       content: [.txt: .init(OpenAPI.Content(schema: .string))]))
        paths["/metrics"] = .init(OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Prometheus counters",
            description: "For operators: the admin token, or, with `--metrics-listen`, only on that address (404 here).",
            operationId: "metrics",
            responses: metricsResponses,
            security: [[.component(named: "admin"): []]]))
        )
    }
}
