import DAOValue
import Testing

@Suite struct JSONWritingTests {
    @Test(arguments: [
        (Value.null, "null"),
        (.bool(true), "true"),
        (.bool(false), "false"),
        (.integer(0), "0"),
        (.integer(-1), "-1"),
        (.integer(1234567890), "1234567890"),
        (.integer(.max), "9223372036854775807"),
        (.integer(.min), "-9223372036854775808"),
        (.double(1.5), "1.5"),
        (.string("hi"), #""hi""#),
        (.blob([]), #""""#),
        (.blob(Array("foobar".utf8)), #""Zm9vYmFy""#),
        (.blob([0xFF]), #""/w==""#),
        (.array([]), "[]"),
        (.object([:]), "{}"),
        (.array([1, "a", nil, [true]]), #"[1,"a",null,[true]]"#),
        (.object(["z": 1, "a": ["k": false], "m": []]), #"{"z":1,"a":{"k":false},"m":[]}"#),
    ])
    func writesCompactJSON(value: Value, expected: String) {
        #expect(value.jsonString() == expected)
        #expect(value.jsonBytes() == Array(expected.utf8))
    }

    @Test func writeJSONAppendsToTheBuffer() {
        var buffer = Array("x=".utf8)
        Value.array([1, 2]).writeJSON(to: &buffer)
        #expect(buffer == Array("x=[1,2]".utf8))
        writeJSONString("é", to: &buffer)
        #expect(buffer == Array(#"x=[1,2]"é""#.utf8))
    }

    @Test(arguments: [
        (1e-05, "1e-05"),
        (1e20, "1e+20"),
        (Double.leastNonzeroMagnitude, "5e-324"),
        (Double.greatestFiniteMagnitude, "1.7976931348623157e+308"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (0.1, "0.1"),
        (-1.5, "-1.5"),
        (9007199254740993.0, "9007199254740992.0"),
        (Double.leastNormalMagnitude, "2.2250738585072014e-308"),
    ])
    func doublesAreShortestRoundTripJSON(double: Double, expected: String) throws {
        let text = Value.double(double).jsonString()
        #expect(text == expected)
        guard case .double(let back) = try Value(parsingJSON: text) else {
            Issue.record("\(text) did not parse back as a double")
            return
        }
        #expect(back.bitPattern == double.bitPattern)
    }

    @Test func nonFiniteDoublesAreWrittenAsNull() {
        #expect(Value.array([.double(.infinity), .double(-.infinity), .double(.nan)]).jsonString() == "[null,null,null]")
    }

    @Test(arguments: [
        ("a\"b", #""a\"b""#),
        ("a\\b", #""a\\b""#),
        ("\n\r\t\u{8}\u{C}", #""\n\r\t\b\f""#),
        ("\u{0}", #""\u0000""#),
        ("\u{1}\u{1F}", #""\u0001\u001f""#),
        ("\u{7F}/", "\"\u{7F}/\""),
        ("é€😀", "\"é€😀\""),
        ("\u{2028}", #""\u2028""#),
        ("a\u{2029}b\u{2028}", #""a\u2029b\u2028""#),
        ("\u{2027}\u{20AC}\u{202F}", "\"\u{2027}\u{20AC}\u{202F}\""),
        ("", #""""#),
    ])
    func stringsEscapeQuotesBackslashesControlsAndLineSeparators(string: String, expected: String) throws {
        #expect(Value.string(string).jsonString() == expected)
        #expect(try Value(parsingJSON: expected) == .string(string))
    }

    @Test func keysAreEscapedLikeStrings() {
        #expect(Value.object(["a\"\n\u{2028}": 1]).jsonString() == #"{"a\"\n\u2028":1}"#)
    }

    @Test func int64AsStringQuotesOnlyIntegersBeyondJavaScriptPrecision() {
        let options = JSONWriteOptions(int64AsString: true)
        let safe = Int64(1) << 53 - 1
        let value: Value = [.integer(safe), .integer(-safe), .integer(safe + 1), .integer(-safe - 1), .integer(.min), .integer(.max), .double(1e300)]
        #expect(value.jsonString(options: options)
            == #"[9007199254740991,-9007199254740991,"9007199254740992","-9007199254740992","-9223372036854775808","9223372036854775807",1e+300]"#)
        #expect(value.jsonString() == "[9007199254740991,-9007199254740991,9007199254740992,-9007199254740992,-9223372036854775808,9223372036854775807,1e+300]")
    }

    @Test func int64AsStringAppliesInsideContainers() {
        let value: Value = ["id": ["n": .integer(1 << 60)]]
        #expect(value.jsonString(options: .init(int64AsString: true)) == #"{"id":{"n":"1152921504606846976"}}"#)
    }

    @Test func everyKindRoundTrips() throws {
        let value: Value = [
            "null": nil, "true": true, "false": false, "zero": 0, "min": .integer(.min), "max": .integer(.max),
            "2^53+1": .integer(1 << 53 + 1), "double": 3.25, "tiny": .double(.leastNonzeroMagnitude), "text": "tab\there \"q\" \u{0} é 😀 \u{2028}",
            "list": [1, [2, [3, []]], ["k": nil]], "empty": .object([:]),
        ]
        #expect(try Value(parsingJSON: value.jsonBytes()) == value)
    }

    @Test func blobsRoundTripThroughBinaryMarkers() throws {
        let blob: Value = .blob([0, 1, 2, 250, 255])
        let marker: Value = ["$base64": .string(Base64.encode([0, 1, 2, 250, 255]))]
        #expect(blob.jsonString() == #""AAEC+v8=""#)
        #expect(try Value(parsingJSON: marker.jsonString(), options: .init(binaryMarkers: true)) == blob)
    }
}
