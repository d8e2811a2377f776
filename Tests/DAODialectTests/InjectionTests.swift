import CSQLite
import DAODialect
import DAOValue
import Testing

/// `#{}` always binds; `@{}` quotes; `@{x no ""}` lets only single harmless tokens through.
/// Rendered SQL is run in an in-memory SQLite database, so what it does is checked, not just its text.
@Suite struct InjectionTests {
    let fixture = Fixture()

    static let payloads: [String] = [
        "' OR '1'='1",
        "1; DROP TABLE users; --",
        "Robert'); DROP TABLE Students;--",
        "x' UNION SELECT sql FROM sqlite_master --",
        "\\'; select 1; --",
        "'''",
        "a\"b`c",
        "/* comment */ 1",
        "-- line comment",
        "1) OR (1=1",
        "ünïcødé ' 🐘",
    ]

    /// Runs `sql` in a fresh in-memory database and returns the first column of each row as text.
    func run(_ statement: SQL) throws -> [String?] {
        var database: OpaquePointer?
        #expect(sqlite3_open(":memory:", &database) == SQLITE_OK)
        defer { sqlite3_close(database) }
        var prepared: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let code = sqlite3_prepare_v2(database, statement.sql, -1, &prepared, &tail)
        guard code == SQLITE_OK, let prepared else {
            throw RenderError(code: .unsafeInline, method: "test", message: String(cString: sqlite3_errmsg(database)))
        }
        defer { sqlite3_finalize(prepared) }
        #expect(tail.map { String(cString: $0).allSatisfy { $0.isWhitespace } } ?? true, "a second statement followed: \(statement.sql)")
        for (index, value) in statement.bindings.enumerated() {
            if case .string(let text) = value {
                sqlite3_bind_text(prepared, Int32(index + 1), text, -1, daogate_sqlite_transient())
            }
        }
        var rows: [String?] = []
        while sqlite3_step(prepared) == SQLITE_ROW {
            rows.append(sqlite3_column_text(prepared, 0).map { String(cString: $0) })
        }
        return rows
    }

    @Test(arguments: payloads)
    func bindingAPayloadKeepsTheStatement(payload: String) throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"x\">select #{x} as v</select>"))
        let statements = try loaded.render("s", [Value.string(payload)].jsonArray)
        #expect(statements == [SQL("select ? as v", [.string(payload)])])
        #expect(try run(statements[0]) == [payload])
    }

    @Test(arguments: payloads)
    func inliningAPayloadMakesOneStringLiteral(payload: String) throws {
        let loaded = try fixture.load(module("""
            <select id="quoted" arguments="x">select @{x} as v</select>
            <select id="inside" arguments="x">select 'pre-@{x}-post' as v</select>
            <select id="identifier" arguments="x">select 1 as "@{x}"</select>
            """))
        let arguments = [Value.string(payload)].jsonArray
        #expect(try run(loaded.render("quoted", arguments)[0]) == [payload])
        #expect(try run(loaded.render("inside", arguments)[0]) == ["pre-\(payload)-post"])
        #expect(try run(loaded.render("identifier", arguments)[0]) == ["1"])
    }

    @Test(arguments: payloads + [
        "id desc", "1 OR 1=1", "id--", "id/*", "(select 1)", "UNION", "select", "a b", "'x'", "1e5e5", "",
        "-1", "id,name", "a\u{0}b", "ｓelect", "id\n", "\tid", "a.b.c.d", "1.", ".5", "x;", "t.order",
    ])
    func rawTextRefusesAnythingButOneHarmlessToken(payload: String) throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"x\">select * from t order by @{x no \"\"}</select>"))
        let error = loaded.renderError("s", [Value.string(payload)].jsonArray)
        #expect(error?.code == .unsafeInline)
        #expect(error?.argument == "x")
    }

    @Test(arguments: ["created_at", "t.created_at", "main.t.c", "_x1", "42", "1.5", "1e-5", "7E+3", "DESC", "asc"])
    func rawTextAcceptsNamesNumbersAndDirections(text: String) throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"x\">select * from t order by @{x no \"\"}</select>"))
        #expect(try loaded.render("s", [Value.string(text)].jsonArray) == [SQL("select * from t order by \(text)")])
    }

    @Test func rawNumbersAndNil() throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"x\">select @{x no \"\"}</select>"))
        #expect(try loaded.render("s", "[12]") == [SQL("select 12")])
        #expect(try loaded.render("s", "[true]") == [SQL("select 1")])
        #expect(try loaded.render("s", "[null]") == [SQL("select NULL")])
        #expect(loaded.renderError("s", "[-12]")?.code == .unsafeInline)
        #expect(loaded.renderError("s", "[[1]]")?.code == .unsafeInline)
    }

    @Test func adjacentRawValuesAreCheckedTogether() throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"a, b\">select * from t order by @{a no \"\"}@{b no \"\"}</select>"))
        #expect(try loaded.render("s", #"["abc", "1"]"#) == [SQL("select * from t order by abc1")])
        let error = loaded.renderError("s", #"["UN", "ION"]"#)
        #expect(error?.code == .unsafeInline)
        #expect(error?.message.contains("joins the raw text before it") == true)
    }

    @Test func rawValuesInForeachItemsAreCheckedTogetherWhereTheyJoin() throws {
        let loaded = try fixture.load(module(#"""
            <select id="s" arguments="cols">select * from t order by <foreach collection="cols" item="c" separator=""> @{c no ""} </foreach></select>
            """#))
        // The items' spaces are the module's layout: the values join, as @{a no ""}@{b no ""} does.
        #expect(try loaded.render("s", #"{"cols": ["a", "b", "c"]}"#) == [SQL("select * from t order by abc")])
        let error = loaded.renderError("s", #"{"cols": ["SEL", "ECT"]}"#)
        #expect(error?.code == .unsafeInline)
        #expect(error?.message.contains("joins the raw text before it") == true)
        let spaced = try fixture.load(module(#"""
            <select id="s" arguments="cols">select * from t order by <foreach collection="cols" item="c" separator=", "> @{c no ""} </foreach></select>
            """#))
        #expect(spaced.renderError("s", #"{"cols": ["a", "b; drop table t"]}"#)?.code == .unsafeInline)
        #expect(try spaced.render("s", #"{"cols": ["a", "b"]}"#) == [SQL("select * from t order by a, b")])
    }

    @Test func aRunOfJoinedRawValuesIsBoundedSoCheckingItStaysLinear() throws {
        let loaded = try fixture.load(module(#"""
            <select id="s" arguments="cols">select * from t order by <foreach collection="cols" item="c" separator="">@{c no ""}</foreach></select>
            """#))
        let longest = String(repeating: "a", count: 128)
        #expect(try loaded.render("s", #"{"cols": ["\#(longest.dropLast())", "b"]}"#) == [SQL("select * from t order by \(longest.dropLast())b")])
        #expect(try loaded.render("s", #"{"cols": ["\#(longest)"]}"#) == [SQL("select * from t order by \(longest)")])
        #expect(loaded.renderError("s", #"{"cols": ["\#(longest)a"]}"#)?.code == .unsafeInline)
        // 200,000 one-letter items: each join re-checked the whole run, 2·10¹⁰ steps.
        let many = "[" + Array(repeating: #""a""#, count: 200_000).joined(separator: ",") + "]"
        let started = ContinuousClock.now
        let error = loaded.renderError("s", #"{"cols": \#(many)}"#)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(error?.code == .unsafeInline)
        #expect(error?.message.contains("at most 128 bytes") == true, "\(String(describing: error))")
    }

    @Test func aNegativeNumberAfterAMinusSeparatorDoesNotStartAComment() throws {
        let loaded = try fixture.load(module(#"""
            <select id="s" arguments="ns">select <foreach collection="ns" item="n" separator="-">@{n}</foreach> as v</select>
            """#))
        let statements = try loaded.render("s", #"{"ns": [1, -5]}"#)
        #expect(statements == [SQL("select 1- -5 as v")])
        #expect(try run(statements[0]) == ["6"])
    }

    @Test func aNegativeNumberAfterAMinusDoesNotStartAComment() throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"n\">select 10-@{n} as v</select>"))
        let statements = try loaded.render("s", "[-5]")
        #expect(statements == [SQL("select 10- -5 as v")])
        #expect(try run(statements[0]) == ["15"])
    }

    @Test func inliningRefusesNulCharacters() throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"x\">select @{x}</select>"))
        #expect(loaded.renderError("s", #"["a\u0000b"]"#)?.code == .unsafeInline)
    }

    @Test func inlineFormatsEveryKind() throws {
        let loaded = try fixture.load(module("<select id=\"s\" arguments=\"x\">select @{x}</select>"))
        #expect(try loaded.render("s", "[1.5]") == [SQL("select 1.5")])
        #expect(try loaded.render("s", "[false]") == [SQL("select 0")])
        #expect(try loaded.render("s", #"[{"$base64": "AP8="}]"#) == [SQL("select X'00FF'")])
        #expect(try loaded.render("s", #"[[1, "a'b"]]"#) == [SQL(#"select '[1,"a''b"]'"#)])
        #expect(try loaded.render("s", #"["it's"]"#) == [SQL("select 'it''s'")])
    }

    @Test(arguments: ["t; drop table x", "sqlite_master", "TableVersions", "_litestream_seq", "_Litestream_Lock", "order", "", "../x", "a b", "x\u{0}",
                      String(repeating: "a", count: 200), "1abc", "tāble"])
    func hostileTableNamesAreRefused(name: String) {
        #expect(tableNameProblem(name) != nil)
    }

    @Test(arguments: ["chat_42", "Messages", "_t"])
    func plainTableNamesAreAccepted(name: String) {
        #expect(tableNameProblem(name) == nil)
    }
}

extension Array where Element == Value {
    /// These values as a JSON array.
    var jsonArray: String { Value.array(self).jsonString() }
}
