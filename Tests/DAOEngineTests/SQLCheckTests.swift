import DAODialect
import DAOEngine
import Testing

/// `daogate check` asks SQLite about every statement.
@Suite struct SQLCheckTests {
    let fixture = EngineFixture()

    @Test func theExampleModulesPass() throws {
        #expect(SQLCheck.check(try EngineFixture.exampleModules()) == [])
    }

    @Test func theDemoAsPrintedFailsOnItsKeywordColumn() throws {
        let demo = try fixture.module("""
            <module name="Demo" initializer="createTable" tableName="demoTable" version="1.0">
            <update id="createTable">
              create table if not exists ${T} (index integer primary key, content text)
            </update>
            <insert id="insertItem" arguments="content">
              insert into ${T} (content) values(#{content})
            </insert>
            <select id="getItem" arguments="index" result="string">
              select * from ${T} where index = #{index}
            </select>
            </module>
            """, file: "demo.xml")
        let errors = SQLCheck.check([demo])
        #expect(errors.contains { $0.line == 2 && $0.message == #"SQLite: near "index": syntax error"# })
        #expect(errors.contains { $0.line == 8 && $0.message.hasPrefix("SQLite: near \"index\"") })
        #expect(errors.allSatisfy { $0.file.hasSuffix("demo.xml") })
    }

    @Test func typosAndWritingSelectsAreFoundAtTheirLines() throws {
        let module = try fixture.module("""
            <module name="M" initializer="create" tableName="t" version="1.1">
              <update id="create">create table if not exists ${T} (id integer primary key, name text)</update>
              <upgrade toVersion="1.1">
                <step>alter table ${T} add column name text</step>
                <step>creat index t_name on ${T} (name)</step>
              </upgrade>
              <select id="typo" arguments="id">select nmae from ${T} where id = #{id}</select>
              <select id="dynamic" arguments="flag">select * from ${T} <if true="flag">where missing = 1</if></select>
              <select id="writes">delete from ${T}</select>
              <insert id="fine" arguments="name">insert into ${T} (name) values (#{name})</insert>
            </module>
            """)
        let errors = SQLCheck.check([module])
        #expect(errors.map(\.line) == [5, 7, 8, 9])
        #expect(errors[0].message == #"SQLite: near "creat": syntax error"#)
        #expect(errors[1].message == "SQLite: no such column: nmae")
        #expect(errors[2].message == "SQLite: no such column: missing")
        #expect(errors[3].message == "select 'writes' must only read: its statement writes")
    }

    @Test func templateModulesAreCheckedOnASampleTable() throws {
        let module = try fixture.module("""
            <module name="Chat" initializer="create" tableName="" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              <select id="latest" arguments="$limit:int">select body from ${T} order by id desc limit #{limit}</select>
              <select id="broken">select bdy from ${T}</select>
            </module>
            """)
        #expect(SQLCheck.check([module]).map(\.line) == [4])
    }
}
