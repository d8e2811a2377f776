#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The progress of a long command (`backup`, `move-bucket`), on standard error when it is a terminal: a status
/// line rewritten in place, and lines that stay. Off a terminal (a script, a log file) it writes nothing: standard
/// error then holds failures only, and standard output the command's one JSON result either way.
struct TerminalProgress {
    /// The command's name, the first word of each line.
    let command: String
    let isShown: Bool
    /// Whether a status line is on screen, to be cleared before the next line.
    private var statusShown = false

    init(command: String, isShown: Bool = isatty(2) == 1) {
        self.command = command
        self.isShown = isShown
    }

    /// Replaces the status line (`\r`, then erase to the end of the line).
    mutating func status(_ text: String) {
        guard isShown else { return }
        emit("\r\u{1B}[K\(command): \(text)")
        statusShown = true
    }

    /// A line that stays: it replaces the status line, if one is shown.
    mutating func line(_ text: String) {
        guard isShown else { return }
        emit((statusShown ? "\r\u{1B}[K" : "") + "\(command): \(text)\n")
        statusShown = false
    }

    private func emit(_ text: String) {
        _ = text.utf8.withContiguousStorageIfAvailable { buffer in write(2, buffer.baseAddress, buffer.count) }
    }

    /// A byte count as people read it: 812 B, 4.2 KiB, 17.0 MiB, 3.1 GiB.
    static func bytes(_ count: Int64) -> String {
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count) / 1024
        for unit in ["KiB", "MiB", "GiB"] {
            if value < 1024 || unit == "GiB" {
                return "\((value * 10).rounded() / 10) \(unit)"
            }
            value /= 1024
        }
        return "\(count) B"
    }
}
