#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import COpenSSL
import DAOValue

/// A 256-bit AES key that the operator supplies: never baked into code, never printed.
///
/// Its text forms are 64 hex digits (either case) or standard padded base64 of
/// the 32 bytes; `fingerprint` tells keys apart in logs without revealing them.
/// The bytes live in memory of their own that is wiped when the last copy of
/// the key goes away.
public struct CipherKey: Sendable {
    /// The length of a key in bytes.
    static let byteCount = 32
    /// How an operator gives daogate its key: what every "no key is configured" error ends with.
    public static let howToConfigure = "start daogate with --key-file FILE (DAOGATE_KEY_FILE), or the key itself in DAOGATE_KEY"
    /// The largest key file read; anything longer cannot be a key in any form.
    static let maximumFileSize = 4096

    let material: KeyMaterial
    /// A short non-secret identifier: the first 8 hex digits of the SHA-256 of
    /// the key, so operators can tell which key is configured.
    public let fingerprint: String

    /// The key made of exactly 32 `bytes`.
    public init(bytes: [UInt8]) throws(CipherError) {
        guard bytes.count == Self.byteCount else {
            throw CipherError(.invalidKey, "a key is exactly \(Self.byteCount) bytes, not \(bytes.count)")
        }
        material = bytes.withUnsafeBytes { KeyMaterial(copying: $0) }
        fingerprint = try material.fingerprint()
    }

    /// The key written as 64 hex digits or as standard base64 of 32 bytes;
    /// surrounding white space (a trailing newline) is ignored.
    public init(text: String) throws(CipherError) {
        var utf8 = Array(text.utf8)
        defer { wipe(&utf8) }
        guard var bytes = Self.decode(text: utf8[...]) else {
            throw CipherError(.invalidKey, "key text must be \(Self.textForms)")
        }
        defer { wipe(&bytes) }
        try self.init(bytes: bytes)
    }

    /// The key in the file at `path`: either exactly 32 raw bytes, or one of the text forms.
    ///
    /// Errors name the path, never the file's content.
    public static func load(file path: String) throws(CipherError) -> CipherKey {
        var contents = try readKeyFile(path)
        defer { wipe(&contents) }
        if contents.count == byteCount { return try CipherKey(bytes: contents) }
        guard var bytes = decode(text: contents[...]) else {
            throw CipherError(
                .invalidKey, "key file '\(path)' must hold exactly \(byteCount) raw bytes, \(textForms)")
        }
        defer { wipe(&bytes) }
        return try CipherKey(bytes: bytes)
    }

    /// The key in the environment variable `name`, in one of the text forms; `nil` when it is unset.
    public static func fromEnvironment(_ name: String = "DAOGATE_KEY") throws(CipherError) -> CipherKey? {
        guard let value = getenv(name) else { return nil }
        do {
            return try CipherKey(text: String(cString: value))
        } catch {
            throw CipherError(error.kind, "environment variable \(name): \(error.message)")
        }
    }

    /// A fresh random key from OpenSSL's `RAND_bytes`.
    public static func generate() throws(CipherError) -> CipherKey {
        var bytes = [UInt8](repeating: 0, count: byteCount)
        defer { wipe(&bytes) }
        try checkOpenSSL(RAND_bytes(&bytes, Int32(byteCount)), "RAND_bytes")
        return try CipherKey(bytes: bytes)
    }

    /// What key text may be, for messages.
    private static let textForms = "64 hex digits or standard base64 of \(byteCount) bytes"

    /// The 32 bytes that key text stands for, or `nil` when it is in neither text form.
    private static func decode(text: ArraySlice<UInt8>) -> [UInt8]? {
        let isSpace = { (byte: UInt8) in byte == 0x20 || (0x09...0x0D).contains(byte) }
        guard let first = text.firstIndex(where: { !isSpace($0) }),
            let last = text.lastIndex(where: { !isSpace($0) })
        else { return nil }
        let trimmed = text[first...last]
        switch trimmed.count {
        case 2 * byteCount:
            return decode(hex: trimmed)
        case (byteCount + 2) / 3 * 4:
            guard var bytes = Base64.decode(String(decoding: trimmed, as: UTF8.self)) else { return nil }
            guard bytes.count == byteCount else {
                wipe(&bytes)
                return nil
            }
            return bytes
        default:
            return nil
        }
    }

    /// The bytes that an even number of hex digits stand for, or `nil` at any other character.
    private static func decode(hex: ArraySlice<UInt8>) -> [UInt8]? {
        func nibble(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            guard let high = nibble(hex[index]), let low = nibble(hex[index + 1]) else {
                wipe(&bytes)
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The whole content of the key file at `path`, at most `maximumFileSize` bytes.
    private static func readKeyFile(_ path: String) throws(CipherError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw unreadable(path) }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: maximumFileSize + 1)
        defer { wipe(&buffer) }
        var length = 0
        while length < buffer.count {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + length, $0.count - length) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable(path)
            }
            length += count
        }
        guard length <= maximumFileSize else {
            throw CipherError(.invalidKey, "key file '\(path)' is larger than \(maximumFileSize) bytes: it is not a key")
        }
        return Array(buffer[..<length])
    }

    /// The error for a key file that cannot be opened or read, from `errno`.
    private static func unreadable(_ path: String) -> CipherError {
        CipherError(.invalidKey, "cannot read key file '\(path)': \(String(cString: strerror(errno)))")
    }
}

extension CipherKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "CipherKey(<redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// A key's bytes in memory of their own, wiped and freed with the last reference.
final class KeyMaterial: @unchecked Sendable {
    // Unchecked: the bytes are written once, in `init`, and only read after.
    private let storage: UnsafeMutableRawBufferPointer

    init(copying bytes: UnsafeRawBufferPointer) {
        storage = .allocate(byteCount: bytes.count, alignment: 16)
        storage.copyMemory(from: bytes)
    }

    deinit {
        OPENSSL_cleanse(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// Calls `body` with the key's bytes, which must not escape it.
    func withBytes<Result>(_ body: (UnsafePointer<UInt8>) -> Result) -> Result {
        body(storage.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// The first 8 hex digits of the SHA-256 of the bytes.
    func fingerprint() throws(CipherError) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        try checkOpenSSL(
            EVP_Digest(storage.baseAddress, storage.count, &digest, &digestLength, EVP_sha256(), nil), "EVP_Digest")
        let hexDigits = Array("0123456789abcdef".utf8)
        let prefix = digest.prefix(4).flatMap { [hexDigits[Int($0 >> 4)], hexDigits[Int($0 & 0x0F)]] }
        return String(decoding: prefix, as: UTF8.self)
    }
}

/// Overwrites a copy of key bytes with zeros, in a way the optimiser keeps.
private func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
}
