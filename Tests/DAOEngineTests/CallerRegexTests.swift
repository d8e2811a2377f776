import DAOEngine
import Foundation
import Testing

/// The regular expressions callers send (table deletion, memory-cache removal):
/// whole-name matching that no pattern text escapes, ICU's meaning where
/// both dialects have one, refusals for the rest, and bounded time.
@Suite struct CallerRegexTests {
    static func refusal(_ pattern: String) -> EngineError? {
        do {
            _ = try CallerRegex(pattern)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Anchors

    /// Each pattern tries to reach past the whole-name anchors; none matches
    /// a name it does not match whole (or it is refused).
    static let escapes: [(pattern: String, name: String)] = [
        ("chat_1)|(zzz", "chat_1"), ("chat_1)|(zzz", "chat_10"), ("x)|(", "chat_1"), ("x)|(", ""),
        (")|(", "anything"), ("chat_1|zzz", "chat_10"), ("chat_1|zzz", "xchat_1"), ("a|", "ab"), ("|a", "ba"),
        ("chat_1$|", "chat_10"), ("^chat_1", "chat_10"), ("chat_1$", "xchat_1"), ("(?m)chat_1$", "chat_1\nx"),
        ("(?m)^x", "chat\nx"), ("(?s)chat_1", "chat_1\n"), ("\\Q)|(\\E", "a"), ("\\Q\\E)|(", "chat"),
        ("\\E)|(\\Q", "chat"), ("chat_1\\z|", "chat_10"), ("\\Achat_1", "chat_10"), ("(?:chat_1)|(?:zzz)", "chat_10"),
        ("(chat_1", "chat_1"), ("chat_1)", "chat_1"), ("((chat_1)", "chat_10"), ("(?i)chat_1|", "CHAT_10"),
        ("chat_1\\b", "chat_1 x"), ("[a-z_0-9]*1", "chat_10"), ("chat_1(?#)|", "chat_10"),
        ("(*ANY)chat_1", "chat_10"), ("(?|chat_1)", "chat_10"), ("chat_1\\K", "chat_10"),
    ]

    @Test(arguments: escapes) func noPatternTextReachesPastTheWholeName(pattern: String, name: String) throws {
        guard let regex = try? CallerRegex(pattern) else { return }
        #expect(!regex.matchesWhole(name), "'\(pattern)' matched '\(name)'")
    }

    @Test func theIssuesPatternsMatchNothingBeyondTheWholeName() throws {
        #expect(Self.refusal("chat_1)|(zzz")?.code == .invalidRegex)
        #expect(Self.refusal("x)|(")?.code == .invalidRegex)
        let alternation = try CallerRegex("chat_1|chat_2")
        #expect(["chat_1", "chat_2", "chat_10", "chat_12", "xchat_1"].filter(alternation.matchesWhole) == ["chat_1", "chat_2"])
    }

    /// Random patterns built from the characters that could open or close
    /// anchors, each judged against Swift's own regex engine (a backtracker
    /// with Perl syntax, matched whole): wherever both accept a pattern, they
    /// agree on every name.
    @Test func randomPatternsAgreeWithSwiftsWholeMatch() throws {
        let atoms = ["(", ")", "|", "chat_", "1", "0", "\\d", "[0-9]", "+", "*", "?", ".", "$", "^", "(?:", "\\Q", "\\E", "x", "{2}", "[^_]"]
        let names = ["", "chat_", "chat_1", "chat_10", "chat_01", "xchat_1", "chat_1x", "chat_x", "x", "1", "10", "chat_1chat_1"]
        var random = SystemRandomNumberGenerator()
        var compared = 0
        for _ in 0..<3_000 {
            let pattern = (0..<Int.random(in: 1...7, using: &random)).map { _ in atoms.randomElement(using: &random)! }.joined()
            guard let ours = try? CallerRegex(pattern), let swift = try? Regex(pattern) else { continue }
            compared += 1
            for name in names {
                let expected = (try? swift.wholeMatch(in: name)) != nil
                #expect(ours.matchesWhole(name) == expected, "'\(pattern)' on '\(name)'")
            }
        }
        #expect(compared > 500)
    }

    // MARK: The dialect

    /// ICU's syntax (NSRegularExpression's), which callers of the reference
    /// wrote, keeps its meaning.
    static let icuPatterns: [(pattern: String, matching: [String], notMatching: [String])] = [
        ("chat_\\d+", ["chat_1", "chat_10"], ["chat_", "chat_x", "xchat_1", "chat_1x"]),
        ("\\w+/\\w+", ["news/a_1"], ["news/", "news/a-b"]),
        ("[[:alpha:]]+_[[:digit:]]{2}", ["ab_12"], ["ab_1", "a1_12"]),
        ("(?i)CHAT_[0-9]", ["chat_1", "Chat_2"], ["chat_12"]),
        ("\\Qa.b\\E.*", ["a.b", "a.bc"], ["axb"]),
        ("\\p{L}+", ["héllo", "世界"], ["a1"]),
        ("news/.*?", ["news/", "news/x"], ["new/x"]),
        ("a{2,3}", ["aa", "aaa"], ["a", "aaaa"]),
        ("(a|b)c\\.d", ["ac.d", "bc.d"], ["acxd"]),
        ("\\x{4e16}界", ["世界"], ["界"]),
    ]

    @Test(arguments: icuPatterns) func icuPatternsKeepTheirMeaning(pattern: String, matching: [String], notMatching: [String]) throws {
        let regex = try CallerRegex(pattern)
        for name in matching { #expect(regex.matchesWhole(name), "'\(pattern)' should match '\(name)'") }
        for name in notMatching { #expect(!regex.matchesWhole(name), "'\(pattern)' should not match '\(name)'") }
    }

    /// What the dialect leaves undefined, or could only match by
    /// backtracking, is refused rather than read as something else.
    static let refused: [String] = [
        "(a)\\1", "(.*)(.*)(.*)(.*)(.*)\\6\\5\\4\\3\\2x", "(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2x", "(?<n>a)\\k<n>",
        "a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b", "(?>a+)b", "a*+", "a++", "a?+", "a{2}+", "(?R)", "a(?1)", "(*ACCEPT)",
        "[a-z&&[^aeiou]]", "[[a-z]--[aeiou]]", "[a[b]]", "[^[a]]", "\\G", "\\X", "\\N{LATIN SMALL LETTER A}", "\\h",
        "\\R", "(?x) a", "(?w)a", "\\uFFFF", "(", ")", "[a", "a{1001}", "*", "a**", "\u{0}", String(repeating: "a", count: 257),
        "(.*a.{10}){40}", "[\\p{L}\\p{N}]{50}",
    ]

    @Test(arguments: refused) func unboundedOrUndefinedSyntaxIsRefused(pattern: String) {
        let error = Self.refusal(pattern)
        #expect(error?.code == .invalidRegex, "'\(pattern)' was accepted")
    }

    @Test func refusalsSayWhy() throws {
        #expect(Self.refusal("(a)\\1")?.message.contains("no back-references") == true)
        #expect(Self.refusal("[a[b]]")?.message.contains("nested set") == true)
        #expect(Self.refusal("[a-z&&[^aeiou]]")?.message.contains("set operation") == true)
        #expect(Self.refusal("(.*a.{10}){40}")?.message.contains("instructions") == true)
        #expect(Self.refusal(String(repeating: "a", count: 257))?.message.contains("256 characters") == true)
        // 256 characters of several bytes each are within the limit.
        #expect(try CallerRegex(String(repeating: "é", count: 256)).matchesWhole(String(repeating: "é", count: 256)))
        // POSIX classes inside a set, escaped brackets and a leading ']' are not nested sets.
        for pattern in ["[[:alpha:]_]+", "[\\[\\]]", "[]a]", "[^]a]", "[a-]"] { #expect(Self.refusal(pattern) == nil, "\(pattern)") }
    }

    // MARK: Time

    /// Patterns that make a backtracking matcher run for minutes (glibc's
    /// POSIX matcher, PCRE, ICU) run in microseconds over the longest key.
    @Test func catastrophicBacktrackingPatternsRunInLinearTime() throws {
        let key = String(repeating: "a", count: 1024) + "!"
        let clock = ContinuousClock()
        for pattern in ["(.*)(.*)(.*)(.*)(.*)x", "(a|aa)*c", "(a*)*b", "(a+a+)+y", "(\\w+\\s?)+#", "(.*a){20}#", "(a|a?)+b"] {
            let regex = try CallerRegex(pattern)
            var matched = false
            let elapsed = clock.measure { for _ in 0..<100 { matched = matched || regex.matchesWhole(key) } }
            #expect(!matched, "'\(pattern)'")
            #expect(elapsed < .milliseconds(200), "'\(pattern)': 100 matches took \(elapsed)")
        }
    }

    /// The costliest pattern within the limits, over names as long as keys
    /// get, is stopped by the budget: refused, in about the budget's time.
    @Test func matchingManyNamesStopsAtTheBudget() throws {
        let regex = try CallerRegex("(?:.*a[ab]{10}){30}")
        var random = SystemRandomNumberGenerator()
        let names = (0..<400).map { _ in String((0..<4096).map { _ in Bool.random(using: &random) ? "a" : "b" }) }
        let clock = ContinuousClock()
        var thrown: EngineError?
        let elapsed = clock.measure {
            do throws(EngineError) {
                _ = try regex.selecting(names, name: { $0 })
            } catch {
                thrown = error
            }
        }
        #expect(thrown?.code == .invalidRegex)
        #expect(thrown?.message.contains("took longer than") == true)
        #expect(elapsed < .seconds(1), "\(elapsed)")
        // Within the budget, the matching names in order.
        let light = try CallerRegex("k[0-9]+")
        #expect(try light.selecting(["k1", "x", "k22", "k"], name: { $0 }) == ["k1", "k22"])
    }
}
