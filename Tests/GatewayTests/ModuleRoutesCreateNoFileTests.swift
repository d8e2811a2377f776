import DAOValue
import Foundation
import Gateway
import Testing

/// Introspection and the proxy operations read, or do nothing, in a storage
/// that has no database yet: they answer as for an empty database and leave
/// no file behind (a user id never seen before costs no disk).
@Suite struct ModuleRoutesCreateNoFileTests {
    /// A route of `/modules/{module}/…` that reaches the module's database, and what it answers there when it has no file.
    struct Route: Sendable, CustomTestStringConvertible {
        var method: String
        /// After `/modules/{module}`.
        var rest: String
        var body: String?
        /// Members of the answer, for a database without a file.
        var answer: OrderedObject
        var testDescription: String { "\(method) /modules/{module}\(rest)" }
    }

    static let routes: [Route] = [
        Route(method: "GET", rest: "", answer: ["storedVersion": nil]),
        Route(method: "GET", rest: "/last-insert-rowid", answer: ["lastInsertRowId": 0]),
        Route(method: "POST", rest: "/vacuum", answer: ["ok": true]),
        Route(method: "DELETE", rest: "/table", answer: ["deleted": false]),
        Route(method: "POST", rest: "/tables/delete", body: #"{"pattern": ".*", "vacuum": true}"#,
              answer: ["deleted": [], "vacuumed": false]),
    ]

    /// A module, and the headers that reach one of its databases without a file.
    struct Target: Sendable, CustomTestStringConvertible {
        var module: String
        var headers: [String: String]
        var testDescription: String { "\(module) \(headers.keys.sorted())" }
    }

    static let targets: [Target] = [
        Target(module: "Messages", headers: [Gateway.userHeader: "never-seen"]),
        Target(module: "Messages", headers: [Gateway.userHeader: "never-seen", Gateway.storageHeader: "other"]),
        Target(module: "ChatMessages", headers: [Gateway.userHeader: "never-seen", Gateway.tableHeader: "chat_1"]),
        Target(module: "Demo", headers: ["Authorization": "Bearer \(GatewayFixture.adminToken)"]),
    ]

    /// Every file under the data folder.
    static func files(_ fixture: GatewayFixture) -> [String] {
        let all = FileManager.default.enumerator(atPath: fixture.root.path)?.allObjects as? [String] ?? []
        return all.filter { path in
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: fixture.root.path + "/" + path, isDirectory: &isDirectory)
            return !isDirectory.boolValue
        }
    }

    @Test(arguments: routes, targets)
    func aRouteOnAStorageWithoutADatabaseCreatesNoFile(_ route: Route, _ target: Target) throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send(route.method, "/modules/\(target.module)\(route.rest)", route.body,
                                 headers: target.headers.map { ($0.key, $0.value) })
        #expect(reply.status == 200, "\(reply.text)")
        for (name, value) in route.answer {
            #expect(reply.json[member: name] == value, "\(name) in \(reply.text)")
        }
        #expect(Self.files(fixture) == [])
    }

    @Test func aTemplateModuleListsNoTablesWithoutCreatingAFile() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send("GET", "/modules/ChatMessages", headers: [(Gateway.userHeader, "never-seen")])
        #expect(reply.status == 200)
        #expect(reply.json[member: "tables"] == [])
        #expect(Self.files(fixture) == [])
    }

    @Test func theRoutesStillWorkOnADatabaseThatExists() throws {
        let fixture = try GatewayFixture()
        let user = [(Gateway.userHeader, "ann")]
        #expect(fixture.post("/dao/Messages/insertMessage", #"{"model": {"time": 1, "content": "hi", "uin": 2, "read": false}}"#,
                             user: "ann").status == 200)
        #expect(fixture.send("GET", "/modules/Messages", headers: user).json[member: "storedVersion"] == "1.2")
        #expect(fixture.send("GET", "/modules/Messages/last-insert-rowid", headers: user).json[member: "lastInsertRowId"] == 1)
        #expect(fixture.send("POST", "/modules/Messages/tables/delete", #"{"pattern": "mess.*", "vacuum": true}"#, headers: user)
            .json == ["deleted": ["messages"], "vacuumed": true, "progress": [1.0]])
        #expect(fixture.send("DELETE", "/modules/Messages/table", headers: user).json[member: "deleted"] == false)
    }

    /// The table above covers every route under `/modules/{module}/` that reaches a database.
    @Test func everyModuleRouteThatReachesADatabaseIsCovered() throws {
        let fixture = try GatewayFixture()
        let document = try Value(parsingJSON: fixture.send("GET", "/openapi.json").response.body)
        let paths = try #require(document[member: "paths"]?.objectValue)
        var described: Set<String> = []
        for (path, item) in paths where path.hasPrefix("/modules/{module}") && path != "/modules/{module}/globals" {
            for method in item.objectValue?.keys ?? [] where ["get", "post", "put", "delete"].contains(method) {
                described.insert("\(method.uppercased()) \(path)")
            }
        }
        let covered = Set(Self.routes.map { "\($0.method) /modules/{module}\($0.rest)" })
        #expect(described == covered)
    }
}
