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
            for method in module.methods where method.name != module.initializer {
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
        // A class result is a named component with the columns' types.
        let getMessage = try operation("Messages", "getMessage")
        let result = getMessage[member: "responses"]?[member: "200"]?[member: "content"]?[member: "application/json"]?[member: "schema"]
        #expect(result?[member: "required"] == ["result"])
        #expect(result?[member: "properties"]?[member: "result"]?[member: "oneOf"]?.arrayValue?.first?[member: "$ref"]
            == "#/components/schemas/MessageModel")
        #expect(at("components", "schemas", "MessageModel", "properties", "time", "format") == "int64")
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
        #expect(at("components", "parameters", "RequiredUser", "schema", "pattern")?.stringValue == "^[!-~]{1,128}$")
        #expect(at("components", "parameters", "Table", "required") == true)
    }

    @Test func rawTextArgumentsAreMarked() throws {
        let orderBy = try body("Books", "sorted")[member: "properties"]?[member: "orderBy"]
        #expect(orderBy?[member: "x-daogate-raw-text"] == true)
        #expect(orderBy?[member: "description"]?.stringValue?.contains("Raw SQL text") == true)
        #expect(try body("Books", "addBook")[member: "properties"]?[member: "title"]?[member: "x-daogate-raw-text"] == nil)
    }

    @Test func theServiceOperationsAreDescribed() throws {
        for (path, method, id) in [("/transaction", "post", "transaction"), ("/modules", "get", "listModules"),
                                   ("/modules/{module}", "get", "describeModule"), ("/modules/{module}/table", "delete", "deleteTable"),
                                   ("/modules/{module}/vacuum", "post", "vacuum"), ("/healthz", "get", "health")] {
            #expect(at("paths", path, method, "operationId")?.stringValue == id, "\(method) \(path)")
        }
        #expect(at("paths", "/modules/{module}/table", "delete", "security") != nil)
    }

    @Test func theStorageLayersAreDescribedPerSpace() throws {
        for (path, method, id) in [("/kv/common/{business}/{key}", "get", "kvGetCommon"), ("/kv/user/{business}/{key}", "put", "kvPutUser"),
                                   ("/kv/user/{business}", "get", "kvListUser"),
                                   ("/lru/memory/user/{cache}/entries/{key}", "get", "memoryCacheGetUser"),
                                   ("/lru/memory/common/{cache}/peek", "get", "memoryCachePeekCommon"),
                                   ("/lru/disk/user/{cache}", "put", "diskCacheCreateUser"),
                                   ("/lru/disk/common/{cache}/remove", "post", "diskCacheRemoveMatchingCommon"),
                                   ("/storage/purge", "post", "purgeStorage"), ("/storage/reset", "post", "resetStorage"),
                                   ("/storages", "get", "listStorages")] {
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
}
