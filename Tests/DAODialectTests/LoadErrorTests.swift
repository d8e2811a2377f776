import DAODialect
import Foundation
import Testing

/// A module that cannot work fails at load, at the right line, saying why.
@Suite struct LoadErrorTests {
    let fixture = Fixture()

    /// (what is wrong, module XML, the line of the problem, a part of its message)
    static let cases: [(String, String, Int, String)] = [
        ("malformed XML", """
            <module name="m" tableName="t">
              <select id="a">select 1</selec>
            </module>
            """, 2, "malformed XML: Opening and ending tag mismatch: select line 2 and selec"),
        ("root is not module", "<dao name=\"m\"/>", 1, "the root element must be <module>, not <dao>"),
        ("module without a name", "<module tableName=\"t\"/>", 1, "<module> needs a name attribute"),
        ("module name not an identifier", "<module name=\"my-module\"/>", 1, "module name 'my-module' must be an identifier"),
        ("unknown element", module("<selct id=\"a\">select 1</selct>"), 2, "unknown element <selct> in <module>"),
        ("unknown element in SQL", module("<select id=\"a\">select 1 <iff true=\"1\">x</iff></select>"), 2,
         "unknown element <iff> in SQL (expected if, choose, foreach, where, set or trim)"),
        ("unknown module attribute", "<module name=\"m\" table=\"t\"/>", 1, "unknown attribute 'table' on <module>"),
        ("unknown method attribute", module("<select id=\"a\" reslt=\"int\">select 1</select>"), 2,
         "unknown attribute 'reslt' on <select> (allowed: access, arguments, foreach, id, result, scan)"),
        ("result on a write method", module("<insert id=\"a\" result=\"int\">insert into t values (1)</insert>"), 2,
         "unknown attribute 'result' on <insert> (allowed: access, arguments, foreach, id, scan)"),
        ("unknown scan value", module("<select id=\"a\" scan=\"always\">select 1</select>"), 2,
         "scan=\"always\" must be allowed or report"),
        ("unknown foreach attribute", module("<select id=\"a\" arguments=\"l\">select <foreach item=\"i\" collection=\"l\" index=\"n\">#{i}</foreach></select>"), 2,
         "unknown attribute 'index' on <foreach>"),
        ("text outside steps", module("""
            <update id="a">
              <step>delete from t</step>
              vacuum
            </update>
            """), 4, "method 'a' has <step>s, so no text may stand outside them: 'vacuum'"),
        ("dynamic tag outside steps", module("""
            <update id="a" arguments="x">
              <step>delete from t</step>
              <if true="x">vacuum</if>
            </update>
            """), 4, "method 'a' has <step>s, so <if> must be inside a <step>"),
 ("steps in a select", module("<select id=\"a\"><step>select 1</step><step>select 2</step></select>"), 2,
         "select 'a' must run exactly one statement: <step> is for insert, update, delete and upgrade"),
        ("nested step", module("<update id=\"a\"><step>delete <step>from t</step></step></update>"), 2,
         "a <step> must be a direct child of its method or upgrade, and cannot contain another step"),
        ("foreach not collection.item", module("<insert id=\"a\" arguments=\"ms\" foreach=\"ms\">insert into t values (1)</insert>"), 2,
         "foreach=\"ms\" must be of the form collection.item"),
        ("foreach with three parts", module("<insert id=\"a\" arguments=\"ms\" foreach=\"ms.m.x\">insert into t values (1)</insert>"), 2,
         "foreach=\"ms.m.x\" must be of the form collection.item"),
        ("foreach collection not an argument", module("<insert id=\"a\" arguments=\"ms\" foreach=\"msgs.m\">insert into t values (#{m})</insert>"), 2,
         "foreach=\"msgs.m\": 'msgs' is not an argument of method 'a'"),
        ("foreach item shadows an argument", module("<insert id=\"a\" arguments=\"ms, m\" foreach=\"ms.m\">insert into t values (#{m})</insert>"), 2,
         "the foreach item 'm' has the name of an argument"),
        ("inner foreach item shadows an argument", module("<select id=\"a\" arguments=\"l, i\">select <foreach item=\"i\" collection=\"l\">#{i}</foreach></select>"), 2,
         "the foreach item 'i' shadows an argument or an enclosing item of the same name"),
        ("duplicate method ids", module("""
            <select id="a">select 1</select>
            <delete id="a">delete from t</delete>
            """), 3, "duplicate method id 'a' (first defined at line 2)"),
        ("undefined ${name}", module("<select id=\"a\">select ${columns} from t</select>"), 2,
         "${columns} is not defined: no const or sql fragment is named 'columns'"),
        ("${} naming an argument", module("<select id=\"a\" arguments=\"c\">select ${c} from t</select>"), 2,
         "${c} names config content (a const, an sql fragment, T); to use the argument 'c' write #{c}"),
        ("unknown map", module("<select id=\"a\" result=\":nope\">select 1</select>"), 2,
         "result=\":nope\" refers to map 'nope', which is not defined"),
        ("unknown map in an array result", module("<select id=\"a\" result=\"[:nope]\">select 1</select>"), 2,
         "refers to map 'nope', which is not defined"),
        ("malformed result", module("<select id=\"a\" result=\"[int\">select 1</select>"), 2,
         "result=\"[int\" is not a result type"),
        ("nested array result", module("<select id=\"a\" result=\"[[int]]\">select 1</select>"), 2,
         "result=\"[[int]]\" is not a result type"),
        ("malformed version", "<module name=\"m\" version=\"1.x\"/>", 1,
         "version '1.x' is not a version of the form x.x"),
        ("malformed upgrade version", module("<upgrade toVersion=\"one\">select 1</upgrade>"), 2, "<upgrade> needs toVersion=\"x.x\""),
        ("upgrade past the module version", module("<upgrade toVersion=\"2.0\">alter table t add c</upgrade>"), 2,
         "<upgrade toVersion=\"2.0\"> goes past the module's version 1.0, so it would never run"),
        ("upgradeMinVersion past the version", "<module name=\"m\" version=\"1.0\" upgradeMinVersion=\"1.5\"/>", 1,
         "upgradeMinVersion 1.5 is newer than the module's version 1.0"),
        ("if without a condition", module("<select id=\"a\">select 1 <if>x</if></select>"), 2, "<if> needs true=\"…\" or false=\"…\""),
        ("if with both conditions", module("<select id=\"a\" arguments=\"x\">select 1 <if true=\"x\" false=\"x\">y</if></select>"), 2,
         "<if> takes true=\"…\" or false=\"…\", not both"),
        ("two otherwise", module("""
            <select id="a" arguments="x">select 1
              <choose><when true="x">a</when><otherwise>b</otherwise>
              <otherwise>c</otherwise></choose>
            </select>
            """), 4, "<choose> takes at most one <otherwise>"),
        ("when after otherwise", module("""
            <select id="a" arguments="x">select 1
              <choose><otherwise>b</otherwise><when true="x">a</when></choose>
            </select>
            """), 3, "<when> cannot follow <otherwise>"),
        ("T as a fragment id", module("<sql id=\"T\">x</sql>"), 2, "'T' cannot be an sql fragment id: ${T} and ${t} are the table"),
        ("t as a fragment id", module("<sql id=\"t\">x</sql>"), 2, "'t' cannot be an sql fragment id: ${T} and ${t} are the table"),
        ("T as a const", module("<const T=\"x\"/>"), 2, "'T' cannot be a constant name: ${T} and ${t} are the table"),
        ("fragment cycle", module("""
            <sql id="a">x ${b}</sql>
            <sql id="b">y ${a}</sql>
            <select id="s">select ${a}</select>
            """), 3, "${a} includes itself: a → b → a"),
        ("fragment including itself", module("""
            <sql id="a">x ${a}</sql>
            <select id="s">select ${a}</select>
            """), 2, "${a} includes itself: a → a"),
        ("fragment cycle no method includes", module("""
            <sql id="a">x ${b}</sql>
            <sql id="b">y ${a}</sql>
            """), 3, "${a} includes itself: a → b → a"),
        ("crypt property inlined in a write", module("""
            <crypt class="Secret" property="s"/>
            <insert id="a" arguments="model:Secret">insert into t (s) values (@{model.s})</insert>
            """), 3, "@{model.s} would write the crypt property 's' into the SQL text in plain"),
        ("chain too long", module("<select id=\"a\" arguments=\"a\">select #{a\(String(repeating: ".b", count: 17))}</select>"), 2,
         "reads more than 16 properties in a chain"),
        ("processing instruction", "<?php echo 1; ?>\n<module name=\"m\"/>", 1, "processing instructions are not allowed in a module file"),
        ("unknown initializer", "<module name=\"m\" initializer=\"create\"/>", 1, "initializer 'create' is not a method of this module"),
        // The rule the server applies to X-Storage: a module's storage no call could ever use is a load error.
        ("storage name too long", "<module name=\"m\" storage=\"sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss\"/>", 1, "storage 'sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss': a storage name is 1 to 64 characters"),
        ("storage name starting with -", "<module name=\"m\" storage=\"-x\"/>", 1,
         "storage '-x': a storage name uses only letters, digits, '_' and '-', and does not start with '-'"),
        ("select initializer", module("<select id=\"create\">select 1</select>", attributes: "name=\"m\" initializer=\"create\""), 2,
         "the initializer 'create' must be an update (or insert/delete), not a select"),
        ("initializer with a required argument", module("<update id=\"create\" arguments=\"$x\">create table t (a)</update>", attributes: "name=\"m\" initializer=\"create\""), 2,
         "the initializer 'create' runs without arguments, so it cannot require $x"),
        ("binding inside quotes", module("<select id=\"a\" arguments=\"x\">select * from t where a = '#{x}'</select>"), 2,
         "#{x} inside a quoted literal would bind nothing: remove the quotes around it"),
        ("unclosed quote", module("<select id=\"a\">select 'abc from t</select>"), 2,
         "a quoted SQL literal or identifier is not closed by the end of the statement"),
        ("quote open across a tag", module("<select id=\"a\" arguments=\"x\">select 'a <if true=\"x\">b</if>'</select>"), 2,
         "a quoted SQL literal must close before <if>"),
        ("unclosed comment", module("<select id=\"a\">select 1 /* comment</select>"), 2, "a /* comment is not closed"),
        ("try with something after it", module("""
            <insert id="a"><try>insert into t values (1)<except>update t set a = 1</except></try>
            delete from t</insert>
            """), 2, "<try> must be the whole body of method 'a': nothing may come before or after it"),
        ("try without except", module("<insert id=\"a\"><try>insert into t values (1)</try></insert>"), 2,
         "<try> needs an <except> block as its last element"),
        ("except outside try", module("<insert id=\"a\">insert <except>x</except></insert>"), 2, "<except> must be the whole body of a method"),
        ("argument not an identifier", module("<select id=\"a\" arguments=\"$my-arg\">select 1</select>"), 2,
         "argument '$my-arg' must be an identifier, optionally with a $ prefix"),
        ("argument declared twice", module("<select id=\"a\" arguments=\"x, $x\">select 1</select>"), 2, "argument 'x' is declared twice"),
        ("argument named like a keyword", module("<select id=\"a\" arguments=\"nil\">select 1</select>"), 2,
         "an argument cannot be named 'nil', a keyword of expressions"),
        ("unknown argument type", module("<select id=\"a\" arguments=\"x:integer64\">select 1</select>"), 2,
         "argument 'x': 'integer64' is not a type"),
        ("result class not capitalised", module("<select id=\"a\" result=\"[strings]\">select 1</select>"), 2,
         "result=\"[strings]\" is not a result type"),
        ("expression syntax", module("<select id=\"a\" arguments=\"x\">select 1 <if true=\"x = 1\">y</if></select>"), 2,
         "<if true=\"x = 1\">: "),
        ("expression with an unknown name", module("<select id=\"a\" arguments=\"x\">select 1 <if true=\"y != nil\">y</if></select>"), 2,
         "method 'a' known: x"),
        ("empty reference (the 2021 page's #{})", module("<insert id=\"a\" arguments=\"m\">insert into t values (#{})</insert>"), 2,
         "malformed reference #{}: expected #{name} or #{name or \"\"}, where name may be a chain a.b.c"),
        ("unknown reference modifier", module("<insert id=\"a\" arguments=\"m\">insert into t values (#{m else 1})</insert>"), 2,
         "malformed reference #{m else 1}"),
        ("no on a binding", module("<insert id=\"a\" arguments=\"m\">insert into t values (#{m no \"\"})</insert>"), 2,
         "#{m no \"\"}: 'no \"\"' is for @{} only; #{} always binds a parameter"),
        ("undeclared name in a binding", module("<select id=\"a\" arguments=\"x\">select #{y}</select>"), 2,
         "#{y}: 'y' is not an argument of method 'a' (known: x)"),
        ("unclosed reference", module("<select id=\"a\" arguments=\"x\">select #{x</select>"), 2, "#{ is not closed by } on the same line"),
        ("method without SQL", module("<select id=\"a\">  </select>"), 2, "method 'a' has no SQL"),
        ("step without SQL", module("<update id=\"a\"><step>delete from t</step><step> </step></update>"), 2,
         "a <step> of method 'a' has no SQL"),
        ("dynamic tag in an upgrade", module("<upgrade toVersion=\"1.0\"><if true=\"1\">x</if></upgrade>"), 2,
         "<if> is not allowed in an <upgrade>, which runs without arguments"),
        ("bad onVoid", module("<select id=\"a\">select 1 <where onVoid=\"stop\">a</where></select>"), 2,
         "onVoid=\"stop\" must be quit or ignoreAfter"),
        ("bad reverse", module("<select id=\"a\" arguments=\"l\">select <foreach item=\"i\" collection=\"l\" reverse=\"backwards\">#{i}</foreach></select>"), 2,
         "reverse=\"backwards\" must be yes, no, true or false"),
        ("template without a star", module("<select id=\"a\" arguments=\"m\">select %{'x', a}</select>"), 2,
         "%{'x', …}: the template has no * to replace"),
        ("malformed template", module("<select id=\"a\" arguments=\"m\">select %{x, a}</select>"), 2,
         "malformed %{…}: expected %{'template with *', name, name…}"),
        ("table name that is a keyword", "<module name=\"m\" tableName=\"order\"/>", 1, "tableName 'order': 'order' is an SQL keyword"),
        ("map without result class", module("<map id=\"mm\"><result property=\"a\" column=\"b\"/></map>"), 2,
         "<map id=\"mm\"> needs a result attribute naming its class"),
        ("map result without column", module("<map id=\"mm\" result=\"M\"><result property=\"a\"/></map>"), 2,
         "<result> needs both property and column"),
        ("crypt without property", module("<crypt class=\"M\"/>"), 2, "<crypt> needs class and property attributes that are identifiers"),
        ("text directly in module", module("select 1"), 2, "text directly inside <module> is not part of any method: 'select 1'"),
        ("bad userDependent", "<module name=\"m\" userDependent=\"maybe\"/>", 1, "userDependent=\"maybe\" must be true, false, yes or no"),
        ("database path escaping the data folder", "<module name=\"m\" database=\"../x.db\"/>", 1,
         "database '../x.db': must not contain empty, '.' or '..' parts"),
    ]

    @Test(arguments: cases)
    func problemIsReportedAtItsLine(problem: String, xml: String, line: Int, message: String) {
        let errors = fixture.errors(xml)
        #expect(errors.contains { $0.line == line && $0.message.contains(message) },
                "\(problem): expected line \(line) with “\(message)”, got \(errors)")
    }

    @Test func everyProblemOfAFileIsReported() {
        let errors = fixture.errors(module("""
            <select id="a" result="nope[">select 1</select>
            <select id="b" arguments="x">select #{y}</select>
            <selct id="c"/>
            """))
        #expect(errors.map(\.line) == [2, 3, 4])
    }

    @Test func errorsPrintAsFileLineMessage() {
        let path = fixture.write(module("<selct id=\"a\"/>"), to: "bad.xml")
        do {
            _ = try ModuleLoader.load(file: path)
            Issue.record("loaded")
        } catch {
            #expect(error.description.hasPrefix("\(path):2: unknown element <selct>"))
        }
    }

    @Test func directoryLoadReportsDuplicateModuleNamesAndKeepsTheGoodModules() {
        fixture.write(module("<select id=\"a\">select 1</select>", attributes: "name=\"Same\""), to: "a/one.xml")
        fixture.write(module("<select id=\"b\">select 2</select>", attributes: "name=\"Same\""), to: "b/two.xml")
        fixture.write(module("<select id=\"c\">select 3</select>", attributes: "name=\"Other\""), to: "c.xml")
        fixture.write("<module name=\"Broken\"><selct/></module>", to: "d.xml")
        fixture.write("not a module", to: "notes.txt")
        let (modules, errors) = ModuleLoader.loadDirectory(fixture.directory.path)
        #expect(modules.map(\.name) == ["Same", "Other"])
        #expect(errors.count == 2)
        #expect(errors.contains { $0.file.hasSuffix("b/two.xml") && $0.message.contains("module name 'Same' is already used by") })
        #expect(errors.contains { $0.file.hasSuffix("d.xml") && $0.line == 1 && $0.message.contains("unknown element <selct>") })
    }

    @Test func aMissingFolderIsAnError() {
        let (modules, errors) = ModuleLoader.loadDirectory(fixture.directory.path + "/nope")
        #expect(modules.isEmpty)
        #expect(errors.count == 1)
    }
}
