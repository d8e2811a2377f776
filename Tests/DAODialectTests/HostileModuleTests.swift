import DAODialect
import DAOValue
import Foundation
import Testing

/// A module file too deep, too large or expanding too far is refused with its
/// `file:line`, in bounded time, instead of exhausting the stack or the CPU
/// (the depths are those that crashed `daogate check` with SIGSEGV).
@Suite struct HostileModuleTests {
    let fixture = Fixture()

    /// A select at line 2 whose `<if>` holds `condition`.
    static func conditionModule(_ condition: String) -> String {
        module(#"<select id="a" arguments="a">select 1 <if true="\#(condition)">and 2</if></select>"#)
    }

    /// Conditions as deep as those that crashed `daogate check`, by the shape of their nesting.
    static let deepConditions: [String: String] = [
        "5,000 nested parentheses": String(repeating: "(", count: 5000) + "a" + String(repeating: ")", count: 5000),
        "a + a + … of 20,000 terms": Array(repeating: "a", count: 20000).joined(separator: " + ") + " &gt; 1",
        "not not … 30,000 times": String(repeating: "not ", count: 30000) + "a",
        "a or a or … of 5,000 terms": Array(repeating: "a", count: 5000).joined(separator: " or "),
        "- - - … 10,000 signs": String(repeating: "- ", count: 10000) + "a &gt; 1",
        "5,000 nested comparisons in parentheses": String(repeating: "(a == ", count: 5000) + "a" + String(repeating: ")", count: 5000),
    ]

    @Test(arguments: deepConditions.keys.sorted())
    func aConditionNestedTooDeepIsALoadError(shape: String) {
        let errors = fixture.errors(Self.conditionModule(Self.deepConditions[shape]!))
        #expect(errors.count == 1)
        #expect(errors.first?.line == 2)
        #expect(errors.first?.message.contains("the condition nests more than \(Expression.maximumDepth) levels deep") == true,
                "\(errors)")
        // The message quotes an excerpt of the condition, not all of it.
        #expect((errors.first?.message.count ?? 0) < 300)
    }

    @Test func aConditionJustWithinTheDepthLoadsAndEvaluates() throws {
        let depth = Expression.maximumDepth - 2
        let nested = String(repeating: "(", count: depth) + "a &gt; 1" + String(repeating: ")", count: depth)
        let loaded = try fixture.load(Self.conditionModule(nested))
        #expect(try loaded.render("a", "[2]") == [SQL("select 1 and 2")])
        #expect(try loaded.render("a", "[1]") == [SQL("select 1")])
        let chain = Array(repeating: "a", count: Expression.maximumDepth - 1).joined(separator: " + ")
        let sum = try fixture.load(Self.conditionModule("\(chain) == \(Expression.maximumDepth - 1)"))
        #expect(try sum.render("a", "[1]") == [SQL("select 1 and 2")])
    }

    /// `<sql id="f0">${f1}</sql>` … `<sql id="f9999">${f10000}</sql>`, then a select of `${f0}`.
    static func fragmentChain(_ count: Int, times: Int = 1) -> (xml: String, methodLine: Int) {
        let include = { (next: Int) in Array(repeating: "${f\(next)}", count: times).joined(separator: " ") }
        let fragments = (0..<count).map { "<sql id=\"f\($0)\">\(include($0 + 1))</sql>" } + ["<sql id=\"f\(count)\">1</sql>"]
        return (module(fragments.joined(separator: "\n") + "\n<select id=\"a\">select ${f0}</select>"), count + 3)
    }

    @Test func aChainOfTenThousandFragmentsIsALoadErrorAtTheMethod() {
        let (xml, line) = Self.fragmentChain(10_000)
        let errors = fixture.errors(xml)
        #expect(errors.count == 1)
        #expect(errors.first?.line == line)
        #expect(errors.first?.message.hasPrefix("SQL nests more than \(ModuleLimits.nesting) levels deep") == true, "\(errors)")
        #expect(errors.first?.message.contains("through ${f0} → ${f1} → ${f2} → … →") == true, "\(errors)")
    }

    @Test func aChainOfTenThousandConstsIsALoadError() {
        let consts = (0..<10_000).map { "<const c\($0)=\"${c\($0 + 1)}\"/>" } + ["<const c10000=\"1\"/>"]
        let errors = fixture.errors(module(consts.joined(separator: "\n") + "\n<select id=\"a\">select ${c0}</select>"))
        #expect(errors.count == 1)
        #expect(errors.first?.line == 10_003)
        #expect(errors.first?.message.hasPrefix("SQL nests more than \(ModuleLimits.nesting) levels deep") == true, "\(errors)")
    }

    @Test func aChainWithinTheNestingLoads() throws {
        let (xml, _) = Self.fragmentChain(ModuleLimits.nesting - 1)
        #expect(try fixture.load(xml).render("a") == [SQL("select 1")])
    }

    @Test(arguments: ["#{a%}", "@{a%}", "<foreach item=\"i\" collection=\"a%\">#{i}</foreach>", "<if true=\"a% != nil\">x</if>"])
    func aChainOfTooManyPropertiesIsALoadError(reference: String) {
        let long = reference.replacingOccurrences(of: "%", with: String(repeating: ".b", count: 100_000))
        let errors = fixture.errors(module(#"<select id="a" arguments="a">select 1 \#(long)</select>"#))
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("more than \(ModuleLimits.chainLength) properties") == true, "\(errors.first?.message.prefix(300) ?? "")")
        #expect((errors.first?.message.count ?? 0) < 400)
        let limit = reference.replacingOccurrences(of: "%", with: String(repeating: ".b", count: ModuleLimits.chainLength))
        #expect((try? fixture.load(module(#"<select id="a" arguments="a">select 1 \#(limit)</select>"#))) != nil)
    }

    @Test func anArgumentTypeNestedTooDeepIsALoadErrorQuickly() {
        let brackets = 100_000
        let started = ContinuousClock.now
        let errors = fixture.errors(module(#"<select id="a" arguments="x:"#
            + String(repeating: "[", count: brackets) + "int" + String(repeating: "]", count: brackets) + #"">select #{x}</select>"#))
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("arrays at most \(ModuleLimits.typeNesting) deep") == true)
        #expect((errors.first?.message.count ?? 0) < 400)
    }

    @Test func anArgumentTypeAtTheNestingLimitLoads() throws {
        let depth = ModuleLimits.typeNesting
        let type = String(repeating: "[ ", count: depth) + "int" + String(repeating: " ]", count: depth)
        let loaded = try fixture.load(module(#"<select id="a" arguments="x:\#(type)">select #{x}</select>"#))
        #expect(loaded.method(named: "a")?.arguments.first?.type?.description
            == String(repeating: "[", count: depth) + "int" + String(repeating: "]", count: depth))
        #expect(!fixture.errors(module(#"<select id="a" arguments="x:[\#(type)]">select #{x}</select>"#)).isEmpty)
    }

    @Test func elementsNestedTooDeepAreALoadError() {
        let depth = 100
        let errors = fixture.errors(module(#"<select id="a" arguments="a">select 1 "#
            + String(repeating: #"<if true="a">"#, count: depth) + "x" + String(repeating: "</if>", count: depth) + "</select>"))
        #expect(errors.count == 1)
        #expect(errors.first?.line == 2)
        #expect(errors.first?.message.hasPrefix("SQL nests more than \(ModuleLimits.nesting) levels deep") == true, "\(errors)")
    }

    @Test func foreachesAndFragmentsCountTogether() {
        // 40 nested foreach elements in a fragment, included through a chain of 30 fragments.
        let foreaches = (0..<40).map { #"<foreach item="i\#($0)" collection="\#($0 == 0 ? "l" : "i\($0 - 1)")">"# }.joined()
            + "#{i39}" + String(repeating: "</foreach>", count: 40)
        let chain = (0..<30).map { "<sql id=\"f\($0)\">${f\($0 + 1)}</sql>" }.joined(separator: "\n")
        let errors = fixture.errors(module(chain + "\n<sql id=\"f30\">\(foreaches)</sql>\n"
            + #"<select id="a" arguments="l">select ${f0}</select>"#))
        #expect(errors.count == 1)
        #expect(errors.first?.line == 33)
        #expect(errors.first?.message.hasPrefix("SQL nests more than \(ModuleLimits.nesting) levels deep") == true, "\(errors)")
    }

    @Test func xmlNestedTenThousandDeepIsRefusedByTheParser() {
        let errors = fixture.errors(module(#"<select id="a" arguments="a">select 1 "#
            + String(repeating: #"<if true="a">"#, count: 10_000) + "x" + String(repeating: "</if>", count: 10_000) + "</select>"))
        #expect(errors.count == 1)
        #expect(errors.first?.message.hasPrefix("malformed XML: Excessive depth in document") == true, "\(errors)")
    }

    @Test func fragmentsThatDoubleFortyLevelsDeepAreRefusedQuickly() {
        let (xml, line) = Self.fragmentChain(40, times: 2)
        #expect(xml.utf8.count < 2_000)
        let started = ContinuousClock.now
        let errors = fixture.errors(xml)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(errors.count == 1)
        #expect(errors.first?.line == line)
        #expect(errors.first?.message.hasPrefix("the module makes more than \(ModuleLimits.inclusions) ${} inclusions") == true,
                "\(errors)")
    }

    @Test func fragmentsThatExpandBeyondTheSizeAreRefused() {
        // 4⁸ copies of a 2,000-byte text: far over 2 MiB, in fewer inclusions than their limit.
        let text = String(repeating: "x", count: 2000)
        let (xml, _) = Self.fragmentChain(8, times: 4)
        let errors = fixture.errors(xml.replacingOccurrences(of: "<sql id=\"f8\">1</sql>", with: "<sql id=\"f8\">\(text)</sql>"))
        #expect(errors.count == 1)
        #expect(errors.first?.message.hasPrefix("the module comes to more than \(ModuleLimits.expandedSQL >> 20) MiB of SQL") == true,
                "\(errors)")
    }

    @Test func theBudgetIsTheModulesNotEachMethods() {
        // Each method alone is within the limit; together they are not, and the error is said once.
        let text = String(repeating: "x", count: 1000)
        let methods = (0..<50).map { "<select id=\"m\($0)\">select ${big}</select>" }.joined(separator: "\n")
        let errors = fixture.errors(module("<sql id=\"big\">" + Array(repeating: text, count: 50).joined(separator: "\n")
            + "</sql>\n" + methods))
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("MiB of SQL") == true, "\(errors)")
    }

    @Test func sixtyThousandProblemsAreReportedInBoundedTime() {
        let started = ContinuousClock.now
        let errors = fixture.errors(module(String(repeating: "<selct/>\n", count: 60_000)))
        #expect(errors.count == 60_000)
        // About 2 s alone; comparing every problem with every other took minutes.
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test func aFileOverTheSizeLimitIsRefusedUnread() {
        let padding = String(repeating: " ", count: ModuleLimits.fileSize)
        let errors = fixture.errors(module("<select id=\"a\">select 1</select>" + padding))
        #expect(errors.count == 1)
        #expect(errors.first?.message == "the file is larger than \(ModuleLimits.fileSize >> 20) MiB, the most a module file may be",
                "\(errors)")
    }

    @Test func anEndlessFileIsRefusedUnread() throws {
        let path = fixture.directory.appendingPathComponent("endless.xml").path
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/zero")
        let started = ContinuousClock.now
        #expect(throws: LoadFailure.self) { try ModuleLoader.load(file: path) }
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    static let processingInstructions: [(String, String, Int)] = [
        ("before the root", "<?php echo 1; ?>\n<module name=\"m\"><select id=\"a\">select 1</select></module>", 1),
        ("after the XML declaration", "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"x.xsl\"?>\n<module name=\"m\"/>", 2),
        ("after the root", "<module name=\"m\"><select id=\"a\">select 1</select></module>\n\n<?php system('x'); ?>\n", 3),
        ("inside the module", "<module name=\"m\">\n<?php echo 1; ?></module>", 2),
        ("inside a method", "<module name=\"m\">\n<select id=\"a\">select <?php echo 1; ?> 1</select></module>", 2),
    ]

    @Test(arguments: processingInstructions)
    func aProcessingInstructionAnywhereIsRefused(place: String, xml: String, line: Int) {
        let errors = fixture.errors(xml)
        #expect(errors.map(\.message) == ["processing instructions are not allowed in a module file"], "\(place)")
        #expect(errors.first?.line == line, "\(place)")
    }

    @Test func anUnusedCycleIsALoadError() {
        let errors = fixture.errors(module("""
            <sql id="a">x ${b}</sql>
            <const c="${c}"/>
            <sql id="b">y
              ${a}</sql>
            <sql id="fine">z</sql>
            <select id="s">select ${fine}</select>
            """))
        #expect(errors.map(\.line) == [3, 5])
        #expect(errors.map(\.message) == ["${c} includes itself: c → c", "${a} includes itself: a → b → a"])
    }

    @Test func aCycleInsideNestedElementsOfAFragmentIsFound() {
        let errors = fixture.errors(module("""
            <sql id="a"><if true="1"><where>${b}</where></if></sql>
            <sql id="b">-- ${a} in a comment includes nothing
              '${a}'</sql>
            """))
        #expect(errors.map(\.line) == [4])
        #expect(errors.map(\.message) == ["${a} includes itself: a → b → a"])
    }

    @Test func aCycleAMethodIncludesIsReportedWhereItClosesAndWhereItIsUsed() {
        let errors = fixture.errors(module("""
            <sql id="a">x ${b}</sql>
            <sql id="b">y ${a}</sql>
            <select id="s">select ${b}</select>
            """))
        #expect(errors == [
            LoadError(file: "module.xml", line: 3, message: "${a} includes itself: a → b → a"),
            LoadError(file: "module.xml", line: 4, message: "${b} cannot be expanded: it is on a cycle of inclusions"),
        ])
    }

    @Test func aCommentedOutInclusionIsNoCycle() throws {
        let loaded = try fixture.load(module("""
            <sql id="a">x /* ${a} */ -- ${a}
            </sql>
            <select id="s">select ${a}</select>
            """))
        #expect(try loaded.render("s") == [SQL("select x")])
    }

    @Test func theDeepestModuleAllowedRendersOnASmallStack() throws {
        // Nesting at the limit, and a condition at its limit inside: rendering,
        // which runs on the server's connection threads, recurses at most that
        // deep, which fits a 512 KiB thread stack even in a debug build.
        let chain = (0..<(ModuleLimits.nesting - 2)).map { "<sql id=\"f\($0)\">${f\($0 + 1)}</sql>" }.joined(separator: "\n")
        let depth = Expression.maximumDepth - 2
        let condition = String(repeating: "(", count: depth) + "a &gt; 1" + String(repeating: ")", count: depth)
        let loaded = try fixture.load(module(chain + "\n<sql id=\"f\(ModuleLimits.nesting - 2)\"><if true=\"\(condition)\">deep</if></sql>\n"
            + #"<select id="a" arguments="a">select ${f0}</select>"#))
        let method = try #require(loaded.method(named: "a"))
        let frame = try method.frame(arguments: .array([.integer(2)]))
        final class Outcome: @unchecked Sendable { var sql: String? }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            outcome.sql = (try? method.render(frame: frame, table: "t"))?.first?.statements.first?.sql
            done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        done.wait()
        #expect(outcome.sql == "select deep")
    }
}
