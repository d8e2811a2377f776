import DAODialect
import Testing

/// A template is a module whose statements name the table through `${T}` and
/// that has no fixed table; a module with neither names no table at all.
@Suite struct TemplateModuleTests {
    let fixture = Fixture()

    static let cases: [(String, String, Bool)] = [
        ("no tableName and ${T}", #"<module name="m"><select id="a">select * from ${T}</select></module>"#, true),
        ("no tableName and ${t}", #"<module name="m"><update id="a">delete from ${t}</update></module>"#, true),
        ("empty tableName and ${T}", #"<module name="m" tableName=""><select id="a">select * from ${T}</select></module>"#, true),
        ("${T} only in an upgrade", #"<module name="m" version="2"><select id="a">select 1</select><upgrade toVersion="2">alter table ${T} add x</upgrade></module>"#, true),
        ("${T} through a fragment", #"<module name="m"><sql id="from">from ${T}</sql><select id="a">select * ${from}</select></module>"#, true),
        ("${T} through a const", #"<module name="m"><const table="${T}"/><select id="a">select * from ${table}</select></module>"#, true),
        ("no tableName, no ${T}", #"<module name="m"><select id="a">select 1</select></module>"#, false),
        ("empty tableName, no ${T}", #"<module name="m" tableName=""><select id="a">select count(*) from books</select></module>"#, false),
        ("${T} only in an unused fragment", #"<module name="m"><sql id="unused">${T}</sql><select id="a">select 1</select></module>"#, false),
        ("a fixed table", #"<module name="m" tableName="books"><select id="a">select * from ${T}</select></module>"#, false),
    ]

    @Test(arguments: cases)
    func aModuleIsATemplateOnlyWhenItsStatementsNameTheTableThroughT(shape: String, xml: String, isTemplate: Bool) throws {
        let loaded = try fixture.load(xml)
        #expect(loaded.isTemplate == isTemplate, "\(shape)")
    }

    @Test func aModuleThatNamesNoTableRendersWithoutOne() throws {
        let loaded = try fixture.load(#"<module name="m"><select id="a" arguments="x">select #{x} + 1</select></module>"#)
        #expect(loaded.tableName == nil)
        #expect(try loaded.render("a", "[1]", table: nil) == [SQL("select ? + 1", [1])])
    }
}
