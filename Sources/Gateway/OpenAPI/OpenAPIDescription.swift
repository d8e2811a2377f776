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
    /// The classes some argument takes: their components accept members they do not list.
    var argumentClasses: Set<String> = []
    /// The row shapes of `{}` array results, by module, with how many methods give each.
    var rowShapes: [String: [(columns: [JSONShape.Property], count: Int)]] = [:]
    /// The second pass over the methods: components are complete, so shared rows and nullable classes are final.
    var finalPass = false
    /// The route whose paths are being described: its declared errors are the operations' problem responses.
    var describing: Route?

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
        // The methods are described twice: this first pass gathers each class's members and the row shapes
        // methods share; the routes' pass below writes every method with them complete.
        _ = builder.daoPaths(Gateway.callTemplate)
        builder.finalPass = true
        // The paths are the route table's, each described by its own entry (`Gateway.routes`).
        var publicPaths: Set<OpenAPI.Path> = []
        for route in Gateway.routes {
            guard let describe = route.describe else { continue }
            builder.describing = route
            for (path, item) in describe(&builder, route.template) {
                precondition(builder.paths[path] == nil, "\(path.rawValue) is described twice")
                builder.paths[path] = .init(item)
                if route.isPublic { publicPaths.insert(path) }
            }
        }
        builder.addStorageComponents()
        builder.addStorageBodyComponents()
        if jwt { builder.requireBearer(publicPaths: publicPaths) }
        builder.unifyOperationIDs()
        return OpenAPI.Document(
            openAPIVersion: .v3_1_1,
            info: OpenAPI.Document.Info(
                title: "daogate",
                description: """
                    Every method of every DAO module as a POST endpoint. Arguments are a JSON object by name \
                    (as described here) or a JSON array by position. X-User-Id routes a call to the caller's own \
                    database. Integers are exact 64-bit values (a JSON integer beyond them is 400 invalid_json); \
                    a client whose numbers are doubles (JavaScript) may send X-Int64-Format: string (declared on the operations it affects) to receive those beyond ±(2^53 − 1) as decimal strings, outside the integer types described here. Binary values are \
                    base64 text. An argument marked x-daogate-raw-text is SQL text held to the raw-text rule. \
                    Errors are RFC 9457 application/problem+json with a stable code.
                    """,
                license: Self.license,
                version: version),
            servers: [OpenAPI.Server(url: URL(string: "http://127.0.0.1:8080")!,
                                     description: "make serve's default; a generated client takes the server's URL as a setting.")],
            paths: builder.paths,
            components: builder.components,
            security: [],
            tags: builder.modules.map { module in
                OpenAPI.Tag(name: module.name, description: "The \(module.name) module (\(module.tableName.map { "table \($0)" } ?? (module.isTemplate ? "table per call" : "no table")), version \(module.version)).")
            } + builder.serviceTags()
        )
    }

    /// The document as JSON: keys sorted and pretty-printed, so a committed
    /// copy changes only when the API does.
    public static func json(_ document: OpenAPI.Document) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return Array(try encoder.encode(document)) + [UInt8(ascii: "\n")]
    }

    // MARK: Paths

    /// A path of the document and what it takes: a route's description (`Route.describe`).
    typealias DescribedPath = (path: OpenAPI.Path, item: OpenAPI.PathItem)

    /// A route described as its template reads.
    func one(_ template: RouteTemplate, _ item: OpenAPI.PathItem) -> [DescribedPath] {
        [(OpenAPI.Path(rawValue: template.description), item)]
    }

    /// A route described once per space, `{space}` written out, so that `X-User-Id` is required exactly where it is.
    func perSpace(_ template: RouteTemplate, _ item: (StorageSpace) -> OpenAPI.PathItem) -> [DescribedPath] {
        StorageSpace.allCases.map { space in (OpenAPI.Path(rawValue: template.path([.space: space.rawValue])), item(space)) }
    }

    /// A cache route described once per kind and space, both written out.
    func perKindAndSpace(_ template: RouteTemplate,
                         _ item: (Gateway.CacheKind, StorageSpace) -> OpenAPI.PathItem) -> [DescribedPath] {
        Gateway.CacheKind.allCases.flatMap { kind in
            StorageSpace.allCases.map { space in
                (OpenAPI.Path(rawValue: template.path([.kind: kind.rawValue, .space: space.rawValue])), item(kind, space))
            }
        }
    }

    // MARK: DAO methods

    /// `/dao/{module}/{method}`: one path per method, the initializer too (it is served like any method).
    mutating func daoPaths(_ template: RouteTemplate) -> [DescribedPath] {
        var described: [DescribedPath] = []
        for module in modules {
            for method in module.methods {
                let path = template.path([.module: module.name, .method: method.name])
                described.append((OpenAPI.Path(rawValue: path), OpenAPI.PathItem(post: methodOperation(method, of: module))))
            }
        }
        return described
    }

    /// The operation of a DAO method.
    mutating func methodOperation(_ method: Method, of module: Module) -> OpenAPI.Operation {
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
                var property = argumentSchema(shape, required: required, minItems: nonEmpty ? 1 : nil)
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
        details.append("\(method.kind == .insert ? "An" : "A") `\(method.kind.rawValue)` of module \(module.name)" + (method.result.map { ", result `\($0)`" } ?? "") + ".")
        if method.foreach != nil { details.append("It runs once per element of its collection, all in one transaction.") }
        if method.name == module.initializer {
            details.append("The module's initializer: it runs by itself once per database (and table) before the first call; calling it runs it again.")
        }
        let adminOnly = module.isAdminOnly(method: method.name)
        if adminOnly { details.append("Declared access=\"admin\": only an admin may call it.") }
        return OpenAPI.Operation(
            tags: [module.name],
            summary: summary,
            description: details.joined(separator: " "),
            operationId: "\(module.name)_\(method.name)",
            parameters: parameters + [.reference(.component(named: "Int64Format"))],
            requestBody: requestBody,
            // The document writes out the methods there are (no 404); only an admin-only one gives 401 and 403.
            responses: responses(success, for: "POST", without: adminOnly ? [404] : [404, 401, 403]),
            security: adminOnly ? [[.component(named: "admin"): []]] : nil)
    }

    /// A result type's schema; a single row may be absent (null).
    mutating func resultSchema(_ type: ResultType, module: Module, columns: [JSONShape.Property]?, single: Bool) -> JSONSchema {
        switch type {
        case .scalar(let scalar):
            return schema(shape(of: scalar), nullable: true)
        case .row:
            return rowSchema(columns, nullable: single, module: module)
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

    /// A named object schema, one per class (`AType`) or map (`:AMap`), used by
    /// the results and the arguments of that class alike; each use adds the
    /// members it knows. Its title is its name, which generated clients name
    /// models after. A class some argument takes accepts members it does not
    /// list (the engine ignores them), as does one whose columns are unknown.
    mutating func addComponent(named name: String, columns: [JSONShape.Property]?, description: String, argument: Bool = false) {
        let key = OpenAPI.ComponentKey(rawValue: name)!
        var properties = OrderedDictionary<String, JSONSchema>()
        var open = columns == nil || argument
        if case .object(_, let context)? = components.schemas[key]?.value {
            properties = context.properties
            if case .a(false)? = context.additionalProperties {} else { open = true }
        }
        if argument { argumentClasses.insert(name) }
        for column in columns ?? [] where properties[column.name] == nil {
            properties[column.name] = schema(column.shape, nullable: true, required: false)
        }
        let existing = components.schemas[key]?.description
        components.schemas[key] = .object(title: name, description: existing ?? description, properties: properties,
                                          additionalProperties: .init(open))
    }

    /// A `{}` row: inline when single (it may be null) or given by one method;
    /// a component (`{Module}Row`, `{Module}Row2`, …) when several methods of
    /// the module give rows of the same columns, so clients get one type.
    mutating func rowSchema(_ columns: [JSONShape.Property]?, nullable: Bool, module: Module) -> JSONSchema {
        guard let columns else { return .object(nullable: nullable, additionalProperties: .init(true)) }
        var properties = OrderedDictionary<String, JSONSchema>()
        for column in columns { properties[column.name] = schema(column.shape, nullable: true, required: false) }
        let inline = JSONSchema.object(nullable: nullable, properties: properties, additionalProperties: .init(false))
        guard !nullable else { return inline }
        var shapes = rowShapes[module.name] ?? []
        let index = shapes.firstIndex { $0.columns == columns }
        guard finalPass else {
            if let index { shapes[index].count += 1 } else { shapes.append((columns, 1)) }
            rowShapes[module.name] = shapes
            return inline
        }
        let shared = shapes.enumerated().filter { $0.element.count > 1 }
        guard let index, let rank = shared.firstIndex(where: { $0.offset == index }) else { return inline }
        let name = "\(module.name)Row" + (rank == 0 ? "" : String(rank + 1))
        components.schemas[OpenAPI.ComponentKey(rawValue: name)!] = .object(
            title: name, description: "A row of module \(module.name) that several of its methods give.",
            properties: properties, additionalProperties: .init(false))
        return .reference(.component(named: name))
    }

    /// A class result that may be null. swift-openapi-generator drops a
    /// `oneOf: [$ref, {type: null}]` (apple/swift-openapi-generator#817), and
    /// a `$ref` beside `type: [object, null]` does not validate null, so a
    /// nullable class is written inline: the component's members, complete
    /// in the final pass, under `type: [object, null]`.
    func reference(_ name: String, nullable: Bool) -> JSONSchema {
        guard nullable else { return .reference(.component(named: name)) }
        let component = components.schemas[OpenAPI.ComponentKey(rawValue: name)!]
        guard case .object(_, let context)? = component?.value else { return .object(nullable: true) }
        return .object(nullable: true, description: "An object of class \(name) (the members of #/components/schemas/\(name)), or null when no row matches.",
                       properties: context.properties, additionalProperties: context.additionalProperties)
    }

    /// An argument's schema: an object or array of objects of a known class
    /// refers to that class's component (non-null: the engine reads a class's
    /// members, which null has none of).
    mutating func argumentSchema(_ shape: JSONShape, required: Bool, minItems: Int?) -> JSONSchema {
        switch shape {
        case .object(let properties, let className?):
            addComponent(named: className, columns: properties, description: "An object of class \(className).", argument: true)
            return .reference(.component(named: className), required: required)
        case .array(.object(let properties, let className?)):
            addComponent(named: className, columns: properties, description: "An object of class \(className).", argument: true)
            return .array(required: required, nullable: !required, minItems: minItems, items: .reference(.component(named: className)))
        default:
            return schema(shape, nullable: !required, required: required, minItems: minItems)
        }
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

    /// A 200 with `success`, and a problem response for each status of the errors the route being described
    /// declares for `method` (`Route.get(errors:)`), but those of the statuses `without` (what the route gives on
    /// other concrete paths than the one described).
    func responses(_ success: JSONSchema, for method: String, without excluded: Set<Int> = [],
                   description: String = "Success") -> OpenAPI.Response.Map {
        var map: OpenAPI.Response.Map = [
            200: .init(OpenAPI.Response(description: description, content: [.json: .init(OpenAPI.Content(schema: success))])),
        ]
        // The first pass over the DAO methods (`document`) describes no route, and the shard describer builds every
        // shard route's item to keep the described one's (`OpenAPITests` holds each operation to its route's errors).
        guard let errors = describing?.errors(of: method) else { return map }
        for status in errors.without(statuses: excluded).statuses {
            map[OpenAPI.Response.StatusCode(integerLiteral: status)] = .reference(.component(named: "Problem\(status)"))
        }
        return map
    }

    /// An argument the method inlines as raw text (`@{x no ""}`).
    static let rawTextDescription = """
        Raw SQL text (@{x no ""}): one token, an unsigned number, a name (a, a.b or a.b.c) that is not an SQL keyword, \
        or ASC/DESC; else 400 unsafe_inline. A name SQLite does not know is 400 invalid_arguments.
        """

    /// What `X-User-Id` may be: 1 to 128 visible ASCII characters (`UserID`), each
    /// as itself or as its `%XX` escape (`Gateway.decodedUserHeader`); `%` only begins one.
    static let userSchema = JSONSchema.string(
        description: "1 to 128 visible ASCII characters (! to ~), each as itself or percent-encoded (%40 for @; % itself only as %25).",
        minLength: 1, maxLength: Gateway.maximumUserHeaderLength, pattern: Gateway.userHeaderPattern)
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
        (409, "A constraint of the database refused the change (constraint_violation); the table is another module's in this storage (table_owned, with `owner`, the module that made it); or the user has data in as many storages as the server allows (too_many_storages)."),
        (413, "The body, or a value in it, is too large."),
        (415, "The body is not application/json."),
        (421, "Another shard owns this user's bucket, or the common space (misdirected_request); nothing was read or created."),
        (422, "What an import fetched is not what daogate makes, or larger than one database may be (import_refused); nothing was installed."),
        (500, "The module or its data failed the call, or a value was encrypted with a key the server's keyring no longer holds (key_missing, naming it in keyId); nothing was changed."),
        (502, "A shard this operation needed did not answer as it should (move_failed)."),
        (503, "The database is busy, the server is stopping, or this user's bucket is moving between shards (bucket_moving, with Retry-After)."),
        (507, "A memory cache entry is larger than one user's share of the memory caches, or nothing is left to evict for it (memory_full); or what the user stores (all storages together), or the common space, reached the size the operator allows (storage_full)."),
    ]

    mutating func addCommonComponents() {
        components.schemas["Problem"] = .object(
            title: "Problem", description: "An RFC 9457 problem, with daogate's stable code.",
            properties: [
                "type": .string, "title": .string(description: "The reason phrase of the status, as the status line has it."),
                "status": .integer(format: .int32),
                "code": .string(description: "Stable and machine-readable; see the README's error codes."),
                "detail": .string(description: "One sentence saying what is wrong and, where the caller can, how to fix it."),
                "method": .string(required: false), "argument": .string(required: false), "owner": .string(required: false),
                "methods": .array(required: false, description: "With unknown_method: the module's methods.", items: .string),
                "line": .integer(format: .int64, required: false), "call": .integer(format: .int64, required: false),
                "reference": .string(required: false, description: "With invalid_reference: the JSON Pointer of the reference at fault."),
            ],
            additionalProperties: .init(true))
        components.schemas["WriteResult"] = .object(
            title: "WriteResult", description: "The reference's APDAOResult: what an insert, update or delete gives.",
            properties: [
                "ok": .boolean(description: "Always true: a call that fails answers a problem instead."),
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
        components.parameters["Int64Format"] = .init(OpenAPI.Parameter.header(
            name: Gateway.int64Header, required: false,
            // A pattern, not an enum: openapi-python-client refuses an enum (a Literal) in a header.
            schema: .string(pattern: "^([Nn][Uu][Mm][Bb][Ee][Rr]|[Ss][Tt][Rr][Ii][Nn][Gg])$"),
            description: """
                `number` (the default) or `string`, in any case. For clients whose numbers are doubles (JavaScript): with `string`, a 64-bit integer of the answer beyond \
                ±(2^53 − 1) arrives as its decimal string, which the integer types described here do not include. \
                A client of a language with 64-bit integers does not send it.
                """))
        components.securitySchemes["admin"] = .init(OpenAPI.SecurityScheme(
            type: .http(scheme: "bearer", bearerFormat: nil), description: "The admin token the server was started with."))
    }
}
