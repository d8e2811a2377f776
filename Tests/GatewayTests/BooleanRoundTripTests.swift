import DAOValue
import Foundation
import Gateway
import Testing

/// A row a select returns can be written back as it is: a column declared
/// `BOOL`/`BOOLEAN` reads as the JSON boolean the write takes, in every
/// result shape, and the OpenAPI description says boolean on both sides.
@Suite struct BooleanRoundTripTests {
    static let module = """
        <module name="Flags" initializer="create" tableName="flags" version="1.0">
          <map id="flagMap" result="Flag"><result property="flagId" column="id"/></map>
          <update id="create">
            create table if not exists ${T} (id integer primary key, name text, done boolean, seen BOOL, count integer)
          </update>
          <insert id="add" arguments="flag:Flag">
            insert into ${T} (name, done, seen, count) values (#{flag.name}, #{flag.done}, #{flag.seen}, #{flag.count})
          </insert>
          <select id="row" arguments="id" result="{}">select * from ${T} where id = #{id}</select>
          <select id="rows" arguments="id" result="[{}]">select * from ${T} where id = #{id}</select>
          <select id="object" arguments="id" result="Flag">select * from ${T} where id = #{id}</select>
          <select id="objects" arguments="id" result="[Flag]">select * from ${T} where id = #{id}</select>
          <select id="mapped" arguments="id" result=":flagMap">select * from ${T} where id = #{id}</select>
          <select id="mappedAll" arguments="id" result="[:flagMap]">select * from ${T} where id = #{id}</select>
          <select id="count" result="int">select count(*) from ${T}</select>
        </module>
        """

    /// A gateway over the module above.
    static func fixture() throws -> GatewayFixture {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-flags-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(module.utf8).write(to: folder.appendingPathComponent("Flags.xml"))
        return try GatewayFixture(modulesDirectory: folder.path)
    }

    static let shapes = ["row", "rows", "object", "objects", "mapped", "mappedAll"]

    /// The rows written: booleans both ways, and nulls.
    static let written: [Value] = [
        ["name": "a", "done": true, "seen": false, "count": 3],
        ["name": "b", "done": false, "seen": true, "count": 0],
        ["name": "c", "done": nil, "seen": nil, "count": nil],
    ]

    /// The one row a select of `shape` answered for `id`.
    static func read(_ fixture: GatewayFixture, _ shape: String, id: Int64) throws -> OrderedObject {
        let reply = fixture.post("/dao/Flags/\(shape)", #"{"id": \#(id)}"#)
        #expect(reply.status == 200, "\(reply.text)")
        var result = try #require(reply.json[member: "result"])
        if case .array(let rows) = result { result = try #require(rows.first) }
        return try #require(result.objectValue, "\(reply.text)")
    }

    @Test(arguments: shapes)
    func aRowReadBackIsWrittenBackAsItIs(_ shape: String) throws {
        let fixture = try Self.fixture()
        for row in Self.written {
            #expect(fixture.post("/dao/Flags/add", Value.object(["flag": row]).jsonString()).status == 200)
        }
        for (index, row) in Self.written.enumerated() {
            let read = try Self.read(fixture, shape, id: Int64(index + 1))
            for name in ["name", "done", "seen", "count"] {
                #expect(read[name] == row[member: name], "\(shape): \(name) of row \(index + 1) is \(String(describing: read[name]))")
            }
            // Written back exactly as read, with its id, and read again.
            let again = fixture.post("/dao/Flags/add", Value.object(["flag": .object(read)]).jsonString())
            #expect(again.status == 200, "\(shape): \(again.text)")
            let copy = try Self.read(fixture, shape, id: try #require(again.json[member: "lastInsertRowId"]?.integerValue))
            for name in ["name", "done", "seen", "count"] { #expect(copy[name] == read[name]) }
        }
    }

    @Test func theExampleMessageIsWrittenBackAsItWasRead() throws {
        let fixture = try GatewayFixture()
        let model = #"{"time": 1700000000, "content": "hello Bob", "uin": 42, "read": false}"#
        #expect(fixture.post("/dao/Messages/insertMessage", #"{"model": \#(model)}"#, user: "ann").status == 200)
        let message = fixture.post("/dao/Messages/getMessage", "[1]", user: "ann")
        #expect(message.text == #"{"result":{"id":1,"time":1700000000,"content":"hello Bob","uin":42,"read":false,"tag":null}}"#)
        let row = try #require(message.json[member: "result"])
        let copy = fixture.post("/dao/Messages/insertMessage", Value.object(["model": row]).jsonString(), user: "ann")
        #expect(copy.status == 200, "\(copy.text)")
        let mapped = fixture.post("/dao/Messages/messagesOf", "[42]", user: "ann")
        #expect(mapped.json[member: "result"]?.arrayValue?.map { $0[member: "read"] } == [false, false])
        let rows = try #require(mapped.json[member: "result"])
        #expect(fixture.post("/dao/Messages/addMessages", Value.object(["messages": rows]).jsonString(), user: "ann").status == 200)
    }

    @Test func theDescriptionSaysBooleanForTheColumnBothWays() throws {
        let fixture = try Self.fixture()
        let document = try Value(parsingJSON: fixture.send("GET", "/openapi.json").response.body)
        func types(_ schema: Value?) -> Set<String> {
            switch schema?[member: "type"] {
            case .string(let type)?: [type]
            case .array(let types)?: Set(types.compactMap(\.stringValue))
            default: []
            }
        }
        let paths = try #require(document[member: "paths"])
        let row = paths[member: "/dao/Flags/row"]?[member: "post"]?[member: "responses"]?[member: "200"]?[member: "content"]?[member: "application/json"]?[member: "schema"]?[member: "properties"]?[member: "result"]
        let components = try #require(document[member: "components"]?[member: "schemas"])
        let request = paths[member: "/dao/Flags/add"]?[member: "post"]?[member: "requestBody"]?[member: "content"]?[member: "application/json"]?[member: "schema"]?[member: "properties"]?[member: "flag"]
        for column in ["done", "seen"] {
            let inRow = types(row?[member: "properties"]?[member: column])
            let inClass = types(components[member: "Flag"]?[member: "properties"]?[member: column])
            let inMap = types(components[member: "flagMap"]?[member: "properties"]?[member: column])
            // A class argument refers to its class's component (one type for requests and responses).
            let requestClass = request?[member: "$ref"]?.stringValue.flatMap { components[member: String($0.split(separator: "/").last ?? "")] }
            let inRequest = types((requestClass ?? request)?[member: "properties"]?[member: column])
            #expect(inRow == ["boolean", "null"], "{} \(column)")
            #expect(inClass == ["boolean", "null"], "Flag \(column)")
            #expect(inMap == ["boolean", "null"], "flagMap \(column)")
            #expect(inRequest.contains("boolean"), "request \(column)")
        }
        let count = types(row?[member: "properties"]?[member: "count"])
        #expect(count == ["integer", "null"])
    }
}
