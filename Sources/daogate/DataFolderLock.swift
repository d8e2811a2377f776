#if canImport(Glibc)
import Glibc
#endif

/// The data folder held by one server: `daogate.lock` in it, under an
/// exclusive `flock` for as long as the process lives (its descriptor is
/// never closed; the kernel releases the lock when the process ends,
/// however it ends).
///
/// Users' files with a rollback journal are opened without SQLite's file
/// locks (`DatabaseConfiguration.usesFileLocks`), as their one connection is
/// this process's: a second server on the same folder would write them
/// behind its back. It refuses to start instead.
enum DataFolderLock {
    /// Takes the folder's lock, or throws naming the folder when another process holds it.
    static func take(folder: String) throws(DataFolderLockError) {
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
    }
}

struct DataFolderLockError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
