#if canImport(Glibc)
import Glibc
#endif

/// What an SQLite file's header says, read with one `pread` and no connection: its journal mode (bytes
/// 18 and 19, the read and write versions: 1 for a rollback journal, 2 for WAL) and its change counter
/// (bytes 24–27, which every commit of a rollback-journal file increments).
public struct FileHeader: Equatable, Sendable {
    public var isWAL: Bool
    public var changeCounter: UInt32

    /// nil for a file that does not exist or is too short to have a header.
    public init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 28)
        guard bytes.withUnsafeMutableBytes({ pread(descriptor, $0.baseAddress, 28, 0) }) == 28 else { return nil }
        isWAL = bytes[18] == 2 || bytes[19] == 2
        changeCounter = bytes[24...27].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
