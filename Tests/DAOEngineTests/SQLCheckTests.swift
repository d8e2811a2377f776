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
        // Only the sample that takes the <if> names the missing column: it is reported, with its arguments.
        #expect(errors[2].message == #"SQLite: no such column: missing (with the sample arguments {"flag":1})"#)
        #expect(errors[3].message == "select 'writes' must only read: its statement writes")
    }

    /// The MyBatis pattern of optional columns: the all-nil sample renders
    /// `update t where id = ?`, which is that call's 400, not a broken module.
    static let patchModule = """
        <module name="Books" initializer="create" tableName="books" version="1.0">
          <update id="create">create table if not exists ${T} (id integer primary key, title text, year integer)</update>
          <update id="patch" arguments="$id, title, year">
            update ${T} <set><if true="title != nil">title = #{title},</if><if true="year != nil">year = #{year},</if></set> where id = #{id}
          </update>
        </module>
        """

    @Test func aStatementThatSomeSampleCallsPrepareIsNotBroken() throws {
        let module = try fixture.module(Self.patchModule)
        #expect(SQLCheck.check([module]) == [])
    }

    @Test func aModuleWithOptionalColumnsServes() throws {
        let engine = try fixture.engine(Self.patchModule)
        #expect(try engine.write("Books", "patch", #"{"id": 1, "title": "x"}"#).changes == 0)
        // The call that sets nothing rendered SQL of its own making: the caller's error.
        let error = engine.failure("Books", "patch", #"{"id": 1}"#)
        #expect(error?.isCallersFault == true)
    }

    @Test func aStatementNoSamplePreparesIsBrokenAndSaysWithWhichArguments() throws {
        let module = try fixture.module("""
            <module name="M" initializer="create" tableName="t" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, title text)</update>
              <update id="patch" arguments="$id, title">
                update ${T} set <if true="title != nil">title = #{title}</if> wher id = #{id}
              </update>
            </module>
            """)
        let errors = SQLCheck.check([module])
        #expect(errors.map(\.line) == [3])
        #expect(errors.first?.message.hasPrefix(#"SQLite: near "#) == true)
        #expect(errors.first?.message.hasSuffix(#"(with the sample arguments {"id":1,"title":1}; no sample call prepares)"#) == true,
                "\(errors)")
    }

    @Test func aStaticStatementsErrorNamesNoArguments() throws {
        let module = try fixture.module("""
            <module name="M" tableName="t" version="1.0">
              <select id="s" arguments="x">select * from nowhere where a = #{x}</select>
            </module>
            """)
        #expect(SQLCheck.check([module]).map(\.message) == ["SQLite: no such table: nowhere"])
    }

    @Test func stepsOnOneLineAreJudgedApart() throws {
        let module = try fixture.module("""
            <module name="M" initializer="create" tableName="t" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, a text)</update>
              <update id="two" arguments="a"><step>update ${T} set a = #{a}</step><step>updat ${T} <if true="a != nil">set a = 1</if></step></update>
            </module>
            """)
        let errors = SQLCheck.check([module])
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("no sample call prepares") == true, "\(errors)")
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
