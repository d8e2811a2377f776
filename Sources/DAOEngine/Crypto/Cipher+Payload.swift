import DAOValue

/// The plaintext `Cipher` encrypts: one kind byte, then the value's bytes.
///
/// The layout is part of the stored format; see `Cipher`.
enum Payload {
    /// The kind byte. Stored in databases: never renumber.
    enum Kind: UInt8 {
        case string = 0x01
        case integer = 0x02
        case double = 0x03
        case bool = 0x04
        case blob = 0x05
        /// An array or an object, as JSON text.
        case json = 0x06
    }

    /// The deepest nesting of arrays and objects the JSON kind carries: what the parser reads back.
    static let maximumDepth = JSONParseOptions().maxDepth

    static func encode(_ value: Value) throws(CipherError) -> [UInt8] {
        switch value {
        case .null:
            throw CipherError(.unsupportedValue, "nil cannot be encrypted: store NULL as NULL")
        case .string(let string):
            var payload = [Kind.string.rawValue]
            payload.append(contentsOf: string.utf8)
            return payload
        case .integer(let integer):
            return [Kind.integer.rawValue] + bigEndianBytes(UInt64(bitPattern: integer))
        case .double(let double):
            return [Kind.double.rawValue] + bigEndianBytes(double.bitPattern)
        case .bool(let bool):
            return [Kind.bool.rawValue, bool ? 1 : 0]
        case .blob(let bytes):
            return [Kind.blob.rawValue] + bytes
        case .array, .object:
            try checkJSONCarriesExactly(value, depth: 0)
            var payload = [Kind.json.rawValue]
            value.writeJSON(to: &payload)
            return payload
        }
    }

    /// The value a decrypted, authenticated payload holds.
    static func decode(_ payload: [UInt8]) throws(CipherError) -> Value {
        guard let first = payload.first else { throw CipherError(.corrupt, "the decrypted payload is empty") }
        guard let kind = Kind(rawValue: first) else {
            throw CipherError(.corrupt, "the decrypted payload has the unknown kind \(first)")
        }
        let body = payload.dropFirst()
        switch kind {
        case .string:
            guard let string = String(validating: body, as: UTF8.self) else {
                throw CipherError(.corrupt, "the decrypted string is not valid UTF-8")
            }
            return .string(string)
        case .integer:
            return .integer(Int64(bitPattern: try fixedWidth(body, "integer")))
        case .double:
            return .double(Double(bitPattern: try fixedWidth(body, "double")))
        case .bool:
            guard body.count == 1, body.first! <= 1 else {
                throw CipherError(.corrupt, "the decrypted boolean is not one byte 0 or 1")
            }
            return .bool(body.first! == 1)
        case .blob:
            return .blob(Array(body))
        case .json:
            let value: Value
            do {
                value = try Value(parsingJSON: body)
            } catch {
                throw CipherError(.corrupt, "the decrypted JSON does not parse: \(error.message)")
            }
            guard value.arrayValue != nil || value.objectValue != nil else {
                throw CipherError(.corrupt, "the decrypted JSON is \(value.kindPhrase), not an array or an object")
            }
            return value
        }
    }

    /// Throws unless `value`, nested `depth` containers deep, is written by
    /// `writeJSON` in a form the parser reads back as the same value.
    private static func checkJSONCarriesExactly(_ value: Value, depth: Int) throws(CipherError) {
        switch value {
        case .array(let elements):
            try checkDepth(depth + 1)
            for element in elements { try checkJSONCarriesExactly(element, depth: depth + 1) }
        case .object(let members):
            try checkDepth(depth + 1)
            for member in members.values { try checkJSONCarriesExactly(member, depth: depth + 1) }
        case .blob:
            throw CipherError(
                .unsupportedValue, "an array or object holding binary data cannot be encrypted: JSON has no binary form")
        case .double(let double) where !double.isFinite:
            throw CipherError(
                .unsupportedValue, "an array or object holding \(double) cannot be encrypted: JSON has no such number")
        default:
            break
        }
    }

    private static func checkDepth(_ depth: Int) throws(CipherError) {
        guard depth <= maximumDepth else {
            throw CipherError(
                .unsupportedValue, "an array or object nested deeper than \(maximumDepth) levels cannot be encrypted")
        }
    }

    private static func bigEndianBytes(_ bits: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) }
    }

    /// The 8 big-endian bytes of `body` as a number; `.corrupt` for any other length.
    private static func fixedWidth(_ body: ArraySlice<UInt8>, _ kindName: String) throws(CipherError) -> UInt64 {
        guard body.count == 8 else {
            throw CipherError(.corrupt, "the decrypted \(kindName) is \(body.count) bytes, not 8")
        }
        return body.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
