#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import COpenSSL
import DAODialect

/// A caller's user id, validated: the only way a user id reaches the file system.
///
/// Ids are 1 to 128 visible ASCII characters (`!` to `~`: what an HTTP header
/// carries without ambiguity, and what the OpenAPI description can say). A file name
/// holds the id through a reversible encoding that can never contain `/`,
/// `.`, NUL or upper-case letters (so case-insensitive file systems cannot
/// merge two users): ids made only of `[a-z0-9_-]` keep their text behind a
/// `p-` prefix; any other id is the lower-case base32 (RFC 4648, no padding)
/// of its bytes behind an `x-` prefix. Either form is at most 207 characters.
/// The pattern of valid ids, for the OpenAPI description: `UserID.pattern`.
public struct UserID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public static let maximumLength = 128
    public static let pattern = "^[!-~]{1,128}$"

    public init(_ text: String) throws(EngineError) {
        let bytes = text.utf8.count
        guard bytes > 0 else { throw EngineError(.invalidUser, "the user id is empty") }
        guard bytes <= Self.maximumLength else {
            throw EngineError(.invalidUser, "the user id is \(bytes) bytes long; at most \(Self.maximumLength) are allowed")
        }
        guard text.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw EngineError(.invalidUser, "the user id has a character other than visible ASCII (! to ~): spaces, control characters and non-ASCII are not allowed")
        }
        rawValue = text
    }

    /// What logs and events may show: not the id, a keyed digest of it
    /// (`UserDigest`), which no one without the deployment's key can match
    /// to an id by trying guesses.
    public var description: String { "user#" + UserDigest.digest(rawValue) }

    /// The file-name form of the id.
    public var fileName: String {
        if rawValue.utf8.allSatisfy(Self.isPlain) { return "p-" + rawValue }
        return "x-" + Base32.encode(Array(rawValue.utf8))
    }

    /// The id back from its file-name form, nil when `name` is not one.
    public init?(fileName name: String) {
        if name.hasPrefix("p-") {
            let id = String(name.dropFirst(2))
            guard !id.isEmpty, id.utf8.allSatisfy(Self.isPlain), let user = try? UserID(id) else { return nil }
            self = user
        } else if name.hasPrefix("x-"), let bytes = Base32.decode(String(name.dropFirst(2))),
                  let text = String(validating: bytes, as: UTF8.self), let user = try? UserID(text),
                  user.fileName == name {
            self = user
        } else {
            return nil
        }
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}

/// Which database file a call runs in: the reference's APDataCenter common
/// and user databases, those of a named custom storage (`APCustomStorage`),
/// or one file a module is bound to (`daoWithPath:databasePath:`).
public enum DatabaseLocation: Sendable, Hashable, CustomStringConvertible {
    case common(storage: String?)
    case user(UserID, storage: String?)
    case file(String)

    /// The file's path relative to the data folder (`DataFolder`, which reads it back).
    public var relativePath: String { DataFolder.relativePath(of: self) }

    /// The location for logs: user ids digested.
    public var description: String {
        switch self {
        case .common(let storage): storage.map { "storage \($0), common" } ?? "common"
        case .user(let user, let storage): (storage.map { "storage \($0), " } ?? "") + user.description
        case .file(let path): "file \(path)"
        }
    }

    public var storage: String? {
        switch self {
        case .common(let storage), .user(_, let storage): storage
        case .file: nil
        }
    }

    /// Whether a reset of a storage (the default one when `storage` is nil),
    /// or of one user's database in it, covers this location. Files bound by
    /// a module (`.file`) belong to no storage.
    public func isIn(storage: String?, user: UserID?) -> Bool {
        switch self {
        case .common(let owner): user == nil && owner == storage
        case .user(let owner, let store): store == storage && (user == nil || user == owner)
        case .file: false
        }
    }
}

/// RFC 4648 base32, lower case, without padding.
enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            guard let index = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(index)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}

/// The digest of user ids in logs and events: HMAC-SHA256 under a
/// per-deployment key, its first 128 bits in hex. Unkeyed, a digest of a
/// guessable id (an e-mail address, a phone number) is recovered by hashing
/// guesses; 128 bits do not collide among any number of users.
///
/// The key is random for each process until `setKey` (`daogate serve` keeps
/// one in the data folder, so digests stay the same across restarts).
public enum UserDigest {
    /// 32 bytes, as SHA-256's block wants at least.
    public static let keyLength = 32
    private static let key = Mutex<[UInt8]>(randomKey())

    public static func setKey(_ bytes: [UInt8]) {
        precondition(bytes.count >= keyLength, "a digest key has at least \(keyLength) bytes")
        key.withLock { $0 = bytes }
    }

    /// The key kept in `folder` (`digest.key`, made with mode 0600 the first time).
    public static func loadOrMakeKey(in folder: String) throws -> [UInt8] {
        let path = folder + "/digest.key"
        // O_EXCL: never over a key another process made meanwhile.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            let made = randomKey()
            let written = write(descriptor, made, made.count)
            close(descriptor)
            guard written == made.count else {
                unlink(path)
                throw EngineError(.storageFailed, "cannot write \(path)")
            }
        }
        guard let bytes = FileManager.default.contents(atPath: path), bytes.count >= keyLength else {
            throw EngineError(.storageFailed, "\(path) must hold at least \(keyLength) bytes (delete it to make a new one)")
        }
        return [UInt8](bytes)
    }

    public static func randomKey() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: keyLength)
        precondition(RAND_bytes(&bytes, Int32(keyLength)) == 1, "OpenSSL's random generator failed")
        return bytes
    }

    /// 32 lower-case hex digits, under the deployment's key.
    public static func digest(_ text: String) -> String {
        key.withLock { key in digest(text, key: key, bytes: 16) }
    }

    /// The first `bytes` bytes of HMAC-SHA256(`key`, `text`), in hex.
    public static func digest(_ text: String, key: [UInt8], bytes: Int) -> String {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let data = Array(text.utf8)
        precondition(HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, &mac, &length) != nil, "HMAC-SHA256 failed")
        let hex = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(2 * bytes)
        for byte in mac.prefix(min(bytes, Int(length))) {
            output.append(hex[Int(byte >> 4)])
            output.append(hex[Int(byte & 15)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
