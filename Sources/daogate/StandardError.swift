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
