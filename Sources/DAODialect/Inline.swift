import ASCIIBytes
import CSQLite
import DAOValue

/// How `@{}` turns a value into SQL text.
///
/// `@{x}` writes a literal: integers and decimals as numbers, booleans as 1
/// and 0, strings quoted with `'` doubled, binary as `X'…'`, arrays and
/// objects as their quoted JSON text, nil as `NULL` (`''` with `or ""`).
/// Inside quotes the module wrote, only the content is written, escaped for
/// that quote. `@{x no ""}` writes raw text, held to `rawTextProblem`.
enum Inline {
    /// The text for `value` at a reference of `mode`; nil plus a reason when refused.
    static func format(_ value: Value, mode: InlineReference.Mode, orEmpty: Bool,
                       after previous: UInt8?) -> Result<[UInt8], InlineRefusal> {
        switch mode {
        case .literal: return literal(value, orEmpty: orEmpty, after: previous)
        case .insideString: return insideString(value)
        case .insideIdentifier(let quote): return insideIdentifier(value, quote: quote)
        case .raw: return raw(value)
        }
    }

    private static func literal(_ value: Value, orEmpty: Bool, after previous: UInt8?) -> Result<[UInt8], InlineRefusal> {
        switch value {
        case .null: return .success(Array((orEmpty ? "''" : "NULL").utf8))
        case .bool(let flag): return .success([flag ? UInt8(ascii: "1") : UInt8(ascii: "0")])
        case .integer(let integer): return .success(signed(String(integer), after: previous))
        case .double(let double):
            guard double.isFinite else { return .failure(InlineRefusal("a non-finite number cannot be written in SQL")) }
            return .success(signed(String(double), after: previous))
        case .string(let string): return quoted(string)
        case .blob(let bytes):
            var text = Array("X'".utf8)
            let digits = Array("0123456789ABCDEF".utf8)
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
            text.append(UInt8(ascii: "'"))
            return .success(text)
        case .array, .object: return quoted(value.jsonString())
        }
    }

    /// A negative number right after a `-` would start a `--` comment: keep them apart.
    private static func signed(_ text: String, after previous: UInt8?) -> [UInt8] {
        if text.hasPrefix("-") && previous == UInt8(ascii: "-") { return [UInt8(ascii: " ")] + Array(text.utf8) }
        return Array(text.utf8)
    }

    private static func quoted(_ string: String) -> Result<[UInt8], InlineRefusal> {
        escaped(string, quote: UInt8(ascii: "'")).map { [UInt8(ascii: "'")] + $0 + [UInt8(ascii: "'")] }
    }

    /// `string` with `quote` doubled; refuses NUL, which would end the statement.
    private static func escaped(_ string: String, quote: UInt8) -> Result<[UInt8], InlineRefusal> {
        var text: [UInt8] = []
        text.reserveCapacity(string.utf8.count + 2)
        for byte in string.utf8 {
            if byte == 0 { return .failure(InlineRefusal("a string with a NUL character cannot be inlined")) }
            text.append(byte)
            if byte == quote { text.append(quote) }
        }
        return .success(text)
    }

    private static func insideString(_ value: Value) -> Result<[UInt8], InlineRefusal> {
        switch value {
        case .null: .success([])
        case .bool(let flag): .success([flag ? UInt8(ascii: "1") : UInt8(ascii: "0")])
        case .integer(let integer): .success(Array(String(integer).utf8))
        case .double(let double): .success(Array(String(double).utf8))
        case .string(let string): escaped(string, quote: UInt8(ascii: "'"))
        case .blob: .failure(InlineRefusal("binary cannot be inlined inside a quoted string"))
        case .array, .object: escaped(value.jsonString(), quote: UInt8(ascii: "'"))
        }
    }

    private static func insideIdentifier(_ value: Value, quote: UInt8) -> Result<[UInt8], InlineRefusal> {
        switch value {
        case .string(let string) where !string.isEmpty: escaped(string, quote: quote)
        case .integer(let integer): .success(Array(String(integer).utf8))
        default: .failure(InlineRefusal("\(value.kindPhrase) cannot name a quoted identifier"))
        }
    }

    private static func raw(_ value: Value) -> Result<[UInt8], InlineRefusal> {
        let text: String
        switch value {
        case .null: return .success(Array("NULL".utf8))
        case .bool(let flag): return .success([flag ? UInt8(ascii: "1") : UInt8(ascii: "0")])
        case .integer(let integer): text = String(integer)
        case .double(let double): text = double.isFinite ? String(double) : "-"
        case .string(let string): text = string
        default: return .failure(InlineRefusal("\(value.kindPhrase) cannot be inlined as raw text"))
        }
        let bytes = Array(text.utf8)
        if let problem = rawTextProblem(bytes) { return .failure(InlineRefusal(problem)) }
        return .success(bytes)
    }

    /// The longest raw text, alone or joined with the raw values beside it.
    static let maximumRawText = 128

    /// The raw-text rule of `@{x no ""}`: why `text` may not be inlined raw, or nil.
    ///
    /// Raw text is one token that cannot change a statement's structure: an
    /// unsigned number (`42`, `1.5`, `1e-5`), a name that is not an SQL keyword
    /// (`created_at`, `t.created_at`), or `ASC`/`DESC`. No spaces, quotes,
    /// operators, parentheses, semicolons or comments can get through.
    static func rawTextProblem(_ text: [UInt8]) -> String? {
        if text.isEmpty { return "raw text (@{x no \"\"}) cannot be empty" }
        // Also what keeps checking a growing run of adjacent raw values linear.
        if text.count > maximumRawText { return "raw text (@{x no \"\"}) is at most \(maximumRawText) bytes" }
        if isUnsignedNumber(text) { return nil }
        let upper = String(decoding: text, as: UTF8.self).uppercased()
        if upper == "ASC" || upper == "DESC" { return nil }
        let shown = text.count > 40 ? String(decoding: text.prefix(40), as: UTF8.self) + "…" : String(decoding: text, as: UTF8.self)
        let rule = "raw text (@{x no \"\"}) must be an unsigned number, a name (a or a.b) that is not an SQL keyword, or ASC/DESC"
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count <= 3 else { return "\(rule); got \(shown.debugDescription)" }
        for part in parts {
            guard isIdentifier(bytes: part) else { return "\(rule); got \(shown.debugDescription)" }
            if isSQLKeyword(String(decoding: part, as: UTF8.self)) {
                return "\(rule); \(String(decoding: part, as: UTF8.self).debugDescription) is an SQL keyword"
            }
        }
        return nil
    }

    /// `digits[.digits][e[+-]digits]`.
    static func isUnsignedNumber(_ text: [UInt8]) -> Bool {
        var index = 0
        func digits() -> Bool {
            let start = index
            while index < text.count && isASCIIDigit(text[index]) { index += 1 }
            return index > start
        }
        guard digits() else { return false }
        if index < text.count && text[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() else { return false }
        }
        if index < text.count && (text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E")) {
            index += 1
            if index < text.count && (text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-")) { index += 1 }
            guard digits() else { return false }
        }
        return index == text.count
    }
}

/// Why a value cannot be inlined.
struct InlineRefusal: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Whether SQLite reserves `word` as a keyword.
func isSQLKeyword(_ word: String) -> Bool {
    return withUTF8Bytes(of: word) { buffer in
        buffer.withMemoryRebound(to: CChar.self) { sqlite3_keyword_check($0.baseAddress, Int32($0.count)) != 0 }
    }
}
