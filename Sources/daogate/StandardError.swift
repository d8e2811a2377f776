#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a line to standard error.
func printToStandardError(_ line: String) {
    let text = line + "\n"
    _ = text.utf8.withContiguousStorageIfAvailable { buffer in write(2, buffer.baseAddress, buffer.count) }
}

/// What failed while a subcommand ran (not what its command line got wrong, which is a `ValidationError`):
/// `daogate` prints `daogate SUBCOMMAND: <description>` on one line and exits 1 (`Daogate.main`).
struct RunFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
