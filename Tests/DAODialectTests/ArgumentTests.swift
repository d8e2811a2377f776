import DAODialect
import DAOValue
import Testing

/// JSON arguments to a call's frame; runtime errors name the method and the argument, and nothing renders.
@Suite struct ArgumentTests {
    let fixture = Fixture()

    func loaded() throws -> Module {
        try fixture.load(module("""
            <select id="typed" arguments="$id:long long, n:int, ratio:double, flag:bool, name:string, data:binary, tags:[string], model:{}, anything:json">
              select #{id}, #{n}, #{ratio}, #{flag}, #{name}, #{data}, #{tags}, #{model}, #{anything}
            </select>
            <select id="plain" arguments="a, b">select #{a}, #{b}</select>
            <insert id="each" arguments="$items" foreach="items.item">insert into t values (#{item})</insert>
            <select id="inner" arguments="list">select <foreach item="i" collection="list" separator=",">#{i}</foreach></select>
            <select id="cond" arguments="title">select 1 <if true="title > 3">x</if></select>
            <select id="deep" arguments="model">select #{model.author.name}</select>
            """))
    }

    @Test func argumentsComeByNameOrByPosition() throws {
        let demo = try loaded()
        #expect(try demo.render("plain", #"{"b": 2, "a": 1}"#) == [SQL("select ?, ?", [1, 2])])
        #expect(try demo.render("plain", "[1, 2]") == [SQL("select ?, ?", [1, 2])])
        #expect(try demo.render("plain", "[1]") == [SQL("select ?, ?", [1, nil])])
        #expect(try demo.render("plain", "null") == [SQL("select ?, ?", [nil, nil])])
    }

    @Test func surplusAndUnknownArgumentsAreRefused() throws {
        let demo = try loaded()
        let surplus = demo.renderError("plain", "[1, 2, 3]")
        #expect(surplus?.code == .unknownArgument)
        #expect(surplus?.description == "demo.plain: takes 2 arguments (a, b), got 3")
        #expect(surplus?.detail == "method demo.plain takes 2 arguments (a, b), got 3")
        let unknown = demo.renderError("plain", #"{"c": 1}"#)
        #expect(unknown?.code == .unknownArgument)
        #expect(unknown?.argument == "c")
        #expect(unknown?.description == "demo.plain: has no argument named 'c'; its arguments are a, b")
        #expect(unknown?.detail == "method demo.plain has no argument named 'c'; its arguments are a, b")
    }

    @Test(arguments: ["\"text\"", "12", "true"])
    func argumentsMustBeAnObjectOrAnArray(body: String) throws {
        #expect(try loaded().renderError("plain", body)?.code == .invalidArguments)
    }

    @Test func aNilRequiredArgumentIsRefused() throws {
        let demo = try loaded()
        for arguments in ["{}", #"{"id": null}"#, "[]", "[null]"] {
            let error = demo.renderError("typed", arguments)
            #expect(error?.code == .missingArgument)
            #expect(error?.argument == "id")
            #expect(error?.description == "demo.typed: argument 'id' is required ($id) and was null or missing")
        }
    }

    @Test func declaredTypesAreCheckedAndConverted() throws {
        let demo = try loaded()
        let statements = try demo.render("typed", #"""
            {"id": 9007199254740993, "n": -5, "ratio": 2, "flag": true, "name": "x", "data": "AAEC",
             "tags": ["a", "b"], "model": {"k": 1}, "anything": [1, {"a": null}]}
            """#)
        #expect(statements.first?.bindings == [
            .integer(9_007_199_254_740_993), -5, .double(2), true, "x", .blob([0, 1, 2]), ["a", "b"], ["k": 1], [1, ["a": nil]],
        ])
    }

    @Test(arguments: [
        (#"{"id": "1"}"#, "argument 'id' must be an integer, not a string"),
        (#"{"id": 1.5}"#, "argument 'id' must be an integer, not a number"),
        (#"{"id": 1, "n": 2147483648}"#, "argument 'n' is an int, and 2147483648 is outside its 32-bit range"),
        (#"{"id": 1, "ratio": "2"}"#, "argument 'ratio' must be a number, not a string"),
        (#"{"id": 1, "flag": 1}"#, "argument 'flag' must be a boolean, not an integer"),
        (#"{"id": 1, "data": "not base64!"}"#, "argument 'data' must be binary as base64 text, not a string"),
        (#"{"id": 1, "tags": ["a", 2]}"#, "argument 'tags[1]' must be a string, not an integer"),
        (#"{"id": 1, "tags": "a"}"#, "argument 'tags' must be an array, not a string"),
        (#"{"id": 1, "model": [1]}"#, "argument 'model' must be an object, not an array"),
    ])
    func wrongTypesAreRefused(arguments: String, message: String) throws {
        let error = try loaded().renderError("typed", arguments)
        #expect(error?.code == .wrongType)
        #expect(error?.message == message)
    }

    @Test func methodForeachNeedsAnArray() throws {
        let demo = try loaded()
        #expect(demo.renderError("each", #"{"items": {"a": 1}}"#)?.code == .wrongType)
        #expect(demo.renderError("each", #"{"items": "abc"}"#)?.message == "the foreach collection 'items' must be an array, not a string")
        #expect(try demo.runs("each", #"{"items": [1, 2, 3]}"#).count == 3)
    }

    @Test func innerForeachNeedsAnArray() throws {
        let demo = try loaded()
        let missing = demo.renderError("inner", "{}")
        #expect(missing?.code == .missingArgument)
        #expect(missing?.message == "the foreach collection 'list' is null or missing; pass an array")
        #expect(demo.renderError("inner", #"[{"a": 1}]"#)?.code == .wrongType)
    }

    @Test func anExpressionOverIncompatibleTypesNamesTheMethodAndArgument() throws {
        let error = try loaded().renderError("cond", #"["abc"]"#)
        #expect(error?.code == .wrongType)
        #expect(error?.method == "demo.cond")
        #expect(error?.argument == "title")
        #expect(error?.message.contains("cannot compare string with integer") == true)
    }

    @Test func chainedAccessThroughAScalarIsAnError() throws {
        let demo = try loaded()
        #expect(try demo.render("deep", #"[{"author": {"name": "A"}}]"#) == [SQL("select ?", ["A"])])
        #expect(try demo.render("deep", #"[{"author": null}]"#) == [SQL("select ?", [nil])])
        let error = demo.renderError("deep", #"[{"author": "A"}]"#)
        #expect(error?.code == .wrongType)
        #expect(error?.message == "#{model.author.name}: model.author: a string has no property 'name'")
    }

    @Test func integralDecimalsAreIntegersWhereIntegersGo() throws {
        let demo = try loaded()
        // JSON Schema counts 2.0 as an integer, so a client may send it for one.
        #expect(try demo.render("typed", #"{"id": 2.0, "n": -3.0}"#).first?.bindings.prefix(2) == [2, -3])
        #expect(demo.renderError("typed", #"{"id": 2.5}"#)?.code == .wrongType)
        #expect(demo.renderError("typed", #"{"id": 1, "n": 4294967296.0}"#)?.code == .wrongType)
        #expect(demo.renderError("typed", #"{"id": 1e300}"#)?.code == .wrongType)
    }

    @Test func collectionsAnUnconditionalForeachIteratesAreRequired() throws {
        let demo = try fixture.load(module("""
            <select id="guarded" arguments="a, b, c">
              select 1
              <foreach item="i" collection="a">#{i}</foreach>
              <if true="b != nil"><foreach item="i" collection="b">#{i}</foreach></if>
              <choose><when true="c != nil"><foreach item="i" collection="c">#{i}</foreach></when></choose>
            </select>
            <insert id="each" arguments="items, raw" foreach="items.item">insert into t values (#{item}) order by @{raw no ""}</insert>
            """))
        #expect(demo.methods.first { $0.name == "guarded" }?.requiredCollections == ["a"])
        #expect(demo.methods.first { $0.name == "each" }?.requiredCollections == ["items"])
        #expect(demo.methods.first { $0.name == "each" }?.rawTextArguments == ["raw"])
        #expect(demo.methods.first { $0.name == "guarded" }?.rawTextArguments == [])
        #expect(demo.renderError("guarded", "[null]")?.message == "the foreach collection 'a' is null or missing; pass an array")
    }
}
