import DAOEngine
import DAOValue

/// Encryption of stored values, shared by the key-value store and the disk
/// caches: `context` binds a ciphertext to its place (`kv:<business>/<key>`,
/// `lru:<cache>/<key>`), and `what` names the value in errors.
extension Cipher {
    /// A value the format cannot carry (binary data or a non-finite number
    /// inside JSON) is the caller's `.invalidValue`; any other failure is the
    /// server's `.encryption`.
    func encryptStored(_ value: Value, context: String, what: String) throws -> Value {
        do throws(CipherError) {
            return .blob(try encrypt(value, context: context))
        } catch {
            if error.kind == .unsupportedValue { throw KeyValueError(.invalidValue, "\(what) cannot be encrypted: \(error.message)") }
            throw EngineError(error, "\(what) could not be encrypted")
        }
    }

    /// A ciphertext that does not decrypt (another key, moved or altered bytes) is `.encryption`.
    func decryptStored(_ bytes: [UInt8], context: String, what: String) throws -> Value {
        do throws(CipherError) {
            return try decrypt(bytes, context: context)
        } catch {
            if error.kind == .keyMissing { throw EngineError(error, "\(what) does not decrypt") }
            throw EngineError(.encryption, "\(what) does not decrypt (another key, moved or altered bytes): \(error.message)")
        }
    }
}
