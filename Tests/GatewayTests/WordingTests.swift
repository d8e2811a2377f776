import DAODialect
import DAOValue
import Testing

/// Messages name what a caller sent in JSON's words, each with its right
/// article: "an integer", "null" (never "a integer", "nil").
@Suite struct WordingTests {
    @Test(arguments: [
        (Value.null, "null"), (.bool(true), "a boolean"), (.integer(1), "an integer"), (.double(1.5), "a number"),
        (.string("s"), "a string"), (.blob([1]), "binary data"), (.array([]), "an array"), (.object([:]), "an object"),
    ])
    func everyKindHasItsJSONNameAndArticle(value: Value, phrase: String) {
        #expect(value.kindPhrase == phrase)
    }

    @Test(arguments: [("integer", "an integer"), ("long long", "a long long"), ("object", "an object"), ("string", "a string"),
                      ("Upgrade", "an Upgrade"), ("json", "a json")])
    func theArticleFollowsTheFirstLetter(noun: String, phrase: String) {
        #expect(withIndefiniteArticle(noun) == phrase)
    }

    @Test func aKVValueReadAsAnotherTypeSaysWhatItHoldsInGoodEnglish() throws {
        let fixture = try GatewayFixture()
        #expect(fixture.send("PUT", "/kv/common/biz/n", #"{"value": 1}"#).status == 200)
        let mismatch = fixture.send("GET", "/kv/common/biz/n", query: [("type", "string")])
        #expect(mismatch.code == "type_mismatch")
        #expect(mismatch.json[member: "detail"] == "biz/n holds an integer, not a string")
    }

    @Test func aNullBodyIsCalledNull() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send("POST", "/dao/Books/addBook", "null")
        #expect(reply.status == 400)
        #expect(reply.json[member: "detail"]?.stringValue?.contains("not null") == true, "\(reply.text)")
        #expect(reply.json[member: "detail"]?.stringValue?.contains("nil") == false, "\(reply.text)")
    }

    @Test func aMissingArgumentIsNullOrMissing() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send("POST", "/dao/Books/addBook", #"{"title": null}"#)
        #expect(reply.code == "missing_argument")
        #expect(reply.json[member: "detail"] == "argument 'title' is required ($title) and was null or missing")
    }
}
