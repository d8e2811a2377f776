import DAOValue
import OrderedCollections
import Testing

/// The error parsing `text` throws, `nil` when it parses.
func parseError(_ text: String, options: JSONParseOptions = .init()) -> JSONError? {
    do {
        _ = try Value(parsingJSON: text, options: options)
        return nil
    } catch {
        return error
    }
}

/// The error parsing `bytes` throws, `nil` when they parse.
func parseError(_ bytes: [UInt8], options: JSONParseOptions = .init()) -> JSONError? {
    do {
        _ = try Value(parsingJSON: bytes, options: options)
        return nil
    } catch {
        return error
    }
}

@Suite struct JSONParsingTests {
    @Test(arguments: [
        ("null", Value.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .integer(0)),
        ("-0", .integer(0)),
        ("42", .integer(42)),
        ("-17", .integer(-17)),
        ("1.5", .double(1.5)),
        ("-2.5e3", .double(-2500)),
        ("1E2", .double(100)),
        ("1e+2", .double(100)),
        ("25e-2", .double(0.25)),
        ("0.0", .double(0)),
        ("\"hi\"", .string("hi")),
        ("\"\"", .string("")),
        ("[]", .array([])),
        ("{}", .object([:])),
        (" \t\n\r[ 1 , \"a\" ]\r\n ", .array([1, "a"])),
        ("{ \"a\" : [ true , null ] , \"b\" : { } }", .object(["a": [true, nil], "b": .object([:])])),
    ])
    func parsesEveryKindOfValue(text: String, expected: Value) throws {
        #expect(try Value(parsingJSON: text) == expected)
    }

    @Test func booleansStayBooleansAndNumbersStayNumbers() throws {
        let value = try Value(parsingJSON: "[true,1,false,0]")
        #expect(value == [.bool(true), .integer(1), .bool(false), .integer(0)])
        #expect(value != [.integer(1), .integer(1), .integer(0), .integer(0)])
    }

    @Test(arguments: [
        ("9223372036854775807", Int64.max),
        ("-9223372036854775808", Int64.min),
        ("9007199254740993", Int64(1) << 53 + 1),
        ("-9007199254740993", -(Int64(1) << 53 + 1)),
        ("1000000000000000000", 1_000_000_000_000_000_000),
    ])
    func integersAreExact64BitValues(text: String, expected: Int64) throws {
        #expect(try Value(parsingJSON: text) == .integer(expected))
    }

    @Test(arguments: [
        ("9223372036854775808", 0),
        ("-9223372036854775809", 0),
        ("99999999999999999999", 0),
        ("18446744073709551616", 0),
    ])
    func integersBeyond64BitsAreRejected(text: String, offset: Int) {
        #expect(parseError(text) == JSONError("integer out of 64-bit range: \(text)", at: offset))
    }

    @Test func outOfRangeIntegerErrorPointsAtTheNumberAndShortensHugeOnes() {
        #expect(parseError("[1, 99999999999999999999]") == JSONError("integer out of 64-bit range: 99999999999999999999", at: 4))
        let huge = String(repeating: "9", count: 1000)
        #expect(parseError(huge) == JSONError("integer out of 64-bit range: \(huge.prefix(40))...", at: 0))
    }

    @Test func numbersWithFractionOrExponentAreDoublesEvenWhenLarge() throws {
        #expect(try Value(parsingJSON: "99999999999999999999.0") == .double(1e20))
        #expect(try Value(parsingJSON: "1e2") == .double(100))
        #expect(try Value(parsingJSON: "1.0") != .integer(1))
    }

    @Test(arguments: [
        ("5e-324", Double.leastNonzeroMagnitude),
        ("1.7976931348623157e308", Double.greatestFiniteMagnitude),
        ("2.2250738585072014e-308", Double.leastNormalMagnitude),
        ("0.1", 0.1),
        ("0e-400", 0.0),
        ("0.000e999", 0.0),
        ("5e-324", 5e-324),
        ("123456789012345678901234567890.5", 123456789012345678901234567890.5),
    ])
    func doublesParseExactly(text: String, expected: Double) throws {
        #expect(try Value(parsingJSON: text) == .double(expected))
    }

    @Test func negativeZeroIsIntegerZeroButNegativeZeroPointZeroKeepsItsSign() throws {
        #expect(try Value(parsingJSON: "-0") == .integer(0))
        guard case .double(let double) = try Value(parsingJSON: "-0.0") else {
            Issue.record("-0.0 is not a double")
            return
        }
        #expect(double.sign == .minus && double == 0)
    }

    @Test(arguments: ["1e400", "-1e400", "1.8e308", "[0, 1e99999]"])
    func doublesOverflowingToInfinityAreRejected(text: String) {
        #expect(parseError(text)?.message == "number out of range")
    }

    /// A nonzero literal that would round to 0 is refused as a too large one
    /// is, rather than silently becoming 0.
    @Test(arguments: ["1e-400", "-1e-400", "0.0001e-330", "[0, 2.5e-99999]"])
    func doublesUnderflowingToZeroAreRejected(text: String) {
        #expect(parseError(text)?.message == "number out of range: too small for a double, it would be 0")
    }

    @Test(arguments: [
        ("01", "invalid number: leading zero", 0),
        ("-01", "invalid number: leading zero", 1),
        ("[00]", "invalid number: leading zero", 1),
        ("+1", "unexpected character '+'", 0),
        (".5", "unexpected character '.'", 0),
        ("-", "unexpected end of input", 1),
        ("-a", "invalid number: expected digit", 1),
        ("- 1", "invalid number: expected digit", 1),
        ("1.", "unexpected end of input", 2),
        ("[1.]", "invalid number: expected digit", 3),
        ("1.e5", "invalid number: expected digit", 2),
        ("[1e]", "invalid number: expected digit", 3),
        ("[1e+]", "invalid number: expected digit", 4),
        ("NaN", "unexpected character 'N'", 0),
        ("Infinity", "unexpected character 'I'", 0),
        ("-Infinity", "invalid number: expected digit", 1),
        ("0x10", "unexpected content after the JSON value", 1),
        ("1.5.2", "unexpected content after the JSON value", 3),
    ])
    func malformedNumbersAreRejected(text: String, message: String, offset: Int) {
        #expect(parseError(text) == JSONError(message, at: offset))
    }

    @Test(arguments: [
        ("tru", "unexpected end of input", 3),
        ("trUe", "unexpected character 'U'", 2),
        ("True", "unexpected character 'T'", 0),
        ("nul", "unexpected end of input", 3),
        ("nulll", "unexpected content after the JSON value", 4),
        ("[falsy]", "unexpected character 'y'", 5),
    ])
    func malformedLiteralsAreRejected(text: String, message: String, offset: Int) {
        #expect(parseError(text) == JSONError(message, at: offset))
    }

    @Test(arguments: [
        ("", "empty JSON input", 0),
        (" \t\r\n", "empty JSON input", 4),
        ("1 2", "unexpected content after the JSON value", 2),
        ("[1]x", "unexpected content after the JSON value", 3),
        ("[", "unexpected end of input", 1),
        ("[1,", "unexpected end of input", 3),
        ("{\"a\":1", "unexpected end of input", 6),
        ("[1,]", "unexpected character ']'", 3),
        ("[,1]", "unexpected character ','", 1),
        ("[1 2]", "expected ',' or ']'", 3),
        ("{\"a\" 1}", "expected ':'", 5),
        ("{1:2}", "expected a string key", 1),
        ("{\"a\":1,}", "expected a string key", 7),
        ("{\"a\":1 \"b\":2}", "expected ',' or '}'", 7),
        ("\u{0B}1", "unexpected byte 0x0B", 0),
        ("\u{A0}1", "unexpected byte 0xC2", 0),
        ("'a'", "unexpected character '''", 0),
    ])
    func malformedStructureIsRejected(text: String, message: String, offset: Int) {
        #expect(parseError(text) == JSONError(message, at: offset))
    }

    @Test func errorDescriptionNamesTheByteOffset() {
        #expect(parseError("[1,]")?.description == "unexpected character ']' at byte 3")
    }

    @Test func duplicateKeysAreRejectedAtTheSecondKey() {
        #expect(parseError(#"{"a":1,"b":2,"a":3}"#) == JSONError(#"duplicate key "a""#, at: 13))
        #expect(parseError(#"{"a":1,"\u0061":2}"#) == JSONError(#"duplicate key "a""#, at: 7))
        #expect(parseError(#"{"\"":1,"\"":2}"#)?.message == #"duplicate key "\"""#)
    }

    @Test func duplicateKeysAreFoundInLargeObjectsToo() {
        let text = "{" + ((0..<100).map { #""k\#($0)":\#($0)"# } + [#""k42":0"#]).joined(separator: ",") + "}"
        #expect(parseError(text) == JSONError(#"duplicate key "k42""#, at: text.utf8.count - 8))
    }

    @Test func largeObjectsKeepTheirMemberOrder() throws {
        let keys = (0..<100).map { "k\(($0 * 37) % 100)" }
        let text = "{" + keys.map { #""\#($0)":1"# }.joined(separator: ",") + "}"
        #expect(try Array(#require(Value(parsingJSON: text).objectValue).keys) == keys)
    }

    @Test func nestedContainersKeepTheirOwnElements() throws {
        let value = try Value(parsingJSON: #"[{"a":[1,{"b":2}],"c":3},[4,5],{"d":{"e":[]}},6]"#)
        #expect(value == [["a": [1, ["b": 2]], "c": 3], [4, 5], ["d": ["e": []]], 6])
    }

    @Test func sameKeyInDifferentObjectsIsFine() throws {
        #expect(try Value(parsingJSON: #"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#)[member: "a"] == ["a": 1])
    }

    @Test func objectMembersKeepTheirOrder() throws {
        let members = try #require(try Value(parsingJSON: #"{"z":1,"a":2,"m":3}"#).objectValue)
        #expect(Array(members.keys) == ["z", "a", "m"])
    }

    @Test func nestingUpToMaxDepthParsesAndOneMoreIsRejected() throws {
        let deepest = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        #expect(throws: Never.self) { try Value(parsingJSON: deepest) }
        let tooDeep = String(repeating: "[", count: 257) + String(repeating: "]", count: 257)
        #expect(parseError(tooDeep) == JSONError("nesting deeper than 256", at: 256))
        let objects = String(repeating: #"{"a":"#, count: 257) + "1" + String(repeating: "}", count: 257)
        #expect(parseError(objects) == JSONError("nesting deeper than 256", at: 256 * 5))
    }

    @Test func hostileDeepNestingThrowsInsteadOfOverflowingTheStack() {
        #expect(parseError(String(repeating: "[", count: 100_000)) == JSONError("nesting deeper than 256", at: 256))
        #expect(parseError(String(repeating: #"{"":"#, count: 100_000))?.message == "nesting deeper than 256")
    }

    @Test func maxDepthIsConfigurable() throws {
        #expect(try Value(parsingJSON: "[[1]]", options: .init(maxDepth: 2)) == [[1]])
        #expect(parseError("[[[1]]]", options: .init(maxDepth: 2)) == JSONError("nesting deeper than 2", at: 2))
        #expect(try Value(parsingJSON: "1", options: .init(maxDepth: 0)) == 1)
        #expect(parseError("[]", options: .init(maxDepth: 0)) == JSONError("nesting deeper than 0", at: 0))
    }

    @Test func allEntryPointsAgree() throws {
        let text = #"{"k":[1,2.5,"é\n",null]}"#
        let expected = try Value(parsingJSON: text)
        let bytes = Array(text.utf8)
        #expect(try Value(parsingJSON: bytes) == expected)
        #expect(try Value(parsingJSON: bytes[...]) == expected)
        #expect(try Value(parsingJSON: text.utf8) == expected)
        #expect(try Value(parsingJSON: bytes.lazy.map { $0 }) == expected)  // not contiguous
        #expect(try bytes.withUnsafeBytes { raw throws(JSONError) in try Value(parsingJSON: raw) } == expected)
    }

    @Test func offsetsAreUTF8ByteOffsets() {
        #expect(parseError(#"["é€",]"#) == JSONError("unexpected character ']'", at: 9))
    }
}

@Suite struct JSONStringParsingTests {
    @Test(arguments: [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
        (#""\u0041\u00e9\u20AC""#, "Aé€"),
        (#""\uD83D\uDE00""#, "😀"),
        (#""\ud83d\ude00""#, "😀"),
        (#""a\u0000b""#, "a\u{0}b"),
        (#""plain""#, "plain"),
        (#""x\ny\tz""#, "x\ny\tz"),
        ("\"é€😀\"", "é€😀"),
        ("\"\u{2028}\u{2029}\"", "\u{2028}\u{2029}"),
        ("\"\u{7F}\"", "\u{7F}"),
        ("\"\u{10FFFF}\"", "\u{10FFFF}"),
    ])
    func decodesEscapesAndRawUTF8(text: String, expected: String) throws {
        #expect(try Value(parsingJSON: text) == .string(expected))
    }

    @Test func nulFromEscapeIsKeptInTheString() throws {
        let string = try #require(try Value(parsingJSON: #""\u0000""#).stringValue)
        #expect(Array(string.utf8) == [0])
    }

    @Test(arguments: [
        (#""\uD800""#, 1),
        (#""\uDC00""#, 1),
        (#""ab\uDFFF""#, 3),
        (#""\uD800x""#, 1),
        (#""\uD800\n""#, 1),
        (#""\uD800\u0041""#, 1),
        (#""\uD800\uD800""#, 1),
        (#""\uDE00\uD83D""#, 1),
    ])
    func loneOrMismatchedSurrogateEscapesAreRejected(text: String, offset: Int) {
        #expect(parseError(text) == JSONError("unpaired surrogate in \\u escape", at: offset))
    }

    @Test(arguments: [
        (#""\x""#, "invalid escape sequence", 1),
        (#""\U0041""#, "invalid escape sequence", 1),
        (#""\'""#, "invalid escape sequence", 1),
        (#""\u12G4""#, #"invalid \u escape"#, 1),
        (#""\uD83D\uDE0""#, #"invalid \u escape"#, 7),
        (#""\u12""#, #"invalid \u escape"#, 1),
        (#""abc"#, "unexpected end of input", 4),
        (#""ab\"#, "unexpected end of input", 4),
        (#""\u00"#, "unexpected end of input", 5),
        ("\"a\nb\"", "unescaped control character U+000A in string", 2),
        ("\"\t\"", "unescaped control character U+0009 in string", 1),
        ("\"\u{0}\"", "unescaped control character U+0000 in string", 1),
        ("\"\u{1F}\"", "unescaped control character U+001F in string", 1),
    ])
    func malformedStringsAreRejected(text: String, message: String, offset: Int) {
        #expect(parseError(text) == JSONError(message, at: offset))
    }

    @Test(arguments: [
        ([0x80], 1),  // stray continuation byte
        ([0x61, 0xBF], 2),
        ([0xC0, 0xAF], 1),  // overlong "/"
        ([0xC1, 0xBF], 1),
        ([0xE0, 0x80, 0xAF], 1),  // overlong 3-byte
        ([0xF0, 0x80, 0x80, 0xAF], 1),  // overlong 4-byte
        ([0xED, 0xA0, 0x80], 1),  // UTF-8-encoded surrogate U+D800
        ([0xED, 0xBF, 0xBF], 1),  // U+DFFF
        ([0xF4, 0x90, 0x80, 0x80], 1),  // U+110000
        ([0xF5, 0x80, 0x80, 0x80], 1),
        ([0xFF], 1),
        ([0xC3], 1),  // truncated before the closing quote
        ([0xE2, 0x82], 1),
        ([0xE2, 0x28, 0xA1], 1),  // bad second byte
        ([0xF0, 0x9F, 0x98], 1),  // truncated 4-byte
        ([0xF0, 0x9F, 0x98, 0x41], 1),  // bad fourth byte
    ] as [([UInt8], Int)])
    func invalidUTF8InStringsIsRejected(content: [UInt8], offset: Int) {
        let document = [UInt8(ascii: "\"")] + content + [UInt8(ascii: "\"")]
        #expect(parseError(document) == JSONError("invalid UTF-8 in string", at: offset))
    }

    @Test func invalidUTF8IsRejectedAfterAnEscapeToo() {
        #expect(parseError([0x22, 0x5C, 0x6E, 0xC0, 0xAF, 0x22]) == JSONError("invalid UTF-8 in string", at: 3))
    }

    @Test func invalidUTF8AsAKeyIsRejected() {
        #expect(parseError([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) == JSONError("invalid UTF-8 in string", at: 2))
    }

    @Test(arguments: [
        [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
        [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
    ] as [[UInt8]])
    func boundaryUTF8SequencesAreAccepted(content: [UInt8]) throws {
        let document = [UInt8(ascii: "\"")] + content + [UInt8(ascii: "\"")]
        #expect(try Value(parsingJSON: document) == .string(String(decoding: content, as: UTF8.self)))
    }
}

@Suite struct JSONBinaryMarkerTests {
    let markers = JSONParseOptions(binaryMarkers: true)

    @Test func markerIsAnOrdinaryObjectWhenMarkersAreOff() throws {
        #expect(try Value(parsingJSON: #"{"$base64":"AAEC"}"#) == ["$base64": "AAEC"])
    }

    @Test func markerBecomesABlobWhenMarkersAreOn() throws {
        #expect(try Value(parsingJSON: #"{"$base64":"AAEC/w=="}"#, options: markers) == .blob([0, 1, 2, 0xFF]))
        #expect(try Value(parsingJSON: #"{ "$base64" : "" }"#, options: markers) == .blob([]))
        #expect(try Value(parsingJSON: #"[{"x":{"$base64":"Zm8="}}]"#, options: markers) == [["x": .blob(Array("fo".utf8))]])
    }

    @Test func onlyAnObjectWithExactlyTheMarkerMemberIsABlob() throws {
        #expect(try Value(parsingJSON: #"{"$base64":"AA==","b":1}"#, options: markers) == ["$base64": "AA==", "b": 1])
        #expect(try Value(parsingJSON: #"{"base64":"AA=="}"#, options: markers) == ["base64": "AA=="])
        #expect(try Value(parsingJSON: #"{"$BASE64":"AA=="}"#, options: markers) == ["$BASE64": "AA=="])
    }

    @Test(arguments: [#"{"$base64":"AA="}"#, #"{"$base64":"A A="}"#, #"{"$base64":"AB=="}"#, #"{"$base64":"_-=="}"#, #"{"$base64":5}"#, #"{"$base64":null}"#, #"{"$base64":{"x":[1]}}"#])
    func invalidBase64InAMarkerIsAnErrorAtTheValue(text: String) {
        #expect(parseError(text, options: markers) == JSONError(#"invalid base64 in "$base64" marker"#, at: 11))
    }
}
