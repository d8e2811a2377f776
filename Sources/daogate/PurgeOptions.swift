import ArgumentParser
import Foundation

/// A length of time as the cleanup options take it: a whole number and a
/// unit, `s`, `m`, `h` or `d` (`30s`, `15m`, `1h`, `7d`); `0` alone is none.
/// One parser for `--purge-every` and `--purge-older-than`.
enum DurationText {
    /// The longest taken: ten years, in seconds.
    static let maximum: Double = 10 * 365 * 86_400

    /// Seconds, or a message naming what is wrong.
    static func seconds(_ text: String, option: String) throws -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "0" { return 0 }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = trimmed.last, let scale = units[unit], let number = Int(trimmed.dropLast()),
              trimmed.dropLast().allSatisfy({ $0.isASCII && $0.isNumber }), number >= 0, Double(number) * scale <= maximum else {
            throw ValidationError("\(option) takes a duration: a whole number and s, m, h or d (30s, 15m, 1h, 7d), or 0; not '\(text.prefix(40))'")
        }
        return Double(number) * scale
    }
}
