import ASCIIBytes
import DAOEngine
import DAOValue
import Foundation
import Synchronization

/// What `--auth jwt` checks in a token, besides its signature.
public struct JWTSettings: Sendable {
    /// The HS256 secret (raw bytes), and the PEM public keys or JWKS.
    public var secretFile: String?
    public var keysFile: String?
    /// The claim naming the caller's user (`sub`).
    public var userClaim: String
    /// When set, `aud` must be present and name it; `iss` must be present and equal it.
    public var audience: String?
    public var issuer: String?
    /// A claim making its bearer an admin: its value, or an array holding it (`role=admin`).
    public var adminClaim: (name: String, value: String)?
    /// Seconds of clock skew allowed on `nbf` and `iat`.
    public var leeway: Int
    /// Verified tokens remembered at once; 0 remembers none.
    public var cacheCapacity: Int

    public init(secretFile: String? = nil, keysFile: String? = nil, userClaim: String = "sub", audience: String? = nil,
                issuer: String? = nil, adminClaim: (name: String, value: String)? = nil, leeway: Int = 30,
                cacheCapacity: Int = 10_000) {
        self.secretFile = secretFile
        self.keysFile = keysFile
        self.userClaim = userClaim
        self.audience = audience
        self.issuer = issuer
        self.adminClaim = adminClaim
        self.leeway = leeway
        self.cacheCapacity = cacheCapacity
    }
}

/// A token that verified: whose it is, whether it is an admin's, until when.
public struct VerifiedToken: Sendable {
    public let user: UserID
    public let isAdmin: Bool
    /// `exp`, in seconds since 1970.
    public let expiry: Double
}

/// Why a token was refused; each cause its stable problem `code`.
public struct TokenRefusal: Error, Sendable {
    public enum Cause: String, Sendable, CaseIterable {
        case missing = "token_missing"
        case malformed = "token_malformed"
        case algorithm = "token_algorithm"
        case unknownKey = "token_unknown_key"
        case badSignature = "token_bad_signature"
        case expired = "token_expired"
        case notYetValid = "token_not_yet_valid"
        case wrongAudience = "token_wrong_audience"
        case wrongIssuer = "token_wrong_issuer"
        case noUser = "token_no_user"
    }

    public let cause: Cause
    public let detail: String

    public init(_ cause: Cause, _ detail: String) {
        self.cause = cause
        self.detail = detail
    }
}

/// A verified token as the cache's key: equal to another only when the whole token is, hashed by its length and
/// its last 32 bytes (the end of its signature), not all of its few hundred bytes.
///
/// Only tokens whose signature verified are remembered, and no one without the
/// keys can choose a signature's bytes, so the remembered keys cannot be made
/// to collide; a lookup of any other token costs one hash of 32 bytes and, at
/// most, comparisons with the few remembered tokens of the same hash.
struct RememberedToken: Hashable, Sendable {
    let token: String

    init(_ token: String) {
        self.token = token
    }

    func hash(into hasher: inout Hasher) {
        withUTF8Bytes(of: token) { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[max(0, bytes.count - 32)...])))
        }
    }

    static func == (left: RememberedToken, right: RememberedToken) -> Bool {
        left.token == right.token
    }
}

/// Verifies bearer JWTs (RFC 7519, RFC 8725's practice) with keys from files,
/// remembering verified tokens so a known caller costs a hash lookup.
///
/// The algorithm is the key's: a token's `alg` only selects among the keys
/// and must agree with the one that verifies it, so `none`, and HS256 signed
/// with an RSA public key, are refused. A `kid` must name a key; a token
/// without one is tried against the keys of its algorithm (a rotation's old
/// and new key). `exp` is required and checked without leeway, so a
/// remembered token is never taken past it; `nbf` and `iat` allow `leeway`.
///
/// `reload()` swaps the keys and forgets the remembered tokens in one step;
/// a request verifies against the keys it found, old or new, never none.
public final class JWTVerifier: Sendable {
    public let settings: JWTSettings
    private let clock: @Sendable () -> Double

    private struct State {
        var keys: JWTKeySet
        /// Counts key swaps, so a verification that straddles one is not remembered.
        var generation = 0
        var cache: [RememberedToken: VerifiedToken] = [:]
        /// The key files' identity (inode, size, modification time) when last read.
        var fileStamp: [String]
    }

    private let state: Mutex<State>

    public init(settings: JWTSettings, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 })
        throws(JWTKeyError) {
        self.settings = settings
        self.clock = clock
        let stamp = Self.stamp(settings)
        state = Mutex(State(keys: try JWTKeySet.load(secretFile: settings.secretFile, keysFile: settings.keysFile),
                            fileStamp: stamp))
    }

    /// The keys in use.
    public var keys: JWTKeySet { state.withLock { $0.keys } }

    /// Counts key swaps (`reload`): a holder of a verified token checks it again when this changes.
    public var generation: Int { state.withLock { $0.generation } }

    /// How many verified tokens are remembered.
    public var cachedCount: Int { state.withLock { $0.cache.count } }

    /// Reads the key files again and, when they hold keys, uses them from now
    /// on and forgets every remembered token; a failure keeps the old keys.
    @discardableResult
    public func reload() throws(JWTKeyError) -> JWTKeySet {
        let stamp = Self.stamp(settings)
        let keys: JWTKeySet
        do {
            keys = try JWTKeySet.load(secretFile: settings.secretFile, keysFile: settings.keysFile)
        } catch {
            // Not again until the file changes once more (a half-written file is retried when it is rewritten).
            state.withLock { $0.fileStamp = stamp }
            throw error
        }
        state.withLock { state in
            state.keys = keys
            state.generation += 1
            state.cache.removeAll()
            state.fileStamp = stamp
        }
        return keys
    }

    /// Whether a key file changed since it was last read (or tried).
    public var keyFilesChanged: Bool { Self.stamp(settings) != state.withLock { $0.fileStamp } }

    /// Reloads when a key file changed since it was last read; nil when nothing changed.
    public func reloadIfChanged() throws(JWTKeyError) -> JWTKeySet? {
        guard keyFilesChanged else { return nil }
        return try reload()
    }

    private static func stamp(_ settings: JWTSettings) -> [String] {
        [settings.secretFile, settings.keysFile].compactMap { $0 }.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return "\(path):missing" }
            return "\(path):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }

    /// The remembered verification of `token`, if it has not expired.
    public func cached(_ token: String) -> VerifiedToken? {
        let now = clock()
        return state.withLock { state in
            guard let entry = state.cache[RememberedToken(token)], entry.expiry > now else { return nil }
            return entry
        }
    }

    /// Verifies `token` (the text after `Bearer `), or says why not.
    public func verify(_ token: String) throws(TokenRefusal) -> VerifiedToken {
        let now = clock()
        // The common case, a remembered token, takes one lookup under the lock and nothing else.
        let key = RememberedToken(token)
        if let remembered = state.withLock({ $0.cache[key] }) {
            guard remembered.expiry > now else { throw TokenRefusal(.expired, "the token expired") }
            return remembered
        }
        let (keys, generation) = state.withLock { ($0.keys, $0.generation) }
        let verified = try verify(Array(token.utf8), keys: keys, now: now)
        state.withLock { state in
            // Keys swapped meanwhile: the token was checked with keys no longer in use; do not remember it.
            guard state.generation == generation, settings.cacheCapacity > 0 else { return }
            if state.cache.count >= settings.cacheCapacity {
                state.cache = state.cache.filter { $0.value.expiry > now }
                while state.cache.count >= settings.cacheCapacity { state.cache.remove(at: state.cache.startIndex) }
            }
            state.cache[key] = verified
        }
        return verified
    }

    /// The largest token taken: far more than any sensible claims set.
    static let maximumTokenBytes = 8192

    private func verify(_ token: [UInt8], keys: JWTKeySet, now: Double) throws(TokenRefusal) -> VerifiedToken {
        guard token.count <= Self.maximumTokenBytes else {
            throw TokenRefusal(.malformed, "the token is longer than \(Self.maximumTokenBytes) bytes")
        }
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw TokenRefusal(.malformed, "a JWT is three base64url parts separated by dots (a JWS in compact form)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]), case .object(let header)? = try? Value(parsingJSON: headerBytes),
              let payloadBytes = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2])
        else {
            throw TokenRefusal(.malformed, "the token's header, payload or signature is not base64url of JSON")
        }
        guard case .string(let algorithm)? = header["alg"] else { throw TokenRefusal(.malformed, "the token's header has no alg") }
        if header["crit"] != nil { throw TokenRefusal(.malformed, "the token's header has crit extensions daogate does not know") }
        guard algorithm.lowercased() != "none" else { throw TokenRefusal(.algorithm, "an unsigned token (alg none) is refused") }

        var candidates = keys.keys
        switch header["kid"] {
        case nil: break
        case .string(let id)?:
            candidates = candidates.filter { $0.id == id }
            guard !candidates.isEmpty else { throw TokenRefusal(.unknownKey, "no key has the token's kid") }
        default: throw TokenRefusal(.malformed, "the token's kid is not a string")
        }
        let forAlgorithm = candidates.filter { $0.algorithm.rawValue == algorithm }
        guard !forAlgorithm.isEmpty else {
            let algorithms = Set(candidates.map(\.algorithm.rawValue)).sorted().joined(separator: ", ")
            throw TokenRefusal(.algorithm, "the token says alg \(algorithm.prefix(20)); its key is for \(algorithms)")
        }
        let input = token[..<(parts[0].count + 1 + parts[1].count)]
        guard forAlgorithm.contains(where: { $0.verify(input, signature: signature) }) else {
            throw TokenRefusal(.badSignature, "the token's signature does not verify")
        }

        guard case .object(let claims)? = try? Value(parsingJSON: payloadBytes) else {
            throw TokenRefusal(.malformed, "the token's payload is not a JSON object")
        }
        func time(_ name: String) throws(TokenRefusal) -> Double? {
            switch claims[name] {
            case nil: return nil
            case .integer(let seconds)?: return Double(seconds)
            case .double(let seconds)? where seconds.isFinite: return seconds
            default: throw TokenRefusal(.malformed, "the token's \(name) is not a number of seconds")
            }
        }
        guard let expiry = try time("exp") else { throw TokenRefusal(.malformed, "the token has no exp; daogate requires one") }
        guard now < expiry else { throw TokenRefusal(.expired, "the token expired") }
        let leeway = Double(settings.leeway)
        if let notBefore = try time("nbf"), now + leeway < notBefore {
            throw TokenRefusal(.notYetValid, "the token is not valid yet (nbf)")
        }
        if let issuedAt = try time("iat"), now + leeway < issuedAt {
            throw TokenRefusal(.notYetValid, "the token was issued in the future (iat)")
        }
        if let audience = settings.audience {
            let matches = switch claims["aud"] {
            case .string(let aud)?: aud == audience
            case .array(let auds)?: auds.contains(.string(audience))
            default: false
            }
            guard matches else { throw TokenRefusal(.wrongAudience, "the token is not for this audience (aud)") }
        }
        if let issuer = settings.issuer {
            guard claims["iss"] == .string(issuer) else { throw TokenRefusal(.wrongIssuer, "the token is not from the expected issuer (iss)") }
        }
        guard case .string(let name)? = claims[settings.userClaim], let user = try? UserID(name) else {
            throw TokenRefusal(.noUser, "the token's \(settings.userClaim) claim is not a user id (1 to 128 visible ASCII characters)")
        }
        var isAdmin = false
        if let admin = settings.adminClaim {
            isAdmin = switch claims[admin.name] {
            case .string(let value)?: value == admin.value
            case .array(let values)?: values.contains(.string(admin.value))
            default: false
            }
        }
        return VerifiedToken(user: user, isAdmin: isAdmin, expiry: expiry)
    }
}
