#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The data folder held by one server: `daogate.lock` in it, under an
/// exclusive `flock` until `release()` or the end of the process (the kernel
/// releases the lock when the process ends, however it ends). Dropping the
/// value does not release it: the open descriptor is the lock.
///
/// Users' files with a rollback journal are opened without SQLite's file
/// locks (`DatabaseConfiguration.usesFileLocks`), as their one connection is
/// this process's: a second server on the same folder would write them
/// behind its back. It refuses to start instead.
public final class DataFolderLock: Sendable {
    /// The open `daogate.lock`, -1 once released.
    private let descriptor: Atomic<Int32>

    private init(descriptor: Int32) {
        self.descriptor = Atomic(descriptor)
    }

    /// Takes the folder's lock, or throws naming the folder when another server (in this process or another) holds it.
    @discardableResult
    public static func take(folder: String) throws(DataFolderLockError) -> DataFolderLock {
        let path = folder + "/daogate.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw DataFolderLockError(message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? "another daogate serves this data folder" : String(cString: strerror(errno))
            close(descriptor)
            throw DataFolderLockError(message: "cannot lock \(path): \(reason); one server per data folder")
        }
        return DataFolderLock(descriptor: descriptor)
    }

    /// Gives the folder up (a server's shutdown): another server may take it. A second call does nothing.
    public func release() {
        let descriptor = descriptor.exchange(-1, ordering: .sequentiallyConsistent)
        if descriptor >= 0 { close(descriptor) }
    }
}

public struct DataFolderLockError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
