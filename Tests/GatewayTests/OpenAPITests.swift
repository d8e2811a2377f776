import DAODialect
import DAOValue
import Foundation
import Gateway
import Testing

/// The OpenAPI description the gateway serves for the example modules.
@Suite struct OpenAPITests {
    let fixture: GatewayFixture
    let document: Value

    init() throws {
        fixture = try GatewayFixture()
        let reply = fixture.send("GET", "/openapi.json")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        document = try Value(parsingJSON: reply.response.body)
    }

    /// The value at a path of members.
    func at(_ path: String...) -> Value? {
        path.reduce(Optional(document)) { $0?[member: $1] }
    }

    func operation(_ module: String, _ method: String) throws -> Value {
        try #require(at("paths", "/dao/\(module)/\(method)", "post"))
    }

    /// The schema of an operation's request body.
    func body(_ module: String, _ method: String) throws -> Value {
        try #require(try operation(module, method)[member: "requestBody"]?[member: "content"]?[member: "application/json"]?[member: "schema"])
    }

    /// The `$ref`s of an operation's parameters.
    func parameters(_ module: String, _ method: String) throws -> [String] {
        try operation(module, method)[member: "parameters"]?.arrayValue?.compactMap { $0[member: "$ref"]?.stringValue } ?? []
    }

    @Test func theCommittedDocumentIsWhatTheModulesMake() throws {
        let committed = URL(fileURLWithPath: GatewayFixture.modulesDirectory).deletingLastPathComponent()
            .appendingPathComponent("openapi/daogate.json")
        let served = fixture.send("GET", "/openapi.json").response.body
        #expect(try Data(contentsOf: committed) == Data(served),
                "openapi/daogate.json is stale: run daogate openapi --modules modules --out openapi/daogate.json")
        #expect(at("openapi")?.stringValue == "3.1.1")
    }

    @Test func everyMethodIsOnePostWithAStableUniqueOperationID() throws {
        let (modules, _) = ModuleLoader.loadDirectory(GatewayFixture.modulesDirectory)
        var ids: [String] = []
        let paths = try #require(at("paths")?.objectValue)
        for path in paths.values {
            let operations: [Value] = path.objectValue.map { Array($0.values) } ?? []
            for operation in operations {
                if let id = operation[member: "operationId"]?.stringValue { ids.append(id) }
            }
        }
        #expect(Set(ids).count == ids.count, "operationIds repeat: \(ids)")
        for module in modules {
            for method in module.methods {
                let operation = try operation(module.name, method.name)
                #expect(operation[member: "operationId"]?.stringValue == "\(module.name)_\(method.name)")
                #expect(operation[member: "tags"] == [.string(module.name)])
                #expect(operation[member: "responses"]?[member: "200"] != nil)
                for status in ["400", "415", "500"] {
                    #expect(operation[member: "responses"]?[member: status]?[member: "$ref"]?.stringValue
                        == "#/components/responses/Problem\(status)", "\(module.name).\(method.name) \(status)")
                }
            }
        }
        #expect(at("components", "responses", "Problem400", "content", "application/problem+json", "schema", "$ref")?.stringValue
            == "#/components/schemas/Problem")
    }

    @Test func theXMLCommentBeforeAMethodIsItsSummary() throws {
        #expect(try operation("Messages", "getMessage")[member: "summary"]?.stringValue == "One message, decrypted.")
        #expect(try operation("Books", "byIds")[member: "summary"]?.stringValue == "Books by id, in the order of the table.")
    }

    @Test func requiredIsWhatACallCannotLeaveOut() throws {
        // `$title` is required; the others may be null.
        let addBook = try body("Books", "addBook")
        #expect(addBook[member: "required"] == ["title"])
        #expect(addBook[member: "properties"]?[member: "title"]?[member: "type"] == "string")
        #expect(addBook[member: "properties"]?[member: "year"]?[member: "type"] == ["integer", "null"])
        #expect(addBook[member: "properties"]?[member: "year"]?[member: "format"] == "int32")
        #expect(addBook[member: "additionalProperties"] == false)
        #expect(try operation("Books", "addBook")[member: "requestBody"]?[member: "required"] == true)

        // An unguarded foreach collection is required, and `in ()` makes it non-empty.
        let byIds = try body("Books", "byIds")
        #expect(byIds[member: "required"] == ["idList"])
        #expect(byIds[member: "properties"]?[member: "idList"]?[member: "minItems"] == 1)
        #expect(byIds[member: "properties"]?[member: "idList"]?[member: "items"]?[member: "format"] == "int64")
        // A method-level foreach runs nothing for an empty collection: required, but may be empty.
        let insertTemplates = try body("Templates", "insertTemplates")
        #expect(insertTemplates[member: "required"] == ["templates"])
        #expect(insertTemplates[member: "properties"]?[member: "templates"]?[member: "minItems"] == nil)

        // Nothing required: the body may be left out.
        #expect(try operation("Books", "recentTitles")[member: "requestBody"]?[member: "required"] != true)
    }

    @Test func resultsAreTypedSchemas() throws {
        // A class is a named component with the columns' types; a single
        // result, which may be null, is its members inline under type [object, null]
        // (swift-openapi-generator drops a oneOf of a $ref and null).
        let getMessage = try operation("Messages", "getMessage")
        let result = getMessage[member: "responses"]?[member: "200"]?[member: "content"]?[member: "application/json"]?[member: "schema"]
        #expect(result?[member: "required"] == ["result"])
        #expect(result?[member: "properties"]?[member: "result"]?[member: "type"] == ["object", "null"])
        #expect(result?[member: "properties"]?[member: "result"]?[member: "properties"] == at("components", "schemas", "MessageModel", "properties"))
        #expect(at("components", "schemas", "MessageModel", "properties", "time", "format") == "int64")
        #expect(at("components", "schemas", "MessageModel", "title") == "MessageModel")
        // An array of a class refers to the component.
        let messagesOf = try operation("Messages", "messagesOf")[member: "responses"]?[member: "200"]?[member: "content"]?[member: "application/json"]?[member: "schema"]
        #expect(messagesOf?[member: "properties"]?[member: "result"]?[member: "items"]?[member: "$ref"] == "#/components/schemas/messageModelMap")
        // A write gives the write result.
        let insertItem = try operation("Demo", "insertItem")
        #expect(insertItem[member: "responses"]?[member: "200"]?[member: "content"]?[member: "application/json"]?[member: "schema"]?[member: "$ref"]
            == "#/components/schemas/WriteResult")
        #expect(at("components", "schemas", "WriteResult", "properties", "lastInsertRowId", "format") == "int64")
    }

    @Test func headersAreParametersWhereTheyApply() throws {
        #expect(try parameters("Messages", "getMessage").contains("#/components/parameters/RequiredUser"))
        #expect(try parameters("Demo", "getItem").contains("#/components/parameters/OptionalUser"))
        #expect(try parameters("ChatMessages", "latest").contains("#/components/parameters/Table"))
        #expect(try !parameters("Demo", "getItem").contains("#/components/parameters/Table"))
        #expect(at("components", "parameters", "RequiredUser", "required") == true)
        #expect(at("components", "parameters", "RequiredUser", "schema", "pattern")?.stringValue == Gateway.userHeaderPattern)
        // Every DAO operation and the transaction declare X-Int64-Format.
        #expect(try parameters("Demo", "getItem").contains("#/components/parameters/Int64Format"))
        #expect(at("paths", "/transaction", "post", "parameters")?.arrayValue?.contains { $0[member: "$ref"] == "#/components/parameters/Int64Format" } == true)
        #expect(at("components", "parameters", "Int64Format", "name") == "X-Int64-Format")
        #expect(at("components", "parameters", "Table", "required") == true)
    }

    @Test func rawTextArgumentsAreMarked() throws {
        let orderBy = try body("Books", "sorted")[member: "properties"]?[member: "orderBy"]
        #expect(orderBy?[member: "x-daogate-raw-text"] == true)
        #expect(orderBy?[member: "description"]?.stringValue?.contains("Raw SQL text") == true)
        #expect(try body("Books", "addBook")[member: "properties"]?[member: "title"]?[member: "x-daogate-raw-text"] == nil)
    }

    @Test func theServiceOperationsAreDescribed() throws {
        for (path, method, id) in [("/transaction", "post", "daogate_transaction"), ("/modules", "get", "daogate_listModules"),
                                   ("/modules/{module}", "get", "daogate_describeModule"), ("/modules/{module}/table", "delete", "daogate_deleteTable"),
                                   ("/modules/{module}/vacuum", "post", "daogate_vacuum"), ("/healthz", "get", "daogate_health")] {
            #expect(at("paths", path, method, "operationId")?.stringValue == id, "\(method) \(path)")
        }
        #expect(at("paths", "/modules/{module}/table", "delete", "security") != nil)
    }

    @Test func theStorageLayersAreDescribedPerSpace() throws {
        for (path, method, id) in [("/kv/common/{business}/{key}", "get", "kv_getCommon"), ("/kv/user/{business}/{key}", "put", "kv_putUser"),
                                   ("/kv/user/{business}", "get", "kv_listUser"),
                                   ("/lru/memory/user/{cache}/entries/{key}", "get", "memoryCache_getUser"),
                                   ("/lru/memory/common/{cache}/peek", "get", "memoryCache_peekCommon"),
                                   ("/lru/disk/user/{cache}", "put", "diskCache_createUser"),
                                   ("/lru/disk/common/{cache}/remove", "post", "diskCache_removeMatchingCommon"),
                                   ("/storage/purge", "post", "storage_purgeStorage"), ("/storage/reset", "post", "storage_resetStorage"),
                                   ("/storages", "get", "storage_listStorages")] {
            #expect(at("paths", path, method, "operationId")?.stringValue == id, "\(method) \(path)")
        }
        // X-User-Id is required in the user space only.
        let user = at("paths", "/kv/user/{business}/{key}", "get", "parameters")?.arrayValue?.compactMap { $0[member: "$ref"]?.stringValue }
        let common = at("paths", "/kv/common/{business}/{key}", "get", "parameters")?.arrayValue?.compactMap { $0[member: "$ref"]?.stringValue }
        #expect(user?.contains("#/components/parameters/RequiredUser") == true)
        #expect(common?.contains("#/components/parameters/RequiredUser") == false)
        // Disk caches have no exists or peek; memory caches have no LIKE.
        #expect(at("paths", "/lru/disk/user/{cache}/peek") == nil)
        #expect(at("components", "schemas", "KVType", "enum")?.arrayValue?.count == 7)
        #expect(at("components", "responses", "Problem507") != nil)
        #expect(at("paths", "/lru/memory/user/{cache}/entries/{key}", "put", "responses", "507") != nil)
    }

    /// Every schema in the document, with its JSON pointer.
    func schemas() -> [(String, Value)] {
        var found: [(String, Value)] = []
        func walk(_ value: Value, _ pointer: String, inSchema: Bool) {
            if let object = value.objectValue {
                if inSchema { found.append((pointer, value)) }
                for (key, member) in object {
                    let schemaKeys: Set<String> = ["schema", "items", "additionalProperties"]
                    let mapKeys: Set<String> = ["properties", "schemas"]
                    if mapKeys.contains(key), let members = member.objectValue {
                        for (name, schema) in members { walk(schema, "\(pointer)/\(key)/\(name)", inSchema: true) }
                    } else if ["oneOf", "anyOf", "allOf"].contains(key), let branches = member.arrayValue {
                        for (index, branch) in branches.enumerated() { walk(branch, "\(pointer)/\(key)/\(index)", inSchema: true) }
                    } else {
                        walk(member, "\(pointer)/\(key)", inSchema: schemaKeys.contains(key))
                    }
                }
            } else if let array = value.arrayValue {
                for (index, element) in array.enumerated() { walk(element, "\(pointer)/\(index)", inSchema: false) }
            }
        }
        walk(document, "#", inSchema: false)
        return found
    }

    /// Issue 12's defects: what common generators cannot read is nowhere in the document.
    @Test func everySchemaIsOneCommonGeneratorsRead() throws {
        for (pointer, schema) in schemas() {
            // No null branch beside a $ref (Swift drops it), no const or one-value enum on a boolean (Rust cannot read it).
            for key in ["oneOf", "anyOf"] {
                for branch in schema[member: key]?.arrayValue ?? [] {
                    #expect(branch[member: "type"] != "null", "\(pointer): a null branch")
                    #expect(branch[member: "$ref"] != nil, "\(pointer): an untitled inline branch")
                }
            }
            let isBoolean = schema[member: "type"] == "boolean" || schema[member: "type"] == ["boolean", "null"]
            #expect(!(isBoolean && (schema[member: "const"] != nil || schema[member: "enum"] != nil)), "\(pointer): a constant boolean")
        }
        #expect(at("components", "schemas", "WriteResult", "properties", "ok", "type") == "boolean")
        #expect(at("components", "schemas", "RemoveAll", "properties", "all", "type") == "boolean")
    }

    /// A transaction call's arguments are any JSON (each method's own body describes them: a `oneOf` of an
    /// object and an array broke openapi-generator's Java, Go and TypeScript clients), and its result is one
    /// titled object whose members are all optional (a `oneOf` of the select and write results was read by
    /// Java's generated client as whichever branch came first).
    @Test func theTransactionsSchemasAreWhatGeneratorsRead() throws {
        let call = try #require(at("paths", "/transaction", "post", "requestBody", "content", "application/json", "schema", "properties", "calls", "items"))
        let arguments = try #require(call[member: "properties"]?[member: "arguments"])
        for key in ["oneOf", "anyOf", "type", "$ref"] { #expect(arguments[member: key] == nil, "arguments: \(key)") }
        let results = at("paths", "/transaction", "post", "responses", "200", "content", "application/json", "schema", "properties", "results", "items")
        #expect(results?[member: "$ref"] == "#/components/schemas/CallResult")
        #expect(at("components", "schemas", "CallResult", "title") == "CallResult")
        #expect(at("components", "schemas", "CallResult", "required") == nil)
        #expect(at("components", "schemas", "CallResult", "additionalProperties") == false)
        #expect(at("components", "schemas", "CallResult", "properties", "ok", "type") == "boolean")
        #expect(at("components", "schemas", "WriteResult", "required") == ["ok", "changes", "lastInsertRowId"])
        #expect(at("info", "license", "identifier") != nil, "openapi-generator refuses a license without an identifier or a URL")
    }

    /// A class is one component for arguments and results alike; a row shape
    /// several methods give is one component; a body the common and user
    /// routes share is one component.
    @Test func oneComponentPerClassRowAndBody() throws {
        #expect(try body("Messages", "insertMessage")[member: "properties"]?[member: "model"]?[member: "$ref"] == "#/components/schemas/MessageModel")
        #expect(try body("Messages", "addMessages")[member: "properties"]?[member: "messages"]?[member: "items"]?[member: "$ref"]
            == "#/components/schemas/MessageModel")
        // The argument's members and the columns' alike.
        #expect(at("components", "schemas", "MessageModel", "properties", "msgId") != nil)
        #expect(at("components", "schemas", "MessageModel", "properties", "id") != nil)
        #expect(at("components", "schemas", "MessageModel", "properties", "read", "type") == ["boolean", "null"])
        for method in ["byIds", "findBooks", "searchActive", "sorted"] {
            let items = try operation("Books", method)[member: "responses"]?[member: "200"]?[member: "content"]?[member: "application/json"]?[member: "schema"]?[member: "properties"]?[member: "result"]?[member: "items"]
            #expect(items?[member: "$ref"] == "#/components/schemas/BooksRow", "Books.\(method)")
        }
        #expect(at("components", "schemas", "BooksRow", "properties", "featured", "type") == ["integer", "null"])
        let user = at("paths", "/kv/user/{business}/{key}", "put", "requestBody", "content", "application/json", "schema", "$ref")
        let common = at("paths", "/kv/common/{business}/{key}", "put", "requestBody", "content", "application/json", "schema", "$ref")
        #expect(user == "#/components/schemas/KVPut" && common == user)
        let removal = at("paths", "/lru/memory/user/{cache}/remove", "post", "requestBody", "content", "application/json", "schema", "oneOf")
        #expect(removal?.arrayValue?.compactMap { $0[member: "$ref"]?.stringValue }
            == ["RemoveKeys", "RemovePrefix", "RemoveSuffix", "RemoveRegex", "RemoveAll"].map { "#/components/schemas/\($0)" })
    }

    /// servers, declared tags, a license, one operationId style, the wording.
    @Test func theDocumentsOwnMembers() throws {
        #expect(at("servers")?.arrayValue?.first?[member: "url"] == "http://127.0.0.1:8080")
        #expect(at("info", "license", "name") != nil)
        let declared = Set(at("tags")?.arrayValue?.compactMap { $0[member: "name"]?.stringValue } ?? [])
        for (path, item) in try #require(at("paths")?.objectValue) {
            for (_, operation) in item.objectValue ?? [:] where operation[member: "operationId"] != nil {
                let tag = try #require(operation[member: "tags"]?.arrayValue?.first?.stringValue)
                #expect(declared.contains(tag), "\(path): tag \(tag) is not declared")
                let id = try #require(operation[member: "operationId"]?.stringValue)
                #expect(id.hasPrefix(tag + "_") && !id.dropFirst(tag.count + 1).contains("_"), "\(path): \(id) is not {tag}_{name}")
            }
        }
        #expect(try operation("Demo", "insertItem")[member: "description"]?.stringValue?.contains("An `insert`") == true)
    }
}
