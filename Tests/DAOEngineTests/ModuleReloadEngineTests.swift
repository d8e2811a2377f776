import DAODialect
import DAOEngine
import DAOValue
import Testing

/// An engine over a reloaded module set (`replacingModules`): the same
/// databases, global arguments and observer, and each table brought to a
/// changed version on its next call, in a database already open.
@Suite struct ModuleReloadEngineTests {
    let fixture = EngineFixture()

    func notes(version: String, upgrade: String = "", methods: String = "") throws -> Module {
        try fixture.module("""
            <module name="Notes" initializer="create" tableName="notes" version="\(version)" userDependent="true" globals="prefix">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              \(upgrade)
              <insert id="add" arguments="$body:string">insert into ${T} (body) values (#{body})</insert>
              <select id="count" result="int">select count(*) from ${T}</select>
              <select id="prefix" result="string">select #{prefix}</select>
              \(methods)
            </module>
            """, file: "notes.xml")
    }

    @Test func aChangedVersionUpgradesOnTheNextCallOfAnOpenDatabase() throws {
        let old = try fixture.engine([try notes(version: "1.0")])
        defer { old.shutdown() }
        try old.write("Notes", "add", #"["one"]"#, user: "ann")
        #expect(try old.value("Notes", "count", user: "ann") == .integer(1))
        _ = fixture.takeEvents()

        let new = try old.replacingModules([try notes(
            version: "1.1",
            upgrade: #"<upgrade toVersion="1.1"><step>alter table ${T} add column tag text</step></upgrade>"#,
            methods: #"<select id="tags" result="[string]">select coalesce(tag, 'none') from ${T}</select>"#)])
        // ann's database stayed open; her next call on the new set runs the upgrade first.
        #expect(old.openDatabaseCount == 1)
        #expect(try new.value("Notes", "tags", user: "ann") == .array([.string("none")]))
        #expect(fixture.takeEvents().map(\.kind) == [.shouldUpgrade])
        // The old set's calls still run, on the same (now upgraded) table.
        try old.write("Notes", "add", #"["two"]"#, user: "ann")
        #expect(try new.value("Notes", "count", user: "ann") == .integer(2))
        #expect(new.modules["Notes"]?.version == Version("1.1"))
        #expect(old.modules["Notes"]?.version == Version("1.0"))
        #expect(old.failure("Notes", "tags", user: "ann")?.code == .unknownMethod)
    }

    @Test func globalArgumentsAreKeptAcrossAReload() throws {
        let old = try fixture.engine([try notes(version: "1.0")])
        defer { old.shutdown() }
        try old.setGlobalArguments(["prefix": .string("p-")], module: "Notes")
        let new = try old.replacingModules([try notes(version: "1.0")])
        #expect(try new.value("Notes", "prefix", user: "ann") == .string("p-"))
        try new.setGlobalArguments(["prefix": .string("q-")], module: "Notes")
        #expect(try old.value("Notes", "prefix", user: "ann") == .string("q-"))
    }

    @Test func aSetThatEncryptsWithoutAKeyIsRefused() throws {
        let old = try fixture.engine([try notes(version: "1.0")])
        defer { old.shutdown() }
        let encrypting = try fixture.module("""
            <module name="Secrets" initializer="create" tableName="secrets" version="1.0">
              <crypt class="Secret" property="body"/>
              <update id="create">create table if not exists ${T} (id integer primary key, body blob)</update>
            </module>
            """, file: "secrets.xml")
        #expect(throws: EngineError.self) { try old.replacingModules([encrypting]) }
    }
}
