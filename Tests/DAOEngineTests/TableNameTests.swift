import DAOEngine
import Testing

/// `sameTable`: whether two names are one table to SQLite, which folds ASCII letters' case and compares
/// every other byte exactly (so a caller's `X-Table-Name` is the module's own table only when SQLite agrees).
@Suite struct TableNameTests {
    @Test func asciiLettersFoldTheirCase() {
        #expect(sameTable("Users", "Users"))
        #expect(sameTable("Users", "uSERS"))
        #expect(sameTable("t_1", "T_1"))
    }

    @Test func everythingElseIsComparedByteForByte() {
        #expect(!sameTable("Users", nil))
        #expect(!sameTable("Users", "User"))
        #expect(!sameTable("ab", "ac"))
        // Bytes 0x20 apart that are not letters: '@' and '`', '[' and '{', '0' and the control byte 0x10.
        #expect(!sameTable("a@", "a`"))
        #expect(!sameTable("a[", "a{"))
        #expect(!sameTable("a0", "a\u{10}"))
        // Non-ASCII letters do not fold, and canonically equivalent spellings (which Swift's == equates) differ.
        #expect(!sameTable("é", "É"))
        #expect(!sameTable("caf\u{E9}", "cafe\u{301}"))
        #expect(!sameTable("\u{212A}", "K"))
        // Of the same length too: combining marks in either order are one string to Swift, two names to SQLite.
        #expect("a\u{301}\u{316}" == "a\u{316}\u{301}")
        #expect(!sameTable("a\u{301}\u{316}", "a\u{316}\u{301}"))
        #expect(sameTable("caf\u{E9}", "CAF\u{E9}"))
    }
}
