import COpenSSL

/// Why a value could not be encrypted or decrypted, or a key not made.
///
/// The message says what is wrong in words an operator can act on; it never
/// holds key material or plaintext.
public struct CipherError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// Key bytes, text or file that are not a 256-bit key, or a key file that cannot be read.
        case invalidKey = "invalid_key"
        /// Bytes that do not start with the ciphertext format's magic.
        case notCiphertext = "not_ciphertext"
        /// A ciphertext written by a format version this build does not read.
        case unsupportedVersion = "unsupported_version"
        /// The wrong key, the wrong context, or bytes altered since they were written.
        case authenticationFailed = "authentication_failed"
        /// A ciphertext too short to hold a value, or an authentic payload that does not decode.
        case corrupt
        /// A value that cannot be encrypted: `nil`, or a collection JSON cannot carry exactly.
        case unsupportedValue = "unsupported_value"
        /// A ciphertext written with a key the ring does not hold, or a key id asked for that it lacks.
        case keyMissing = "key_missing"
        /// OpenSSL itself failed; the message carries its error text.
        case openSSL = "openssl"
    }

    public var kind: Kind
    public var message: String
    /// The key id, for `.keyMissing`.
    public var keyID: String?

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

extension CipherError {
    /// An `.openSSL` error for `operation`, with the text of the oldest error
    /// OpenSSL queued on this thread; the queue is emptied.
    static func openSSL(failing operation: String) -> CipherError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return CipherError(.openSSL, "\(operation) failed") }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return CipherError(.openSSL, "\(operation) failed: \(reason)")
    }
}

/// Throws an `.openSSL` error unless `result` is OpenSSL's success value, 1.
@inline(__always) func checkOpenSSL(_ result: Int32, _ operation: String) throws(CipherError) {
    guard result == 1 else { throw CipherError.openSSL(failing: operation) }
}
