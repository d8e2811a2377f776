#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DAODialect
import Foundation
import Synchronization

/// The keys a server encrypts and decrypts with, by id, and the id new values are written with.
///
/// `--key-dir DIR` holds one file per key, `ID.key` (32 raw bytes, 64 hex
/// digits or base64, as `CipherKey.load(file:)` reads), and `DIR/current`,
/// the id of the key new writes use. `--key-file` is a ring of one key whose
/// id is `default`: the id values written before ciphertexts carried one
/// are read with (format version 1, see `Cipher`).
///
/// A ring is shared by every copy of the `Cipher` made from it; `replace`
/// swaps its keys at once (SIGHUP re-reads the folder): a value is encrypted
/// or decrypted with one snapshot from start to end.
public final class Keyring: Sendable {
    /// The keys at one moment.
    public struct Snapshot: Sendable {
        public let keys: [String: CipherKey]
        /// The id new values are written with, unless a module names its own key.
        public let current: String

        /// A ring of `keys`, writing with `current`, which must be one of them.
        public init(keys: [String: CipherKey], current: String) throws(CipherError) {
            for id in keys.keys { try Keyring.checkID(id) }
            guard keys[current] != nil else {
                throw CipherError(.invalidKey, "the current key '\(current)' is not in the keyring (\(Keyring.list(keys.keys)))")
            }
            self.keys = keys
            self.current = current
        }

        /// The ids, sorted, for messages and logs.
        public var ids: [String] { keys.keys.sorted() }
    }

    /// The id of the single key of `--key-file` (or `DAOGATE_KEY`), and the
    /// key that values without a recorded id (format version 1) decrypt with.
    public static let defaultID = "default"
    /// The longest key id.
    public static let maximumIDLength = maximumKeyIDLength

    private let state: Mutex<Snapshot>
    /// The folder the ring was read from, nil for a ring of one key.
    public let directory: String?

    public init(_ snapshot: Snapshot, directory: String? = nil) {
        state = Mutex(snapshot)
        self.directory = directory
    }

    /// A ring of one key, `default`.
    public convenience init(key: CipherKey) {
        // Cannot fail: the id is valid and the key is in the ring.
        self.init(try! Snapshot(keys: [Self.defaultID: key], current: Self.defaultID))
    }

    /// The keys in use now.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Replaces the keys at once.
    public func replace(with snapshot: Snapshot) { state.withLock { $0 = snapshot } }

    /// Reads the key folder again; the keys in use stay when it has a problem (thrown).
    @discardableResult
    public func reload() throws(CipherError) -> Snapshot {
        guard let directory else { return snapshot }
        let next = try Self.load(directory: directory)
        replace(with: next)
        return next
    }

    /// The keys of the folder `directory`: every `ID.key` file, and `current` naming one.
    ///
    /// A `.key` file whose name is not a key id, or that holds no key, and a
    /// `current` naming a key the folder lacks, are errors naming the file;
    /// other files are not read.
    public static func load(directory: String) throws(CipherError) -> Snapshot {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw CipherError(.invalidKey, "cannot read the key folder '\(directory)': \(error.localizedDescription)")
        }
        var keys: [String: CipherKey] = [:]
        for name in names.sorted() where name.hasSuffix(".key") {
            let id = String(name.dropLast(4))
            do throws(CipherError) {
                try checkID(id)
            } catch {
                throw CipherError(.invalidKey, "key file '\(directory)/\(name)': \(error.message)")
            }
            keys[id] = try CipherKey.load(file: directory + "/" + name)
        }
        guard !keys.isEmpty else {
            throw CipherError(.invalidKey, "the key folder '\(directory)' holds no key: one file per key, ID.key")
        }
        guard let data = FileManager.default.contents(atPath: directory + "/current"),
              let text = String(data: data, encoding: .utf8) else {
            throw CipherError(.invalidKey, "cannot read '\(directory)/current', the id of the key new values are written with")
        }
        let current = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard keys[current] != nil else {
            throw CipherError(.invalidKey, "'\(directory)/current' names the key '\(current)', but there is no '\(directory)/\(current).key' (\(list(keys.keys)))")
        }
        return try Snapshot(keys: keys, current: current)
    }

    /// Throws unless `id` is a key id: 1 to 64 ASCII letters, digits, `.`, `_` or `-`, not starting with `.` or `-`.
    public static func checkID(_ id: String) throws(CipherError) {
        guard isKeyID(id) else {
            throw CipherError(.invalidKey, "'\(id)' is not a key id: 1 to \(maximumIDLength) letters, digits, '.', '_' or '-', not starting with '.' or '-'")
        }
    }

    static func list(_ ids: some Sequence<String>) -> String {
        let sorted = ids.sorted()
        return sorted.isEmpty ? "no keys" : "keys: " + sorted.joined(separator: ", ")
    }
}
