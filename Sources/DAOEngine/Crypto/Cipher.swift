import COpenSSL
import DAOValue

/// Encrypts and decrypts `Value`s with AES-256-GCM: the reference's
/// `<crypt class property/>`, and encrypted key-value and disk-cache entries.
///
/// Through OpenSSL's EVP API, with a fresh random 96-bit nonce per value,
/// under a key of a `Keyring`. A ciphertext is stored in users' databases,
/// so its format is stable and versioned. Version 2, which every value is
/// written in, records the id of its key:
///
/// | bytes   | content                                          |
/// |---------|--------------------------------------------------|
/// | 2       | magic `"DG"` (`0x44 0x47`)                       |
/// | 1       | format version, `0x02`                           |
/// | 1       | length of the key id, 1 to 64                    |
/// | 1…64    | the key id, ASCII (see `Keyring.checkID`)        |
/// | 12      | random nonce (`RAND_bytes`)                      |
/// | n ≥ 1   | AES-256-GCM encryption of the payload            |
/// | 16      | GCM authentication tag                           |
///
/// Version 1, written before keys had ids, has no id bytes (magic, `0x01`,
/// nonce, payload, tag): it is read with the key `default` (`Keyring.defaultID`),
/// the id `--key-file`'s key has.
///
/// The payload is one kind byte followed by the value:
///
/// | kind   | value                                                   |
/// |--------|---------------------------------------------------------|
/// | `0x01` | string: its UTF-8                                       |
/// | `0x02` | integer: 8 bytes, two's complement, big-endian          |
/// | `0x03` | double: its 8 IEEE 754 bytes, big-endian                |
/// | `0x04` | bool: 1 byte, `0x00` or `0x01`                          |
/// | `0x05` | blob: the bytes as they are                             |
/// | `0x06` | array or object: compact JSON text, members in order    |
///
/// The associated data is the header (magic, version, and in version 2 the
/// key id with its length) followed by the UTF-8 of the context, so neither
/// the version, the key id nor the context can be swapped: a ciphertext
/// copied to another property does not decrypt.
public struct Cipher: Sendable {
    /// The keys; shared by every copy of this cipher, so a reload of the ring reaches them all.
    public let keyring: Keyring

    public init(keyring: Keyring) {
        self.keyring = keyring
    }

    /// A cipher of one key, whose id is `default`.
    public init(key: CipherKey) {
        self.init(keyring: Keyring(key: key))
    }

    static let magic: [UInt8] = [0x44, 0x47]
    /// The version every value is written in.
    static let version: UInt8 = 0x02
    /// The version before key ids, read with the key `default`.
    static let versionWithoutKeyID: UInt8 = 0x01
    /// Version 1's header, which is also its associated data's first bytes.
    static let header: [UInt8] = [0x44, 0x47, 0x01]
    static let nonceSize = 12
    static let tagSize = 16
    /// The shortest version 1 ciphertext: header, nonce, a kind byte, tag.
    static let minimumSize = header.count + nonceSize + 1 + tagSize

    /// The header of a version 2 ciphertext written with the key `keyID`.
    public static func header(keyID: String) -> [UInt8] {
        magic + [version, UInt8(keyID.utf8.count)] + Array(keyID.utf8)
    }

    /// Encrypts a non-null value under `context`, e.g. the property name
    /// `"content"` or `"kv:biz/key"`, which `decrypt` must be given again,
    /// with the key `keyID` (a module's own key), else the ring's current one.
    ///
    /// `.null` is refused (`.unsupportedValue`): callers store NULL as NULL. So
    /// is an array or object that JSON cannot carry exactly: one holding a blob,
    /// or a non-finite double, or nested deeper than the JSON parser reads.
    /// A `keyID` the ring lacks is `.keyMissing`.
    public func encrypt(_ value: Value, context: String, keyID: String? = nil) throws(CipherError) -> [UInt8] {
        let ring = keyring.snapshot
        let id = keyID ?? ring.current
        guard let key = ring.keys[id] else { throw Self.missing(id, in: ring) }
        let payload = try Payload.encode(value)
        var nonce = [UInt8](repeating: 0, count: Self.nonceSize)
        try checkOpenSSL(RAND_bytes(&nonce, Int32(Self.nonceSize)), "RAND_bytes")
        var tag = [UInt8](repeating: 0, count: Self.tagSize)
        let header = Self.header(keyID: id)
        let encrypted = try run(encrypting: true, payload, key: key, header: header, nonce: nonce, tag: &tag, context: context)

        var ciphertext = header
        ciphertext.reserveCapacity(header.count + Self.nonceSize + encrypted.count + Self.tagSize)
        ciphertext += nonce
        ciphertext += encrypted
        ciphertext += tag
        return ciphertext
    }

    /// The value that `encrypt` was given, with its original kind, decrypted
    /// with the key whose id the ciphertext records (`default` for version 1).
    ///
    /// A wrong key, a wrong context or any altered byte throws
    /// `.authenticationFailed`, and nothing is decoded before the tag is
    /// verified. A key the ring lacks throws `.keyMissing` naming it. Bytes
    /// not in the format throw `.notCiphertext` (no magic),
    /// `.unsupportedVersion` (another version) or `.corrupt` (too short) —
    /// never a value.
    public func decrypt(_ ciphertext: [UInt8], context: String) throws(CipherError) -> Value {
        let parsed = try Self.parseHeader(ciphertext)
        let ring = keyring.snapshot
        guard let key = ring.keys[parsed.keyID] else { throw Self.missing(parsed.keyID, in: ring, written: true) }
        let encryptedStart = parsed.headerLength + Self.nonceSize
        let tagStart = ciphertext.count - Self.tagSize
        var tag = Array(ciphertext[tagStart...])
        let payload = try run(
            encrypting: false, Array(ciphertext[encryptedStart..<tagStart]), key: key,
            header: Array(ciphertext[..<parsed.headerLength]),
            nonce: Array(ciphertext[parsed.headerLength..<encryptedStart]), tag: &tag, context: context)
        return try Payload.decode(payload)
    }

    /// The id of the key `ciphertext` was written with (`default` for
    /// version 1), and whether it is in the current version; nil for bytes not in the format.
    public static func keyID(of ciphertext: [UInt8]) -> (id: String, isCurrentVersion: Bool)? {
        guard let parsed = try? parseHeader(ciphertext) else { return nil }
        return (parsed.keyID, ciphertext[2] == version)
    }

    /// Whether `bytes` look like this format: the magic, a version this build
    /// reads, and at least the shortest length. Cheap and keyless; whether they
    /// are authentic only `decrypt` can tell.
    public static func isCiphertext(_ bytes: [UInt8]) -> Bool {
        (try? parseHeader(bytes)) != nil
    }

    /// The key id and the header's length, after checking the magic, the
    /// version and that the bytes are long enough for a value.
    private static func parseHeader(_ ciphertext: [UInt8]) throws(CipherError) -> (keyID: String, headerLength: Int) {
        guard ciphertext.count >= 3, ciphertext[0] == magic[0], ciphertext[1] == magic[1] else {
            throw CipherError(.notCiphertext, "the bytes are not a daogate ciphertext")
        }
        let keyID: String
        let headerLength: Int
        switch ciphertext[2] {
        case versionWithoutKeyID:
            keyID = Keyring.defaultID
            headerLength = 3
        case version:
            guard ciphertext.count >= 4, (1...Keyring.maximumIDLength).contains(Int(ciphertext[3])),
                  ciphertext.count >= 4 + Int(ciphertext[3]) else {
                throw CipherError(.corrupt, "a ciphertext of \(ciphertext.count) bytes is truncated or has no key id")
            }
            headerLength = 4 + Int(ciphertext[3])
            let id = String(decoding: ciphertext[4..<headerLength], as: UTF8.self)
            guard (try? Keyring.checkID(id)) != nil else {
                throw CipherError(.corrupt, "the ciphertext's key id is not a key id")
            }
            keyID = id
        default:
            throw CipherError(
                .unsupportedVersion,
                "ciphertext format version \(ciphertext[2]) is not supported; this build reads versions 1 and 2")
        }
        let minimum = headerLength + nonceSize + 1 + tagSize
        guard ciphertext.count >= minimum else {
            throw CipherError(
                .corrupt, "a ciphertext of \(ciphertext.count) bytes is truncated: it needs at least \(minimum)")
        }
        return (keyID, headerLength)
    }

    /// The error of a key id the ring lacks.
    static func missing(_ id: String, in ring: Keyring.Snapshot, written: Bool = false) -> CipherError {
        let what = written ? "the value was encrypted with the key '\(id)'" : "the key '\(id)' is asked for"
        var error = CipherError(.keyMissing, "\(what), which is not in the keyring (\(Keyring.list(ring.keys.keys)))")
        error.keyID = id
        return error
    }

    /// Runs AES-256-GCM over `input` with `key` and `nonce`, authenticating
    /// `header` and `context`. Encrypting fills `tag`; decrypting verifies it
    /// and throws `.authenticationFailed` when it does not match.
    private func run(
        encrypting: Bool, _ input: [UInt8], key: CipherKey, header: [UInt8], nonce: [UInt8], tag: inout [UInt8],
        context: String
    ) throws(CipherError) -> [UInt8] {
        guard let inputLength = Int32(exactly: input.count) else {
            throw CipherError(encrypting ? .unsupportedValue : .corrupt, "\(input.count) bytes are too many for AES-GCM")
        }
        guard let cipher = EVP_CIPHER_CTX_new() else { throw CipherError.openSSL(failing: "EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(cipher) }
        let direction: Int32 = encrypting ? 1 : 0
        try checkOpenSSL(EVP_CipherInit_ex(cipher, EVP_aes_256_gcm(), nil, nil, nil, direction), "EVP_CipherInit_ex")
        try checkOpenSSL(
            EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.nonceSize), nil), "EVP_CTRL_GCM_SET_IVLEN")
        try checkOpenSSL(
            key.material.withBytes { EVP_CipherInit_ex(cipher, nil, nil, $0, nonce, direction) }, "EVP_CipherInit_ex")

        let associatedData = header + Array(context.utf8)
        var length: Int32 = 0
        try checkOpenSSL(
            EVP_CipherUpdate(cipher, nil, &length, associatedData, Int32(associatedData.count)), "EVP_CipherUpdate")
        var output = [UInt8](repeating: 0, count: input.count)
        try checkOpenSSL(EVP_CipherUpdate(cipher, &output, &length, input, inputLength), "EVP_CipherUpdate")
        let outputLength = Int(length)

        if !encrypting {
            try checkOpenSSL(
                EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagSize), &tag), "EVP_CTRL_GCM_SET_TAG")
        }
        var rest = [UInt8](repeating: 0, count: Int(EVP_MAX_BLOCK_LENGTH))
        guard EVP_CipherFinal_ex(cipher, &rest, &length) > 0 else {
            guard encrypting else {
                ERR_clear_error()
                throw CipherError(
                    .authenticationFailed,
                    "the ciphertext does not authenticate for context \"\(context)\": "
                        + "a wrong key, a wrong context, or altered bytes")
            }
            throw CipherError.openSSL(failing: "EVP_CipherFinal_ex")
        }
        guard outputLength == input.count, length == 0 else {
            throw CipherError(.openSSL, "AES-256-GCM gave \(outputLength + Int(length)) bytes for \(input.count)")
        }
        if encrypting {
            try checkOpenSSL(
                EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagSize), &tag), "EVP_CTRL_GCM_GET_TAG")
        }
        return output
    }
}
