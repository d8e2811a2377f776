import DAOValue
import OrderedCollections
import Testing

/// A small seeded generator (SplitMix64), so a failing case can be reproduced.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Parsing `bytes` either fails with an offset inside the input, or succeeds
/// with a value that writes and parses back to itself.
func expectParsesOrThrowsCleanly(_ bytes: [UInt8]) {
    do {
        let value = try Value(parsingJSON: bytes)
        #expect(try Value(parsingJSON: value.jsonBytes()) == value, "input \(bytes)")
    } catch {
        #expect((0...bytes.count).contains(error.offset), "input \(bytes): \(error)")
    }
}

@Suite struct JSONPropertyTests {
    /// Fragments that make random input look like JSON often enough to reach deep into the parser.
    static let fragments: [[UInt8]] = [
        "{", "}", "[", "]", ",", ":", " ", "\n", "\"", "\\", "\\u", "\\uD83D", "\\uDE00", "\\n", "a", "é", "0", "1",
        "-", ".", "e", "+", "9223372036854775807", "9223372036854775808", "1e999", "true", "false", "null", "tru",
        "\"k\":", "\"$base64\":", "\"AA==\"", "\u{2028}",
    ].map { Array($0.utf8) } + [[0x00], [0x1F], [0x80], [0xC0], [0xE2, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90], [0xFF]]

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SeededGenerator(state: 0xDA0)
        for _ in 0..<10_000 {
            let bytes = (0..<Int.random(in: 0...16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            expectParsesOrThrowsCleanly(bytes)
        }
    }

    @Test func randomJSONLikeInputNeverCrashesTheParser() {
        var generator = SeededGenerator(state: 0x15_0_4)
        for _ in 0..<10_000 {
            let count = Int.random(in: 0...12, using: &generator)
            let bytes = (0..<count).flatMap { _ in Self.fragments.randomElement(using: &generator)! }
            expectParsesOrThrowsCleanly(bytes)
            _ = try? Value(parsingJSON: bytes, options: .init(maxDepth: 3, binaryMarkers: true))
        }
    }

    @Test func everyTruncationOfAValidDocumentParsesOrThrows() throws {
        let documents = [
            #"{"a":[1,-2.5e-3,true,false,null,"x\u00e9\uD83D\uDE00\n"],"b":{"c":{}},"d":-9223372036854775808}"#,
            "[\"é€😀\u{2028}\", 0, 1e10, [[[]]], {\"$base64\": \"AAEC\"}]",
            " \"\\\"\\\\\\/\\b\\f\\n\\r\\t\" ",
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            _ = try Value(parsingJSON: bytes)
            for end in 0..<bytes.count {
                expectParsesOrThrowsCleanly(Array(bytes[..<end]))
            }
        }
    }

    @Test func randomValuesRoundTripExactly() throws {
        var generator = SeededGenerator(state: 42)
        for _ in 0..<2_000 {
            let value = randomValue(depth: 0, using: &generator)
            #expect(try Value(parsingJSON: value.jsonBytes()) == value)
            #expect(try Value(parsingJSON: value.jsonString()) == value)
        }
    }

    @Test func randomDoublesRoundTripBitForBit() throws {
        var generator = SeededGenerator(state: 7)
        for _ in 0..<10_000 {
            let double = Double(bitPattern: generator.next())
            guard double.isFinite else { continue }
            let text = Value.double(double).jsonString()
            guard case .double(let back) = try Value(parsingJSON: text) else {
                Issue.record("\(text) did not parse back as a double")
                continue
            }
            #expect(back.bitPattern == double.bitPattern, "\(text)")
        }
    }

    /// A random value without blobs (which are written as plain base64 strings)
    /// and with finite doubles only (non-finite ones are written as null).
    func randomValue(depth: Int, using generator: inout SeededGenerator) -> Value {
        switch Int.random(in: 0..<(depth < 4 ? 8 : 6), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .integer(Int64(bitPattern: generator.next()) >> Int64.random(in: 0...63, using: &generator))
        case 3:
            let double = Double(bitPattern: generator.next())
            return .double(double.isFinite ? double : 0.5)
        case 4, 5: return .string(randomString(using: &generator))
        case 6:
            return .array((0..<Int.random(in: 0...4, using: &generator)).map { _ in randomValue(depth: depth + 1, using: &generator) })
        default:
            var members: OrderedDictionary<String, Value> = [:]
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                members[randomString(using: &generator)] = randomValue(depth: depth + 1, using: &generator)
            }
            return .object(members)
        }
    }

    func randomString(using generator: inout SeededGenerator) -> String {
        let interesting: [Unicode.Scalar] = ["\"", "\\", "/", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "\u{2028}", "\u{2029}", "\u{FFFF}", "😀", "\u{10FFFF}"]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...8, using: &generator) {
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: scalars.append(interesting.randomElement(using: &generator)!)
            case 1: scalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &generator)))
            default:
                let value = UInt32.random(in: 0...0x10FFFF, using: &generator)
                scalars.append(Unicode.Scalar(value) ?? "?")
            }
        }
        return String(scalars)
    }
}
