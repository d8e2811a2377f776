import DAODialect
import DAOEngine
import DAOValue
import Testing

/// All eighteen result forms, read from a real table.
@Suite struct ResultTests {
    let fixture = EngineFixture()

    func engine() throws -> Engine {
        try fixture.engine("""
            <module name="R" tableName="t" initializer="create" version="1.0">
              <map id="renamed" result="Row"><result property="number" column="i"/></map>
              <update id="create">
                <step>create table if not exists ${T} (id integer primary key, i integer, r real, s text, b blob, f integer)</step>
                <step>insert into ${T} values (1, 42, 1.5, 'one', x'0001FF', 1), (2, -7, 2.0, 'two', x'', 0),
                      (3, 9007199254740993, 3.25, '12', null, null)</step>
              </update>
              <select id="int" result="int">select i from ${T} order by id</select>
              <select id="longLong" result="long long">select i from ${T} where id = 3</select>
              <select id="bool" result="bool">select f from ${T} order by id</select>
              <select id="double" result="double">select r from ${T} order by id</select>
              <select id="string" result="string">select s from ${T} order by id</select>
              <select id="binary" result="binary">select b from ${T} order by id</select>
              <select id="ints" result="[int]">select i from ${T} where id &lt; 3 order by id</select>
              <select id="longLongs" result="[long long]">select i from ${T} order by id</select>
              <select id="bools" result="[bool]">select f from ${T} order by id</select>
              <select id="doubles" result="[double]">select r from ${T} order by id</select>
              <select id="strings" result="[string]">select s from ${T} order by id</select>
              <select id="binaries" result="[binary]">select b from ${T} order by id</select>
              <select id="rows" result="[{}]">select id, i, r, s, b, f from ${T} order by id</select>
              <select id="objects" result="[Row]">select id, s from ${T} order by id</select>
              <select id="row" result="{}">select id, i, r, s, b, f from ${T} where id = 1</select>
              <select id="object" result="Row">select id, s from ${T} where id = 2</select>
              <select id="mappedAll" result="[:renamed]">select id, i from ${T} order by id</select>
              <select id="mapped" result=":renamed">select id, i from ${T} where id = 1</select>
              <select id="none" result="string">select s from ${T} where id = 99</select>
              <select id="noneAll" result="[{}]">select * from ${T} where id = 99</select>
              <select id="textAsInt" result="int">select s from ${T} where id = 3</select>
              <select id="badText" result="int">select s from ${T} where id = 1</select>
              <select id="fraction" result="long long">select r from ${T} where id = 1</select>
              <select id="wholeReal" result="int">select r from ${T} where id = 2</select>
              <select id="tooBigForInt" result="int">select i from ${T} where id = 3</select>
              <select id="numberAsString" result="string">select i from ${T} where id = 1</select>
              <select id="textAsBinary" result="binary">select s from ${T} where id = 1</select>
              <select id="blobAsString" result="string">select b from ${T} where id = 1</select>
              <select id="duplicateNames" result="{}">select 1 as a, 2 as a</select>
              <select id="echo" arguments="v" result="{}">select #{v} as v</select>
            </module>
            """)
    }

    @Test func scalarsReadOneRowFromTheFirstColumn() throws {
        let engine = try engine()
        #expect(try engine.value("R", "int") == 42)
        #expect(try engine.value("R", "longLong") == .integer(9_007_199_254_740_993))
        #expect(try engine.value("R", "bool") == true)
        #expect(try engine.value("R", "double") == 1.5)
        #expect(try engine.value("R", "string") == "one")
        #expect(try engine.value("R", "binary") == .blob([0, 1, 255]))
        #expect(try engine.value("R", "none") == .null)
    }

    @Test func arraysReadEveryRow() throws {
        let engine = try engine()
        #expect(try engine.value("R", "ints") == [42, -7])
        #expect(try engine.value("R", "longLongs") == [42, -7, .integer(9_007_199_254_740_993)])
        #expect(try engine.value("R", "bools") == [true, false, nil])
        #expect(try engine.value("R", "doubles") == [1.5, 2.0, 3.25])
        #expect(try engine.value("R", "strings") == ["one", "two", "12"])
        #expect(try engine.value("R", "binaries") == [.blob([0, 1, 255]), .blob([]), nil])
        #expect(try engine.value("R", "noneAll") == [])
    }

    @Test func rowsMapColumnsToValuesByStorageClass() throws {
        let engine = try engine()
        #expect(try engine.value("R", "row") == ["id": 1, "i": 42, "r": 1.5, "s": "one", "b": .blob([0, 1, 255]), "f": 1])
        let rows = try engine.value("R", "rows")
        #expect(rows.arrayValue?.count == 3)
        #expect(rows.arrayValue?[2] == ["id": 3, "i": .integer(9_007_199_254_740_993), "r": 3.25, "s": "12", "b": nil, "f": nil])
        #expect(try engine.value("R", "duplicateNames") == ["a": 2])
    }

    @Test func objectsAndMapsAreNamedObjects() throws {
        let engine = try engine()
        #expect(try engine.value("R", "object") == ["id": 2, "s": "two"])
        #expect(try engine.value("R", "objects") == [["id": 1, "s": "one"], ["id": 2, "s": "two"], ["id": 3, "s": "12"]])
        #expect(try engine.value("R", "mapped") == ["id": 1, "number": 42])
        #expect(try engine.value("R", "mappedAll").arrayValue?.map { $0[member: "number"] } == [42, -7, .integer(9_007_199_254_740_993)])
    }

    @Test func conversionsAreExactOrRefused() throws {
        let engine = try engine()
        #expect(try engine.value("R", "textAsInt") == 12)
        #expect(try engine.value("R", "wholeReal") == 2)
        #expect(try engine.value("R", "numberAsString") == "42")
        #expect(try engine.value("R", "textAsBinary") == .blob(Array("one".utf8)))
        #expect(engine.failure("R", "badText")?.code == .resultConversion)
        #expect(engine.failure("R", "fraction")?.code == .resultConversion)
        #expect(engine.failure("R", "blobAsString")?.code == .resultConversion)
        let overflow = engine.failure("R", "tooBigForInt")
        #expect(overflow?.code == .resultConversion)
        #expect(overflow?.message == "9007199254740993 in column i does not fit the 32-bit int result; declare the result long long")
    }

    @Test(arguments: [
        ("9223372036854775807", Value.integer(.max)), ("-9223372036854775808", .integer(.min)),
        ("9007199254740993", .integer(9_007_199_254_740_993)), ("0.1", .double(0.1)), ("true", .integer(1)),
        (#""text""#, .string("text")), (#"{"$base64": "AAEC"}"#, .blob([0, 1, 2])), ("[1, 2]", .string("[1,2]")),
        (#"{"a": [1, {"b": null}]}"#, .string(#"{"a":[1,{"b":null}]}"#)), ("null", .null),
    ])
    func argumentsBindExactly(json: String, stored: Value) throws {
        #expect(try engine().value("R", "echo", "[\(json)]") == ["v": stored])
    }
}
