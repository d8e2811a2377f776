import ASCIIBytes

/// The names the storage layers take from callers, checked before they reach
/// a file or a table.
public enum Names {
    public static let maximumBusinessLength = 128
    public static let maximumKeyLength = 1024
    public static let maximumCacheNameLength = 64

    /// A KV business: 1 to 128 characters (code points, as JSON Schema's
    /// `maxLength` counts), no `/` (it is one path segment), no control characters.
    public static func checkBusiness(_ business: String) throws(KeyValueError) {
        let bytes = business.utf8
        let length = business.unicodeScalars.count
        guard length >= 1, length <= maximumBusinessLength else {
            throw KeyValueError(.invalidName, "a business is 1 to \(maximumBusinessLength) characters, not \(length)")
        }
        guard !bytes.contains(UInt8(ascii: "/")), !bytes.contains(where: isASCIIControl) else {
            throw KeyValueError(.invalidName, "a business has no '/' and no control characters")
        }
    }

    /// A key of the KV store or a cache: 1 to 1024 characters (code points)
    /// without control characters (`/` is allowed).
    public static func checkKey(_ key: String) throws(KeyValueError) {
        let bytes = key.utf8
        let length = key.unicodeScalars.count
        guard length >= 1, length <= maximumKeyLength else {
            throw KeyValueError(.invalidName, "a key is 1 to \(maximumKeyLength) characters, not \(length)")
        }
        guard !bytes.contains(where: isASCIIControl) else {
            throw KeyValueError(.invalidName, "a key has no control characters")
        }
    }

    /// A cache name: an identifier of 1 to 64 ASCII letters, digits and `_`,
    /// not starting with a digit (a disk cache's table is named after it).
    public static func checkCacheName(_ name: String) throws(KeyValueError) {
        guard name.utf8.count <= maximumCacheNameLength, isIdentifier(name) else {
            throw KeyValueError(.invalidName, "a cache name is 1 to \(maximumCacheNameLength) letters, digits and '_', not starting with a digit")
        }
    }
}
