import ASCIIBytes
import OrderedCollections

extension Value {
    /// Parses one JSON document (RFC 8259, strictly) from UTF-8 bytes.
    ///
    /// The codec is hand-written rather than built on Foundation's
    /// `JSONSerialization` for two reasons:
    /// - Integers stay exact 64-bit values: a number without fraction or exponent
    ///   becomes `.integer` or is rejected, never routed through `Double`, and a
    ///   JSON boolean is always `.bool`, never confused with a number.
    /// - It is on every request's hot path, so it reads bytes in place and builds
    ///   each string from one validated UTF-8 slice.
    ///
    /// Numbers with a fraction or exponent become `.double`; `-0` is integer 0.
    /// Object members keep their order, and a duplicate key is an error. Strings
    /// must be valid UTF-8 and may contain NUL (written `\u0000`).
    public init(parsingJSON bytes: UnsafeRawBufferPointer, options: JSONParseOptions = .init()) throws(JSONError) {
        var parser = JSONParser(bytes: bytes, options: options)
        self = try parser.parseDocument()
    }

    /// Parses one JSON document from UTF-8 bytes; see `init(parsingJSON:options:)`.
    public init(parsingJSON bytes: some Collection<UInt8>, options: JSONParseOptions = .init()) throws(JSONError) {
        let result =
            bytes.withContiguousStorageIfAvailable { Value.parse(UnsafeRawBufferPointer($0), options) }
            ?? Array(bytes).withUnsafeBytes { Value.parse($0, options) }
        self = try result.get()
    }

    /// Parses one JSON document from text; see `init(parsingJSON:options:)`.
    public init(parsingJSON text: String, options: JSONParseOptions = .init()) throws(JSONError) {
        self = try withUTF8Bytes(of: text) { Value.parse(UnsafeRawBufferPointer($0), options) }.get()
    }

    /// Parsing as a result, to carry the typed error out of the untyped `rethrows` closures.
    private static func parse(_ bytes: UnsafeRawBufferPointer, _ options: JSONParseOptions) -> Result<Value, JSONError> {
        Result { () throws(JSONError) in try Value(parsingJSON: bytes, options: options) }
    }
}

/// A recursive-descent parser over a byte buffer, one level of recursion per nesting level.
private struct JSONParser {
    private let bytes: UnsafeRawBufferPointer
    private let options: JSONParseOptions
    private var index = 0
    /// Reused for the strings that contain escapes; the others are decoded in place.
    private var scratch: [UInt8] = []
    /// The elements and members of the containers being parsed, innermost last.
    /// A complete container takes its own off the top, so it is allocated once at its exact size.
    private var pendingValues: [Value] = []
    private var pendingKeys: [String] = []
    private var pendingKeyOffsets: [Int] = []

    init(bytes: UnsafeRawBufferPointer, options: JSONParseOptions) {
        self.bytes = bytes
        self.options = options
    }

    mutating func parseDocument() throws(JSONError) -> Value {
        skipWhitespace()
        guard index < bytes.count else { throw JSONError("empty JSON input", at: index) }
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw JSONError("unexpected content after the JSON value", at: index) }
        return value
    }

    /// Parses the value starting at `index`, inside `depth` enclosing arrays and objects.
    private mutating func parseValue(depth: Int) throws(JSONError) -> Value {
        switch try peek() {
        case UInt8(ascii: "["):
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "{"):
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            throw unexpectedByte()
        }
    }

    // MARK: Containers

    /// Parses the array whose `[` is at `index`, the `depth`th level of nesting.
    private mutating func parseArray(depth: Int) throws(JSONError) -> Value {
        try checkDepth(depth)
        index += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        let base = pendingValues.count
        while true {
            pendingValues.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                if base == 0 {
                    // Every pending value is this array's (a body's arguments, say): taken whole, not copied.
                    var elements: [Value] = []
                    swap(&elements, &pendingValues)
                    return .array(elements)
                }
                let elements = Array(pendingValues[base...])
                pendingValues.removeSubrange(base...)
                return .array(elements)
            default:
                throw JSONError("expected ',' or ']'", at: index)
            }
        }
    }

    /// Parses the object whose `{` is at `index`, the `depth`th level of nesting.
    private mutating func parseObject(depth: Int) throws(JSONError) -> Value {
        try checkDepth(depth)
        index += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        let keyBase = pendingKeys.count
        let valueBase = pendingValues.count
        var valueOffset = 0
        while true {
            guard try peek() == UInt8(ascii: "\"") else { throw JSONError("expected a string key", at: index) }
            pendingKeyOffsets.append(index)
            pendingKeys.append(try parseString())
            skipWhitespace()
            guard try peek() == UInt8(ascii: ":") else { throw JSONError("expected ':'", at: index) }
            index += 1
            skipWhitespace()
            valueOffset = index
            pendingValues.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                return try finishObject(keyBase: keyBase, valueBase: valueBase, lastValueOffset: valueOffset)
            default:
                throw JSONError("expected ',' or '}'", at: index)
            }
        }
    }

    private func checkDepth(_ depth: Int) throws(JSONError) {
        guard depth <= options.maxDepth else { throw JSONError("nesting deeper than \(options.maxDepth)", at: index) }
    }

    /// Takes the object's members off the pending stacks, rejecting a duplicate key
    /// and turning a binary marker into a `.blob`.
    private mutating func finishObject(keyBase: Int, valueBase: Int, lastValueOffset: Int) throws(JSONError) -> Value {
        let keys = pendingKeys[keyBase...]
        if let duplicate = firstDuplicate(in: keys) {
            throw JSONError("duplicate key \(quoted(keys[duplicate]))", at: pendingKeyOffsets[duplicate])
        }
        let members = OrderedDictionary(uncheckedUniqueKeys: keys, values: pendingValues[valueBase...])
        pendingKeys.removeSubrange(keyBase...)
        pendingKeyOffsets.removeSubrange(keyBase...)
        pendingValues.removeSubrange(valueBase...)
        if options.binaryMarkers, members.count == 1, members.keys[0] == "$base64" {
            guard case .string(let text) = members.values[0], let blob = Base64.decode(text) else {
                throw JSONError("invalid base64 in \"$base64\" marker", at: lastValueOffset)
            }
            return .blob(blob)
        }
        return .object(members)
    }

    // MARK: Strings

    /// Parses the string literal whose opening quote is at `index`.
    ///
    /// Runs of plain bytes are validated in place; a string without escapes is
    /// built straight from its slice, one with escapes from `scratch`.
    private mutating func parseString() throws(JSONError) -> String {
        index += 1
        var runStart = index
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let run = UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])
                index += 1
                guard escaped else { return String(decoding: run, as: UTF8.self) }
                scratch.append(contentsOf: run)
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                if !escaped {
                    scratch.removeAll(keepingCapacity: true)
                    escaped = true
                }
                scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index]))
                try decodeEscape()
                runStart = index
            case 0..<0x20:
                throw JSONError("unescaped control character U+\(hex(byte, digits: 4)) in string", at: index)
            case 0x20..<0x80:
                index += 1
            default:
                try skipUTF8Sequence()
            }
        }
        throw endOfInput()
    }

    /// Decodes the escape sequence whose backslash is at `index`, appending its UTF-8 to `scratch`.
    private mutating func decodeEscape() throws(JSONError) {
        let start = index
        index += 1
        let replacement: UInt8
        switch try peek() {
        case UInt8(ascii: "\""): replacement = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): replacement = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): replacement = UInt8(ascii: "/")
        case UInt8(ascii: "b"): replacement = 0x08
        case UInt8(ascii: "f"): replacement = 0x0C
        case UInt8(ascii: "n"): replacement = 0x0A
        case UInt8(ascii: "r"): replacement = 0x0D
        case UInt8(ascii: "t"): replacement = 0x09
        case UInt8(ascii: "u"):
            index += 1
            var scalar = try hexQuad(escapeStart: start)
            switch scalar {
            case 0xD800...0xDBFF:
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw JSONError("unpaired surrogate in \\u escape", at: start) }
                let lowStart = index
                index += 2
                let low = try hexQuad(escapeStart: lowStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONError("unpaired surrogate in \\u escape", at: start)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            case 0xDC00...0xDFFF:
                throw JSONError("unpaired surrogate in \\u escape", at: start)
            default:
                break
            }
            // Surrogates were paired or rejected above, so this is a Unicode scalar.
            UTF8.encode(Unicode.Scalar(scalar)!) { scratch.append($0) }
            return
        default:
            throw JSONError("invalid escape sequence", at: start)
        }
        index += 1
        scratch.append(replacement)
    }

    /// Reads the four hex digits at `index` of the `\u` escape that starts at `escapeStart`.
    private mutating func hexQuad(escapeStart: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = try peek()
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONError("invalid \\u escape", at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Moves past the multi-byte UTF-8 sequence at `index`, rejecting stray
    /// continuation bytes, overlong forms, encoded surrogates and values beyond U+10FFFF.
    private mutating func skipUTF8Sequence() throws(JSONError) {
        let length: Int
        let second: ClosedRange<UInt8>
        switch bytes[index] {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: throw JSONError("invalid UTF-8 in string", at: index)
        }
        guard index + length <= bytes.count, second.contains(bytes[index + 1]),
            (2..<length).allSatisfy({ bytes[index + $0] & 0xC0 == 0x80 })
        else { throw JSONError("invalid UTF-8 in string", at: index) }
        index += length
    }

    // MARK: Numbers

    /// Parses the number at `index`: an exact `.integer` without fraction or exponent, else a `.double`.
    private mutating func parseNumber() throws(JSONError) -> Value {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }

        var magnitude: UInt64 = 0
        var overflow = false
        switch try peek() {
        case UInt8(ascii: "0"):
            index += 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw JSONError("invalid number: leading zero", at: index - 1)
            }
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            while index < bytes.count, isDigit(bytes[index]) {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                magnitude = sum
                overflow = overflow || o1 || o2
                index += 1
            }
        default:
            throw JSONError("invalid number: expected digit", at: index)
        }

        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try skipDigits()
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try skipDigits()
        }

        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
        if isInteger {
            if !overflow {
                if !negative, magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
                if negative, magnitude <= Int64.min.magnitude { return .integer(Int64(bitPattern: 0 &- magnitude)) }
            }
            let shown = String(decoding: text.prefix(40), as: UTF8.self) + (text.count > 40 ? "..." : "")
            throw JSONError("integer out of 64-bit range: \(shown)", at: start)
        }
        // The grammar is checked above; Swift's parser is exact and locale-independent.
        guard let double = Double(String(decoding: text, as: UTF8.self)), double.isFinite else {
            throw JSONError("number out of range", at: start)
        }
        // A nonzero literal too small for a double (1e-400) would silently
        // become 0: refused as out of range, as a too large one is.
        if double == 0, text.prefix(while: { $0 | 0x20 != UInt8(ascii: "e") }).contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
            throw JSONError("number out of range: too small for a double, it would be 0", at: start)
        }
        return .double(double)
    }

    /// Moves past one or more digits.
    private mutating func skipDigits() throws(JSONError) {
        guard isDigit(try peek()) else { throw JSONError("invalid number: expected digit", at: index) }
        repeat { index += 1 } while index < bytes.count && isDigit(bytes[index])
    }

    // MARK: Bytes

    /// The byte at `index`; the end of the input is an error.
    @inline(__always) private func peek() throws(JSONError) -> UInt8 {
        guard index < bytes.count else { throw endOfInput() }
        return bytes[index]
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        for expected in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
            guard try peek() == expected else { throw unexpectedByte() }
            index += 1
        }
    }

    @inline(__always) private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    @inline(__always) private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    private func endOfInput() -> JSONError {
        JSONError("unexpected end of input", at: bytes.count)
    }

    /// An error for the byte at `index`, quoted when it is printable ASCII.
    private func unexpectedByte() -> JSONError {
        let byte = bytes[index]
        let message =
            (0x21...0x7E).contains(byte)
            ? "unexpected character '\(Character(Unicode.Scalar(byte)))'"
            : "unexpected byte 0x\(hex(byte, digits: 2))"
        return JSONError(message, at: index)
    }
}

/// The index of the first key that repeats an earlier one.
///
/// Small objects, the common case, are checked pairwise without hashing.
private func firstDuplicate(in keys: ArraySlice<String>) -> Int? {
    if keys.count <= 16 {
        for later in keys.indices.dropFirst() where keys[keys.startIndex..<later].contains(keys[later]) {
            return later
        }
        return nil
    }
    var seen = Set<String>(minimumCapacity: keys.count)
    return keys.indices.first { !seen.insert(keys[$0]).inserted }
}

/// `value` in upper-case hex, zero-padded to `digits`.
private func hex(_ value: UInt8, digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: digits - text.count) + text
}

/// `key` as a JSON string literal, for error messages.
private func quoted(_ key: String) -> String {
    var buffer: [UInt8] = []
    writeJSONString(key, to: &buffer)
    return String(decoding: buffer, as: UTF8.self)
}
