import COpenSSL
import DAOValue

/// Encrypts and decrypts `Value`s with AES-256-GCM: the reference's
/// `<crypt class property/>`, and encrypted key-value entries.
///
/// Through OpenSSL's EVP API, with a fresh random 96-bit nonce per value. A
/// ciphertext is stored in users' databases, so its format is stable and
/// versioned:
///
/// | bytes | content                                          |
/// |-------|--------------------------------------------------|
/// | 2     | magic `"DG"` (`0x44 0x47`)                       |
/// | 1     | format version, `0x01`                           |
/// | 12    | random nonce (`RAND_bytes`)                      |
/// | n ≥ 1 | AES-256-GCM encryption of the payload            |
/// | 16    | GCM authentication tag                           |
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
/// The associated data is the 3 header bytes (magic and version) followed by
/// the UTF-8 of the context, so neither the version nor the context can be
/// swapped: a ciphertext copied to another property does not decrypt.
public struct Cipher: Sendable {
    private let key: CipherKey

    public init(key: CipherKey) {
        self.key = key
    }

    /// The format's first bytes: magic `"DG"` and the version.
    static let header: [UInt8] = [0x44, 0x47, 0x01]
    static let nonceSize = 12
    static let tagSize = 16
    /// The shortest ciphertext: header, nonce, a kind byte, tag.
    static let minimumSize = header.count + nonceSize + 1 + tagSize

    /// Encrypts a non-null value under `context`, e.g. the property name
    /// `"content"` or `"kv:biz/key"`, which `decrypt` must be given again.
    ///
    /// `.null` is refused (`.unsupportedValue`): callers store NULL as NULL. So
    /// is an array or object that JSON cannot carry exactly: one holding a blob,
    /// or a non-finite double, or nested deeper than the JSON parser reads.
    public func encrypt(_ value: Value, context: String) throws(CipherError) -> [UInt8] {
        let payload = try Payload.encode(value)
        var nonce = [UInt8](repeating: 0, count: Self.nonceSize)
        try checkOpenSSL(RAND_bytes(&nonce, Int32(Self.nonceSize)), "RAND_bytes")
        var tag = [UInt8](repeating: 0, count: Self.tagSize)
        let encrypted = try run(encrypting: true, payload, nonce: nonce, tag: &tag, context: context)

        var ciphertext = Self.header
        ciphertext.reserveCapacity(Self.minimumSize - 1 + encrypted.count)
        ciphertext += nonce
        ciphertext += encrypted
        ciphertext += tag
        return ciphertext
    }

    /// The value that `encrypt` was given, with its original kind.
    ///
    /// A wrong key, a wrong context or any altered byte throws
    /// `.authenticationFailed`, and nothing is decoded before the tag is
    /// verified. Bytes not in the format throw `.notCiphertext` (no magic),
    /// `.unsupportedVersion` (another version) or `.corrupt` (too short) —
    /// never a value.
    public func decrypt(_ ciphertext: [UInt8], context: String) throws(CipherError) -> Value {
        let header = Self.header
        guard ciphertext.count >= header.count, ciphertext[0] == header[0], ciphertext[1] == header[1] else {
            throw CipherError(.notCiphertext, "the bytes are not a daogate ciphertext")
        }
        guard ciphertext[2] == header[2] else {
            throw CipherError(
                .unsupportedVersion,
                "ciphertext format version \(ciphertext[2]) is not supported; this build reads version \(header[2])")
        }
        guard ciphertext.count >= Self.minimumSize else {
            throw CipherError(
                .corrupt, "a ciphertext of \(ciphertext.count) bytes is truncated: it needs at least \(Self.minimumSize)")
        }
        let encryptedStart = header.count + Self.nonceSize
        let tagStart = ciphertext.count - Self.tagSize
        var tag = Array(ciphertext[tagStart...])
        let payload = try run(
            encrypting: false, Array(ciphertext[encryptedStart..<tagStart]),
            nonce: Array(ciphertext[header.count..<encryptedStart]), tag: &tag, context: context)
        return try Payload.decode(payload)
    }

    /// Whether `bytes` look like this format: the magic, a version this build
    /// reads, and at least the shortest length. Cheap and keyless; whether they
    /// are authentic only `decrypt` can tell.
    public static func isCiphertext(_ bytes: [UInt8]) -> Bool {
        bytes.count >= minimumSize && bytes.starts(with: header)
    }

    /// Runs AES-256-GCM over `input` with the key and `nonce`, authenticating
    /// the header and `context`. Encrypting fills `tag`; decrypting verifies it
    /// and throws `.authenticationFailed` when it does not match.
    private func run(
        encrypting: Bool, _ input: [UInt8], nonce: [UInt8], tag: inout [UInt8], context: String
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

        let associatedData = Self.header + Array(context.utf8)
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
