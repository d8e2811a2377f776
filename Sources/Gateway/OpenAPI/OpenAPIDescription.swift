import DAODialect
import DAOEngine
import Foundation
import OpenAPIKit

/// The OpenAPI 3.1 description of a set of modules and of the whole HTTP API,
/// built with OpenAPIKit.
///
/// One operation per method (`operationId` `{module}_{method}`, tagged by
/// module, summarized by the XML comment before the method); typed request
/// bodies from declared or inferred argument shapes (`required` for `$`
/// arguments); typed responses for every `result` form, `AType` and `:AMap`
/// as named component schemas; `application/problem+json` for every error
/// status an operation can answer; the routing headers as parameters.
public struct OpenAPIDescription {
    let modules: [Module]
    let descriptions: [String: [String: MethodDescription]]
    var components = OpenAPI.Components()
    var paths = OpenAPI.PathItem.Map()

    public init(modules: [Module], descriptions: [String: [String: MethodDescription]]) {
        self.modules = modules.sorted { $0.name < $1.name }
        self.descriptions = descriptions
    }

    /// The document, in OpenAPI 3.1.
    /// `jwt`: the document of `--auth jwt` (`requireBearer`); else the default mode's.
    public static func document(modules: [Module], descriptions: [String: [String: MethodDescription]],
                                version: String, jwt: Bool = false) -> OpenAPI.Document {
        var builder = OpenAPIDescription(modules: modules, descriptions: descriptions)
        builder.addCommonComponents()
        for module in builder.modules {
            for method in module.methods where method.name != module.initializer {
                builder.addMethod(method, of: module)
            }
        }
        builder.addStorageComponents()
        builder.addTransaction()
        builder.addIntrospectionAndProxyOperations()
        builder.addKeyValueOperations()
        builder.addCacheOperations()
        builder.addCleanupOperations()
        builder.addService()
        builder.addReload()
        if jwt { builder.requireBearer() }
        return OpenAPI.Document(
            openAPIVersion: .v3_1_1,
            info: OpenAPI.Document.Info(
                title: "daogate",
                description: """
                    Every method of every DAO module as a POST endpoint. Arguments are a JSON object by name \
                    (as described here) or a JSON array by position. X-User-Id routes a call to the caller's own \
                    database. Integers are exact 64-bit values (a JSON integer beyond them is 400 invalid_json); \
                    send X-Int64-Format: string to receive those beyond ±(2^53 − 1) as strings. Binary values are \
                    base64 text. An argument marked x-daogate-raw-text is SQL text held to the raw-text rule. \
                    Errors are RFC 9457 application/problem+json with a stable code.
                    """,
                version: version),
            servers: [],
            paths: builder.paths,
            components: builder.components,
            security: [],
            tags: builder.modules.map { module in
                OpenAPI.Tag(name: module.name, description: "The \(module.name) module (\(module.tableName.map { "table \($0)" } ?? (module.isTemplate ? "table per call" : "no table")), version \(module.version)).")
            }
        )
    }

    /// The document as JSON: keys sorted and pretty-printed, so a committed
    /// copy changes only when the API does.
    public static func json(_ document: OpenAPI.Document) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try encoder.encode(document)) + [UInt8(ascii: "\n")]
    }

    // MARK: DAO methods

    mutating func addMethod(_ method: Method, of module: Module) {
        let description = descriptions[module.name]?[method.name]
        var parameters: OpenAPI.Parameter.Array = []
        if module.database == nil {
            parameters.append(.reference(.component(named: module.userDependent ? "RequiredUser" : "OptionalUser")))
            parameters.append(.reference(.component(named: "Storage")))
        }
        if module.isTemplate { parameters.append(.reference(.component(named: "Table"))) }

        var requestBody: OpenAPI.Request?
        if !method.arguments.isEmpty {
            var properties = OrderedDictionary<String, JSONSchema>()
            var anyRequired = false
            for argument in method.arguments {
                let shape = description?.arguments.first { $0.name == argument.name }?.shape ?? .any
                // A `foreach` collection that no condition guards fails when nil, as a `$` argument does.
                let required = argument.required || method.requiredCollections.contains(argument.name)
                anyRequired = anyRequired || required
                let nonEmpty = description?.nonEmptyCollections.contains(argument.name) == true
                var property = schema(shape, nullable: !required, required: required, minItems: nonEmpty ? 1 : nil)
                if method.rawTextArguments.contains(argument.name) {
                    property = property.with(description: Self.rawTextDescription).with(vendorExtensions: ["x-daogate-raw-text": true])
                }
                properties[argument.name] = property
            }
            let positional = method.arguments.map { $0.name }.joined(separator: ", ")
            requestBody = OpenAPI.Request(
                description: "The arguments by name. A JSON array of them by position is accepted too (\(positional)).",
                content: [.json: .init(OpenAPI.Content(schema: .object(properties: properties, additionalProperties: .init(false))))],
                required: anyRequired)
        }

        let success: JSONSchema
        if method.kind == .select, let result = method.result {
            var value = resultSchema(result, module: module, columns: description?.resultColumns, single: true)
            if method.foreach != nil { value = .array(items: value) }
            success = .object(properties: ["result": value], additionalProperties: .init(false))
        } else {
            success = .reference(.component(named: "WriteResult"))
        }
        let documentation = method.documentation?.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let summary = documentation?.first.map { String($0) } ?? "\(method.kind.rawValue.capitalized) \(method.name) of \(module.name)"
        var details = [documentation?.dropFirst().joined(separator: " ")].compactMap { $0 }.filter { !$0.isEmpty }
        details.append("A `\(method.kind.rawValue)` of module \(module.name)" + (method.result.map { ", result `\($0)`" } ?? "") + ".")
        if method.foreach != nil { details.append("It runs once per element of its collection, all in one transaction.") }
        let adminOnly = module.isAdminOnly(method: method.name)
        if adminOnly { details.append("Declared access=\"admin\": only an admin may call it.") }
        let operation = OpenAPI.Operation(
            tags: [module.name],
            summary: summary,
            description: details.joined(separator: " "),
            operationId: "\(module.name)_\(method.name)",
            parameters: parameters,
            requestBody: requestBody,
            responses: responses(success, errors: [400, 409, 413, 415, 500, 503] + (adminOnly ? [401, 403] : [])),
            security: adminOnly ? [[.component(named: "admin"): []]] : nil)
        paths[OpenAPI.Path(rawValue: "/dao/\(module.name)/\(method.name)")] = .init(OpenAPI.PathItem(post: operation))
    }

    /// A result type's schema; a single row may be absent (null).
    mutating func resultSchema(_ type: ResultType, module: Module, columns: [JSONShape.Property]?, single: Bool) -> JSONSchema {
        switch type {
        case .scalar(let scalar):
            return schema(shape(of: scalar), nullable: true)
        case .row:
            return rowSchema(columns, nullable: single, title: nil)
        case .object(let className):
            addComponent(named: className, columns: columns, description: "An object of class \(className).")
            return reference(className, nullable: single)
        case .mapped(let mapID):
            let className = module.maps[mapID]?.className ?? mapID
            addComponent(named: mapID, columns: columns, description: "An object of class \(className), its columns renamed by map \(mapID).")
            return reference(mapID, nullable: single)
        case .array(let element):
            return .array(items: resultSchema(element, module: module, columns: columns, single: false))
        }
    }

    /// A named object schema; methods returning the same class add their columns
    /// to it. Its title is its name, which generated clients name models after.
    mutating func addComponent(named name: String, columns: [JSONShape.Property]?, description: String) {
        let key = OpenAPI.ComponentKey(rawValue: name)!
        var properties = OrderedDictionary<String, JSONSchema>()
        if case .object(_, let context)? = components.schemas[key]?.value {
            properties = context.properties
        }
        for column in columns ?? [] where properties[column.name] == nil {
            properties[column.name] = schema(column.shape, nullable: true, required: false)
        }
        components.schemas[key] = .object(title: name, description: description, properties: properties,
                                          additionalProperties: .init(columns == nil))
    }

    func rowSchema(_ columns: [JSONShape.Property]?, nullable: Bool, title: String?) -> JSONSchema {
        guard let columns else { return .object(nullable: nullable, additionalProperties: .init(true)) }
        var properties = OrderedDictionary<String, JSONSchema>()
        for column in columns { properties[column.name] = schema(column.shape, nullable: true, required: false) }
        return .object(nullable: nullable, title: title, properties: properties, additionalProperties: .init(false))
    }

    func reference(_ name: String, nullable: Bool) -> JSONSchema {
        let target = JSONSchema.reference(.component(named: name))
        return nullable ? .one(of: [target, .null()]) : target
    }

    func shape(of scalar: ScalarType) -> JSONShape {
        switch scalar {
        case .int: .integer(bits: 32)
        case .longLong: .integer(bits: 64)
        case .bool: .boolean
        case .double: .number
        case .string: .string
        case .binary: .binary
        }
    }

    /// The schema of a shape; `required` is OpenAPIKit's mark for the parent object.
    /// `minItems` applies to an array shape.
    func schema(_ shape: JSONShape, nullable: Bool, required: Bool = true, minItems: Int? = nil) -> JSONSchema {
        switch shape {
        case .integer(let bits):
            return .integer(format: bits == 32 ? .int32 : .int64, required: required, nullable: nullable)
        case .number:
            return .number(format: .double, required: required, nullable: nullable)
        case .string:
            return .string(required: required, nullable: nullable)
        case .boolean:
            return .boolean(required: required, nullable: nullable)
        case .binary:
            return .string(required: required, nullable: nullable, description: "base64", contentEncoding: .base64)
        case .object(let properties, let className):
            var members = OrderedDictionary<String, JSONSchema>()
            for property in properties { members[property.name] = schema(property.shape, nullable: true, required: false) }
            return .object(required: required, nullable: nullable, description: className.map { "An object of class \($0)." },
                           properties: members, additionalProperties: .init(true))
        case .array(let element):
            return .array(required: required, nullable: nullable, minItems: minItems, items: schema(element, nullable: true))
        case .any:
            return .fragment(required: required, description: "any JSON value")
        }
    }

    // MARK: Responses

    /// A 200 with `success`, and the problem responses of `errors`.
    func responses(_ success: JSONSchema, errors: [Int], description: String = "Success") -> OpenAPI.Response.Map {
        var map: OpenAPI.Response.Map = [
            200: .init(OpenAPI.Response(description: description, content: [.json: .init(OpenAPI.Content(schema: success))])),
        ]
        for status in errors {
            map[OpenAPI.Response.StatusCode(integerLiteral: status)] = .reference(.component(named: "Problem\(status)"))
        }
        return map
    }

    /// An argument the method inlines as raw text (`@{x no ""}`).
    static let rawTextDescription = """
        Raw SQL text (@{x no ""}): one token, an unsigned number, a name (a, a.b or a.b.c) that is not an SQL keyword, \
        or ASC/DESC; else 400 unsafe_inline. A name SQLite does not know is 400 invalid_arguments.
        """

    /// What a user id may be (`UserID`): 1 to 128 visible ASCII characters.
    static let userSchema = JSONSchema.string(minLength: 1, maxLength: 128, pattern: UserID.pattern)
    /// What a table name may look like (the keyword rule aside).
    /// An identifier: what table names and cache names are.
    static let identifierPattern = "^[A-Za-z_][A-Za-z0-9_]*$"
    static let tableSchema = JSONSchema.string(minLength: 1, maxLength: 128, pattern: identifierPattern)

    static let problemStatuses: [(Int, String)] = [
        (400, "The request is not one the method takes: see code and detail."),
        (401, "The operation needs the admin token."),
        (403, "The operation needs the admin token, and none is configured."),
        (404, "No such module, method or route."),
        (405, "The route takes other methods."),
        (409, "A constraint of the database refused the change."),
        (413, "The body, or a value in it, is too large."),
        (415, "The body is not application/json."),
        (500, "The module or its data failed the call; nothing was changed."),
        (503, "The database is busy, or the server is stopping."),
        (507, "The memory the caches may use is spent (memory_full), or the database reached the size the operator allows (storage_full)."),
    ]

    mutating func addCommonComponents() {
        components.schemas["Problem"] = .object(
            title: "Problem", description: "An RFC 9457 problem, with daogate's stable code.",
            properties: [
                "type": .string, "title": .string, "status": .integer(format: .int32),
                "code": .string(description: "Stable and machine-readable; see the README's error codes."),
                "detail": .string,
                "method": .string(required: false), "argument": .string(required: false),
                "line": .integer(format: .int64, required: false), "call": .integer(format: .int64, required: false),
            ],
            additionalProperties: .init(true))
        components.schemas["WriteResult"] = .object(
            title: "WriteResult", description: "The reference's APDAOResult.",
            properties: [
                "ok": .boolean(allowedValues: [true]),
                "changes": .integer(format: .int64, description: "Rows inserted, updated or deleted."),
                "lastInsertRowId": .integer(format: .int64, description: "The rowid of the last row this call inserted, 0 when none."),
            ],
            additionalProperties: .init(false))
        for (status, text) in Self.problemStatuses {
            components.responses[OpenAPI.ComponentKey(rawValue: "Problem\(status)")!] = .init(OpenAPI.Response(
                description: text,
                content: [OpenAPI.ContentType(rawValue: "application/problem+json")!: .init(OpenAPI.Content(schema: .reference(.component(named: "Problem"))))]))
        }
        components.parameters["RequiredUser"] = .init(OpenAPI.Parameter.header(
            name: "X-User-Id", required: true, schema: Self.userSchema,
            description: "The caller's user: the call runs in their own database."))
        components.parameters["OptionalUser"] = .init(OpenAPI.Parameter.header(
            name: "X-User-Id", required: false, schema: Self.userSchema,
            description: "The caller's user; this module keeps one shared database, but a user id sent must still be valid."))
        components.parameters["Storage"] = .init(OpenAPI.Parameter.header(
            name: "X-Storage", required: false, schema: .string(maxLength: 64, pattern: "^([A-Za-z0-9_][A-Za-z0-9_-]*)?$"),
            description: "A custom storage (APCustomStorage) instead of the module's own; empty means none."))
        components.parameters["Table"] = .init(OpenAPI.Parameter.header(
            name: "X-Table-Name", required: true, schema: Self.tableSchema,
            description: "The table of this template module (not an SQL keyword, not starting with sqlite_ or daogate_, not TableVersions)."))
        components.securitySchemes["admin"] = .init(OpenAPI.SecurityScheme(
            type: .http(scheme: "bearer", bearerFormat: nil), description: "The admin token the server was started with."))
    }
}
