import COpenSSL
import DAOValue
import Foundation

/// A JWS algorithm daogate verifies. Each key is for exactly one, and the key
/// decides: a token's `alg` only has to agree with it.
public enum JWTAlgorithm: String, Sendable, CaseIterable {
    case hs256 = "HS256", rs256 = "RS256", es256 = "ES256", edDSA = "EdDSA"
}

/// Why a key file could not be used; the server keeps its previous keys (or does not start).
public struct JWTKeyError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// An OpenSSL public key (`EVP_PKEY *`).
typealias PublicKeyHandle = OpaquePointer

/// One verification key: an HMAC secret (HS256) or a public key (RS256,
/// ES256, EdDSA), with its JWKS `kid` when it has one.
///
/// Verification is libcrypto's (`EVP_DigestVerify`, `HMAC`), already linked
/// for the engine's encryption; a key is immutable and shared by every worker thread.
public final class JWTKey: @unchecked Sendable {
    public let algorithm: JWTAlgorithm
    public let id: String?
    private let secret: [UInt8]
    private let publicKey: PublicKeyHandle?

    /// The smallest HS256 secret (RFC 7518 §3.2: a key as long as the hash).
    public static let minimumSecretBytes = 32
    /// The smallest RSA modulus taken (RFC 7518 §3.3).
    public static let minimumRSABits: Int32 = 2048

    /// An HS256 secret of at least 32 bytes.
    public init(secret: [UInt8], id: String? = nil) throws(JWTKeyError) {
        guard secret.count >= Self.minimumSecretBytes else {
            throw JWTKeyError("an HS256 secret needs at least \(Self.minimumSecretBytes) bytes, this one has \(secret.count)")
        }
        algorithm = .hs256
        self.id = id
        self.secret = secret
        publicKey = nil
    }

    /// Takes ownership of `key`; its type decides the algorithm.
    init(publicKey key: PublicKeyHandle, id: String?) throws(JWTKeyError) {
        let algorithm: JWTAlgorithm
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(key) >= Self.minimumRSABits else {
                EVP_PKEY_free(key)
                throw JWTKeyError("an RSA key needs at least \(Self.minimumRSABits) bits")
            }
            algorithm = .rs256
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &length) == 1,
                  String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
            else {
                EVP_PKEY_free(key)
                throw JWTKeyError("an EC key must be on P-256 (ES256)")
            }
            algorithm = .es256
        case EVP_PKEY_ED25519:
            algorithm = .edDSA
        default:
            EVP_PKEY_free(key)
            throw JWTKeyError("a public key must be RSA, EC P-256 or Ed25519")
        }
        self.algorithm = algorithm
        self.id = id
        secret = []
        publicKey = key
    }

    deinit {
        if let publicKey { EVP_PKEY_free(publicKey) }
    }

    /// Whether `signature` signs `input` (the token's `header.payload` text) under this key.
    func verify(_ input: ArraySlice<UInt8>, signature: [UInt8]) -> Bool {
        switch algorithm {
        case .hs256:
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            let made = input.withUnsafeBytes { input in
                HMAC(EVP_sha256(), secret, Int32(secret.count), input.bindMemory(to: UInt8.self).baseAddress, input.count,
                     &digest, &length)
            }
            guard made != nil, Int(length) == signature.count else { return false }
            return CRYPTO_memcmp(digest, signature, signature.count) == 0
        case .rs256:
            return digestVerify(input, signature, EVP_sha256())
        case .es256:
            // JWS writes r‖s (RFC 7518 §3.4); libcrypto takes the DER ECDSA-Sig-Value.
            guard signature.count == 64 else { return false }
            return digestVerify(input, Self.derSignature(r: signature[0..<32], s: signature[32..<64]), EVP_sha256())
        case .edDSA:
            return digestVerify(input, signature, nil)
        }
    }

    private func digestVerify(_ input: ArraySlice<UInt8>, _ signature: [UInt8], _ digest: OpaquePointer?) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, publicKey) == 1 else { return false }
        return input.withUnsafeBytes { input in
            EVP_DigestVerify(context, signature, signature.count, input.bindMemory(to: UInt8.self).baseAddress, input.count) == 1
        }
    }

    /// `SEQUENCE { INTEGER r, INTEGER s }` of 32-byte unsigned big-endian halves.
    static func derSignature(r: ArraySlice<UInt8>, s: ArraySlice<UInt8>) -> [UInt8] {
        DER.sequence(DER.integer(r) + DER.integer(s))
    }
}

/// The keys tokens are verified with, from the configured files.
public struct JWTKeySet: Sendable {
    public let keys: [JWTKey]
    /// Keys of the JWKS left out (an unknown `kty`, another algorithm, `use` other than `sig`), with why.
    public let skipped: [String]

    public init(keys: [JWTKey], skipped: [String] = []) {
        self.keys = keys
        self.skipped = skipped
    }

    /// The HS256 secret file (raw bytes, all of them) and the keys file (PEM public keys or a JWKS).
    public static func load(secretFile: String?, keysFile: String?) throws(JWTKeyError) -> JWTKeySet {
        var keys: [JWTKey] = []
        var skipped: [String] = []
        if let secretFile {
            keys.append(try JWTKey(secret: try read(secretFile)))
        }
        if let keysFile {
            let bytes = try read(keysFile)
            let set = bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{")
                ? try jwks(bytes) : JWTKeySet(keys: try pem(bytes))
            keys += set.keys
            skipped += set.skipped.map { "\(keysFile): \($0)" }
        }
        guard !keys.isEmpty else { throw JWTKeyError("no JWT key: give --jwt-secret-file or --jwt-keys") }
        return JWTKeySet(keys: keys, skipped: skipped)
    }

    static func read(_ path: String) throws(JWTKeyError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw JWTKeyError("cannot read the key file \(path)") }
        return [UInt8](data)
    }

    /// Every `PUBLIC KEY` block of a PEM text (several keys overlap during a rotation).
    static func pem(_ bytes: [UInt8]) throws(JWTKeyError) -> [JWTKey] {
        var keys: [JWTKey] = []
        let handles: [PublicKeyHandle] = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return [] }
            defer { BIO_free(bio) }
            var handles: [PublicKeyHandle] = []
            while let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) { handles.append(key) }
            ERR_clear_error()
            return handles
        }
        var failure: JWTKeyError?
        for handle in handles {
            do { keys.append(try JWTKey(publicKey: handle, id: nil)) } catch { failure = error }
        }
        if let failure { throw failure }
        guard !keys.isEmpty else { throw JWTKeyError("the keys file holds no PEM public key (-----BEGIN PUBLIC KEY-----) and is not a JWKS") }
        return keys
    }

    /// A JWKS (RFC 7517): RSA, EC P-256, OKP Ed25519 and oct keys for signatures;
    /// any other key is skipped with a reason, not a failure of the whole set.
    static func jwks(_ bytes: [UInt8]) throws(JWTKeyError) -> JWTKeySet {
        guard case .object(let root)? = try? Value(parsingJSON: bytes), case .array(let entries)? = root["keys"] else {
            throw JWTKeyError("a JWKS is a JSON object with a keys array")
        }
        var keys: [JWTKey] = []
        var skipped: [String] = []
        for (index, entry) in entries.enumerated() {
            guard case .object(let members) = entry else { skipped.append("key \(index) is not an object"); continue }
            func string(_ name: String) -> String? {
                if case .string(let text)? = members[name] { return text }
                return nil
            }
            let id = string("kid")
            let label = "key \(index)\(id.map { " (kid \($0))" } ?? "")"
            if let use = string("use"), use != "sig" { skipped.append("\(label): use is \(use), not sig"); continue }
            do {
                let key = try jwk(kty: string("kty") ?? "", id: id, string)
                if let alg = string("alg"), alg != key.algorithm.rawValue {
                    skipped.append("\(label): alg \(alg) is not the \(key.algorithm.rawValue) its key is for")
                    continue
                }
                keys.append(key)
            } catch {
                skipped.append("\(label): \(error)")
            }
        }
        return JWTKeySet(keys: keys, skipped: skipped)
    }

    private static func jwk(kty: String, id: String?, _ member: (String) -> String?) throws(JWTKeyError) -> JWTKey {
        func bytes(_ name: String) throws(JWTKeyError) -> [UInt8] {
            guard let text = member(name), let decoded = Base64URL.decode(text) else {
                throw JWTKeyError("\(name) is missing or not base64url")
            }
            return decoded
        }
        switch kty {
        case "oct":
            return try JWTKey(secret: try bytes("k"), id: id)
        case "RSA":
            let modulus = DER.integer(try bytes("n")), exponent = DER.integer(try bytes("e"))
            let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
            return try JWTKey(publicKey: try subjectPublicKeyInfo(algorithm: rsaEncryption,
                                                                  key: DER.sequence(modulus + exponent)), id: id)
        case "EC":
            guard member("crv") == "P-256" else { throw JWTKeyError("an EC key must be on P-256 (ES256)") }
            let x = try bytes("x"), y = try bytes("y")
            guard x.count == 32, y.count == 32 else { throw JWTKeyError("a P-256 key's x and y are 32 bytes each") }
            // id-ecPublicKey, prime256v1.
            let ecP256: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
                                   0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
            return try JWTKey(publicKey: try subjectPublicKeyInfo(algorithm: ecP256, key: [0x04] + x + y), id: id)
        case "OKP":
            guard member("crv") == "Ed25519" else { throw JWTKeyError("an OKP key must be Ed25519 (EdDSA)") }
            let x = try bytes("x")
            guard x.count == 32, let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, x, x.count) else {
                throw JWTKeyError("an Ed25519 key's x is 32 bytes")
            }
            return try JWTKey(publicKey: key, id: id)
        default:
            throw JWTKeyError("kty '\(kty.prefix(20))' is not RSA, EC, OKP or oct")
        }
    }

    /// A public key from its DER `SubjectPublicKeyInfo` (RFC 5280 §4.1), which
    /// libcrypto parses and checks (an EC point must be on the curve).
    private static func subjectPublicKeyInfo(algorithm: [UInt8], key: [UInt8]) throws(JWTKeyError) -> PublicKeyHandle {
        let der = DER.sequence(DER.sequence(algorithm) + DER.element(0x03, [0x00] + key))
        let handle = der.withUnsafeBufferPointer { buffer -> PublicKeyHandle? in
            var pointer = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let handle else {
            ERR_clear_error()
            throw JWTKeyError("the key's parameters do not make a valid public key")
        }
        return handle
    }
}

/// The few DER (X.690) encodings a JWK's public key and an ES256 signature need.
enum DER {
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var count = content.count
            while count > 0 { length.insert(UInt8(count & 0xFF), at: 0); count >>= 8 }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }

    static func sequence(_ content: [UInt8]) -> [UInt8] { element(0x30, content) }

    /// An unsigned big-endian integer.
    static func integer<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return element(0x02, value)
    }
}

/// Unpadded base64url (RFC 4648 §5), as JWS and JWK write it; strict like `Base64`.
enum Base64URL {
    static func decode<Bytes: Collection<UInt8>>(_ text: Bytes) -> [UInt8]? {
        var standard: [UInt8] = []
        standard.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            default: standard.append(byte)
            }
        }
        if standard.count % 4 == 1 { return nil }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Base64.decode(String(decoding: standard, as: UTF8.self))
    }

    static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }
}
