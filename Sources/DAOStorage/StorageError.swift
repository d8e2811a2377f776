/// An error of the key-value store or a cache, with the HTTP status it
/// answers with. Errors of the files themselves (busy, a failed statement,
/// a value that does not decrypt) are `EngineError`s, as for DAO calls.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// A business, key or cache name that is not one (400).
        case invalidName = "invalid_name"
        /// A value, type, expiry, capacity or count that is not one (400).
        case invalidValue = "invalid_value"
        /// Beyond a limit the server sets: capacity, caches per space, value size (400).
        case limitExceeded = "limit_exceeded"
        /// Encryption asked of a server started without a key (400).
        case encryptionUnavailable = "encryption_unavailable"
        /// No value under the key (or it expired) (404).
        case keyNotFound = "key_not_found"
        /// No cache of that name in the space (404).
        case unknownCache = "unknown_cache"
        /// The stored value has another type than the one asked for (409).
        case typeMismatch = "type_mismatch"
        /// A cache exists with settings the request contradicts (409).
        case cacheConflict = "cache_conflict"
        /// The memory all caches may use is spent (507).
        case memoryFull = "memory_full"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var status: Int {
        switch code {
        case .invalidName, .invalidValue, .limitExceeded, .encryptionUnavailable: 400
        case .keyNotFound, .unknownCache: 404
        case .typeMismatch, .cacheConflict: 409
        case .memoryFull: 507
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
