import DAOEngine
import DAOValue

/// How a disk cache's values are stored in its `value` column, and read back.
///
/// A plain cache stores compact JSON text (UTF-8, SQLite TEXT), readable with
/// any SQLite tool. JSON has no binary type, so binary data is written as the
/// marker object `{"$base64":"<standard padded base64>"}` the gateway's JSON
/// uses, and read back with markers on: a blob comes back a blob, at any
/// depth. What JSON text cannot carry exactly is refused (`.invalidValue`)
/// rather than changed: a non-finite double, nesting deeper than the parser
/// reads, and an object whose only member is `$base64` (it would read back as
/// binary data).
///
/// An encrypted cache stores `Cipher.encrypt(value, context: "lru:<cache>/<key>")`
/// (BLOB): the kind of the value is kept, and the context ties the ciphertext
/// to its cache and key, so a ciphertext copied to another key or cache does
/// not decrypt. The cipher's own rules apply (an array or object holding
/// binary data or a non-finite double is refused).
enum DiskCacheCodec {
    /// The deepest nesting of arrays and objects that reads back, blob markers counted.
    static let maximumDepth = JSONParseOptions().maxDepth
    private static let readOptions = JSONParseOptions(binaryMarkers: true)

    /// The cipher context of an entry: binds its ciphertext to the cache and the key.
    static func context(cache: String, key: String) -> String { "lru:\(cache)/\(key)" }

    /// The binding of the `value` column for a non-null `value`.
    static func encode(_ value: Value, encrypted: Bool, cipher: Cipher?, cache: String, key: String) throws -> Value {
        if encrypted {
            guard let cipher else { throw DiskCaches.noCipher(cache) }
            return try cipher.encryptStored(value, context: context(cache: cache, key: key), what: "a value for cache '\(cache)'")
        }
        let hasBlob = try checkJSONCarries(value, depth: 0)
        let bytes = (hasBlob ? marked(value) : value).jsonBytes()
        return .string(String(decoding: bytes, as: UTF8.self))
    }

    /// The value a stored column holds. A ciphertext that does not decrypt
    /// (another key, another entry's, altered bytes) is `EngineError(.encryption)`.
    static func decode(_ stored: [UInt8], encrypted: Bool, cipher: Cipher?, cache: String, key: String) throws -> Value {
        if encrypted {
            guard let cipher else { throw DiskCaches.noCipher(cache) }
            return try cipher.decryptStored(stored, context: context(cache: cache, key: key), what: "a value of cache '\(cache)'")
        }
        do throws(JSONError) {
            return try Value(parsingJSON: stored, options: readOptions)
        } catch {
            throw EngineError(.storageFailed, "a value of cache '\(cache)' is not the JSON it should be: \(error.message)")
        }
    }

    /// Throws unless plain JSON storage carries `value` exactly; returns whether it holds binary data.
    private static func checkJSONCarries(_ value: Value, depth: Int) throws(KeyValueError) -> Bool {
        switch value {
        case .double(let double) where !double.isFinite:
            throw KeyValueError(.invalidValue, "\(double) cannot be stored in a plain cache: JSON has no such number")
        case .blob:
            // Stored as a marker object, one level deeper.
            if depth + 1 > maximumDepth { throw tooDeep }
            return true
        case .array(let elements):
            if depth + 1 > maximumDepth { throw tooDeep }
            var hasBlob = false
            for element in elements {
                if try checkJSONCarries(element, depth: depth + 1) { hasBlob = true }
            }
            return hasBlob
        case .object(let members):
            if depth + 1 > maximumDepth { throw tooDeep }
            if members.count == 1, members.keys[0] == "$base64" {
                throw KeyValueError(
                    .invalidValue, "an object whose only member is \"$base64\" cannot be stored in a plain cache: it is the JSON form of binary data")
            }
            var hasBlob = false
            for member in members.values {
                if try checkJSONCarries(member, depth: depth + 1) { hasBlob = true }
            }
            return hasBlob
        default:
            return false
        }
    }

    private static var tooDeep: KeyValueError {
        KeyValueError(.invalidValue, "arrays and objects nested deeper than \(maximumDepth) levels cannot be stored")
    }

    /// `value` with every blob replaced by its marker object (whose member
    /// `writeJSON` writes as base64 text).
    private static func marked(_ value: Value) -> Value {
        switch value {
        case .blob: .object(["$base64": value])
        case .array(let elements): .array(elements.map(marked))
        case .object(let members): .object(members.mapValues(marked))
        default: value
        }
    }
}
