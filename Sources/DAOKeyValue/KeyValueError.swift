/// An error of the key-value store or a cache; the gateway gives each code its HTTP status. Errors of the
/// files themselves (busy, a failed statement, a value that does not decrypt) are `EngineError`s, as for DAO calls.
public struct KeyValueError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// A business, key or cache name that is not one.
        case invalidName = "invalid_name"
        /// A value, type, expiry, capacity or count that is not one.
        case invalidValue = "invalid_value"
        /// Beyond a limit the server sets: capacity, caches per space, value size.
        case limitExceeded = "limit_exceeded"
        /// Encryption asked of a server started without a key.
        case encryptionUnavailable = "encryption_unavailable"
        /// No value under the key (or it expired).
        case keyNotFound = "key_not_found"
        /// No cache of that name in the space.
        case unknownCache = "unknown_cache"
        /// The stored value has another type than the one asked for.
        case typeMismatch = "type_mismatch"
        /// A cache exists with settings the request contradicts.
        case cacheConflict = "cache_conflict"
        /// The memory all caches may use is spent.
        case memoryFull = "memory_full"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
