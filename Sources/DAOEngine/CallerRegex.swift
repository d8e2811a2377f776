import ASCIIBytes
import CRE2

/// A regular expression a caller sent — the pattern of the reference's
/// `deleteTablesWithRegex:` and `removeObjectsWithRegex:` — matched against
/// whole names, in time linear in the name.
///
/// The dialect is RE2's: the Perl syntax of ICU's (`NSRegularExpression`'s),
/// which the reference's callers wrote — `\d`, `\w`, `\s`, `\b` (ASCII),
/// `\p{L}`, `[[:alpha:]]`, `(?i)`, `\Q…\E`, lazy quantifiers — without what
/// needs backtracking: back-references, lookaround, atomic groups and
/// possessive quantifiers are refused, and so are ICU's nested sets and set
/// operations (`[a-z&&[^aeiou]]`), which RE2 would read as other characters.
/// A pattern is compiled alone and matched with the engine's anchors at both
/// ends, so no text in it can reach outside the whole name.
///
/// Its cost is bounded by its limits: at most `maximumPatternLength` characters,
/// compiled to at most `maximumProgramSize` instructions, and matching any
/// number of names stops after `matchingBudget`. Matching is thread-safe.
public final class CallerRegex: @unchecked Sendable {
    /// The longest pattern, in characters (Unicode scalars, as JSON Schema's `maxLength`).
    public static let maximumPatternLength = 256
    /// The most instructions a pattern may compile to: a match costs at most
    /// this many steps per byte of the name.
    public static let maximumProgramSize = 2_000
    /// How long matching the names of one request may take: past it the
    /// request is refused, before anything is removed.
    public static let matchingBudget = Duration.milliseconds(250)
    /// The memory RE2 may use for the program and its DFA cache (its default is 8 MiB).
    static let maximumMemory: Int64 = 1 << 20

    public let pattern: String
    /// `daogate_re2`, immutable after compilation (RE2 matches from any thread).
    private let compiled: OpaquePointer

    public init(_ pattern: String) throws(EngineError) {
        self.pattern = pattern
        let shown = "'\(pattern.prefix(80))'"
        guard pattern.unicodeScalars.count <= Self.maximumPatternLength else {
            throw EngineError(.invalidRegex, "the pattern is longer than \(Self.maximumPatternLength) characters")
        }
        guard !pattern.utf8.contains(0) else { throw EngineError(.invalidRegex, "the pattern contains a NUL character") }
        if let problem = Self.icuSetSyntax(in: pattern) {
            throw EngineError(.invalidRegex, "\(shown): \(problem)")
        }
        var message = [CChar](repeating: 0, count: 256)
        let bytes = Array(pattern.utf8)
        let compiled = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { text in
                daogate_re2_compile(text.baseAddress, text.count, Self.maximumMemory, &message, message.count)
            }
        }
        guard let compiled else {
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw EngineError(.invalidRegex, "\(shown) is not a regular expression daogate accepts: \(reason) (RE2 syntax: no back-references, lookaround, atomic groups or possessive quantifiers, which cannot be matched in linear time)")
        }
        let size = Int(daogate_re2_program_size(compiled))
        guard size <= Self.maximumProgramSize else {
            daogate_re2_free(compiled)
            throw EngineError(.invalidRegex, "\(shown) compiles to \(size) instructions, over \(Self.maximumProgramSize): write it shorter (a counted repetition such as {50} copies what it repeats)")
        }
        self.compiled = compiled
    }

    deinit { daogate_re2_free(compiled) }

    /// Whether the whole of `text` matches.
    public func matchesWhole(_ text: String) -> Bool {
        return withUTF8Bytes(of: text) { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                daogate_re2_full_match(compiled, text.baseAddress, text.count)
            }
        }
    }

    /// The elements whose name matches whole, in order; refused with
    /// `invalid_regex` when matching them takes longer than `budget`, so that
    /// no request holds a thread longer than that (and one name) however many
    /// names it meets.
    public func selecting<Element>(_ elements: some Sequence<Element>, name: (Element) -> String,
                                   budget: Duration = matchingBudget) throws(EngineError) -> [Element] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: budget)
        var selected: [Element] = []
        var count = 0
        for element in elements {
            if matchesWhole(name(element)) { selected.append(element) }
            count += 1
            guard clock.now < deadline else {
                throw EngineError(.invalidRegex, "matching '\(pattern.prefix(80))' took longer than \(budget) after \(count) names: make it simpler")
            }
        }
        return selected
    }

    /// ICU's syntax that RE2 reads otherwise without an error, as a sentence,
    /// nil when there is none: inside a set, `[` opens a nested set in ICU and
    /// is a plain `[` in RE2; `&&` and `--` are ICU's intersection and
    /// difference. POSIX classes (`[:alpha:]`) mean the same in both.
    static func icuSetSyntax(in pattern: String) -> String? {
        let scalars = Array(pattern.unicodeScalars)
        var index = 0
        var inSet = false
        var setStart = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\\" {
                if !inSet, index + 1 < scalars.count, scalars[index + 1] == "Q" {
                    // \Q…\E quotes everything up to \E (or the end).
                    index += 2
                    while index < scalars.count, !(scalars[index] == "\\" && index + 1 < scalars.count && scalars[index + 1] == "E") {
                        index += 1
                    }
                }
                index += 2
                continue
            }
            if !inSet {
                if scalar == "[" {
                    inSet = true
                    index += 1
                    if index < scalars.count, scalars[index] == "^" { index += 1 }
                    setStart = index
                    continue
                }
            } else {
                switch scalar {
                case "]" where index > setStart:
                    inSet = false
                case "[" where index + 1 < scalars.count && scalars[index + 1] == ":":
                    // A POSIX class: skip to its ":]".
                    var end = index + 2
                    while end + 1 < scalars.count, !(scalars[end] == ":" && scalars[end + 1] == "]") { end += 1 }
                    index = end + 1
                case "[":
                    return "a '[' inside a set is a nested set in ICU and a plain '[' here: write \\[ for the character"
                case "&" where index + 1 < scalars.count && scalars[index + 1] == "&",
                     "-" where index + 1 < scalars.count && scalars[index + 1] == "-":
                    return "'\(scalar)\(scalar)' inside a set is a set operation in ICU, which this dialect does not have: list the characters, or escape them"
                default:
                    break
                }
            }
            index += 1
        }
        return nil
    }
}
