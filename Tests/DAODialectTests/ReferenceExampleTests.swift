import DAODialect
import DAOValue
import Testing

/// Every example of the reference page (dao-storage-en-2026.txt), rendered
/// from a module file on disk and compared with the exact SQL and bindings.
@Suite struct ReferenceExampleTests {
    let fixture = Fixture()

    @Test func demoModuleAsPrintedLoadsAndRendersItsThreeMethods() throws {
        // As printed: the column `index` is an SQLite keyword, which only
        // `daogate check` against SQLite (next layer) reports; the dialect loads it.
        let demo = try fixture.load("""
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
            """)
        #expect(demo.name == "Demo")
        #expect(demo.initializer == "createTable")
        #expect(demo.tableName == "demoTable")
        #expect(demo.version == Version("1.0"))
        #expect(try demo.render("createTable") == [SQL("create table if not exists demoTable (index integer primary key, content text)")])
        #expect(try demo.render("insertItem", #"["something"]"#) == [SQL("insert into demoTable (content) values(?)", ["something"])])
        #expect(try demo.render("getItem", "[1]") == [SQL("select * from demoTable where index = ?", [1])])
        #expect(demo.method(named: "getItem")?.result == .scalar(.string))
        #expect(demo.method(named: "getItem")?.isPrecomputed == true)
    }

    @Test func moduleAttributesOfTheKeywordExample() throws {
        let demo = try fixture.load(#"""
            <module name="demo" initializer="createTable" tableName="tableDemo" version="1.5" resetOnUpgrade="true" upgradeMinVersion="1.2">
              <update id="createTable">create table if not exists ${t} (id integer)</update>
            </module>
            """#)
        #expect(demo.version == Version("1.5"))
        #expect(demo.resetOnUpgrade)
        #expect(demo.upgradeMinVersion == Version("1.2"))
        #expect(try demo.render("createTable") == [SQL("create table if not exists tableDemo (id integer)")])
    }

    @Test func resetOnUpgradeAcceptsTrueAndYesInAnyCase() throws {
        for flag in ["TRUE", "YES", "true", "yes"] {
            let loaded = try fixture.load(module("<update id=\"u\">drop table ${T}</update>",
                attributes: #"name="demo" tableName="tableDemo" version="1.5" resetOnUpgrade="\#(flag)""#))
            #expect(loaded.resetOnUpgrade)
        }
        let plain = try fixture.load(module("<update id=\"u\">drop table ${T}</update>"))
        #expect(!plain.resetOnUpgrade)
    }

    @Test func constIsSubstitutedWhereReferenced() throws {
        let loaded = try fixture.load(module("""
            <const table_columns="(id, time, content, uin, read)"/>
            <insert id="add" arguments="id, time, content, uin, read">
              insert into ${T} ${table_columns} values (#{id}, #{time}, #{content}, #{uin}, #{read})
            </insert>
            """))
        #expect(try loaded.render("add", "[1, 2, \"c\", 3, true]") == [SQL(
            "insert into tableDemo (id, time, content, uin, read) values (?, ?, ?, ?, ?)", [1, 2, "c", 3, true])])
    }

    @Test func findBindsIdAndInlinesTime() throws {
        // "If the DAO object calls [daoProxy find:@1234 time:@2014], the resulting SQL statement is:
        //  select * from tableDemo where id = ? and time > 2014"
        let loaded = try fixture.load(module("""
            <map id="messageModelMap" result="MessageModel"><result property="msgId" column="id"/></map>
            <select id="find" arguments="id, time" result=":messageModelMap">
              select * from ${T} where id = #{id} and time > @{time}
            </select>
            """))
        #expect(try loaded.render("find", "[1234, 2014]") == [SQL("select * from tableDemo where id = ? and time > 2014", [1234])])
        #expect(try loaded.render("find", #"{"id": 1234, "time": 2014}"#) == [SQL("select * from tableDemo where id = ? and time > 2014", [1234])])
        #expect(loaded.method(named: "find")?.result == .mapped(mapID: "messageModelMap"))
        #expect(loaded.maps["messageModelMap"]?.className == "MessageModel")
        #expect(loaded.maps["messageModelMap"]?.propertyForColumn == ["id": "msgId"])
    }

    @Test(arguments: [
        ("int", ResultType.scalar(.int)), ("long long", .scalar(.longLong)), ("bool", .scalar(.bool)),
        ("double", .scalar(.double)), ("string", .scalar(.string)), ("binary", .scalar(.binary)),
        ("[int]", .array(.scalar(.int))), ("[long long]", .array(.scalar(.longLong))), ("[bool]", .array(.scalar(.bool))),
        ("[double]", .array(.scalar(.double))), ("[string]", .array(.scalar(.string))), ("[binary]", .array(.scalar(.binary))),
        ("[{}]", .array(.row)), ("[AType]", .array(.object(className: "AType"))), ("{}", .row),
        ("AType", .object(className: "AType")), ("[:AMap]", .array(.mapped(mapID: "AMap"))), (":AMap", .mapped(mapID: "AMap")),
    ])
    func everyResultFormParses(text: String, expected: ResultType) throws {
        let loaded = try fixture.load(module("""
            <map id="AMap" result="AType"/>
            <select id="s" result="\(text)">select * from ${T}</select>
            """))
        #expect(loaded.method(named: "s")?.result == expected)
    }

    @Test func selectWithoutResultReturnsRows() throws {
        let loaded = try fixture.load(module("<select id=\"all\">select * from ${T}</select>"))
        #expect(loaded.method(named: "all")?.result == .array(.row))
    }

    @Test func addMessagesRunsOncePerElement() throws {
        let loaded = try fixture.load(module("""
            <insert id="addMessages" arguments="messages" foreach="messages.model">
                insert or replace into ${T} (id, content, uin, read) values(#{model.msgId}, #{model.content}, #{model.uin}, #{model.read})
            </insert>
            """))
        let statements = try loaded.render("addMessages", #"""
            [[{"msgId": 1, "content": "a", "uin": 7, "read": true}, {"msgId": 2, "content": "b", "uin": 8, "read": false}]]
            """#)
        let sql = "insert or replace into tableDemo (id, content, uin, read) values(?, ?, ?, ?)"
        #expect(statements == [SQL(sql, [1, "a", 7, true]), SQL(sql, [2, "b", 8, false])])
        #expect(loaded.method(named: "addMessages")?.foreach?.item == "model")
    }

    @Test func createTableStepsAreSeparateStatements() throws {
        let loaded = try fixture.load(module("""
            <update id="createTable">
              <step>
                create table if not exists ${T} (id integer primary key, content text, uin integer, read boolean)
              </step>
              <step>
                create index if not exists uin_idx on ${T} (uin)
              </step>
            </update>
            """))
        #expect(try loaded.render("createTable") == [
            SQL("create table if not exists tableDemo (id integer primary key, content text, uin integer, read boolean)"),
            SQL("create index if not exists uin_idx on tableDemo (uin)"),
        ])
    }

    @Test func deleteRemove() throws {
        let loaded = try fixture.load(module("""
            <delete id="remove" arguments="msgId">
              delete from ${T} where msgId = #{msgId}
            </delete>
            """))
        #expect(try loaded.render("remove", "[9]") == [SQL("delete from tableDemo where msgId = ?", [9])])
        #expect(loaded.method(named: "remove")?.kind == .delete)
    }

    @Test func resumableUpgradeSteps() throws {
        let loaded = try fixture.load(module("""
            <upgrade toVersion='3.2'>
                <step resumable="true">alter table ${T} add column1 text</step>
                <step resumable="true">alter table ${T} add column2 text</step>
            </upgrade>
            """, attributes: #"name="demo" tableName="tableDemo" version="3.2""#))
        let upgrade = try #require(loaded.upgrades.first)
        #expect(upgrade.toVersion == Version("3.2"))
        let statements = try upgrade.render(table: "tableDemo")
        #expect(statements.map(\.sql) == ["alter table tableDemo add column1 text", "alter table tableDemo add column2 text"])
        #expect(statements.allSatisfy { $0.resumable })
    }

    @Test func upgradesAreKeptInVersionOrder() throws {
        let loaded = try fixture.load(module("""
            <upgrade toVersion="1.10"><step>alter table ${T} add c text</step></upgrade>
            <upgrade toVersion="1.1"><step>alter table ${T} add a text</step><step>alter table ${T} add b text</step></upgrade>
            <upgrade toVersion="1.9">alter table ${T} add z text</upgrade>
            """, attributes: #"name="demo" tableName="tableDemo" version="1.10""#))
        #expect(loaded.upgrades.map(\.toVersion.description) == ["1.1", "1.9", "1.10"])
        #expect(try loaded.upgrades[1].render(table: "tableDemo").map(\.sql) == ["alter table tableDemo add z text"])
    }

    @Test func cryptMarksPropertyWritesForEncryption() throws {
        let loaded = try fixture.load(module("""
            <crypt class="MessageModel" property="content"/>
            <insert id="insertMessage" arguments="model">
                 insert into ${T} (content) values(#{model.content})
            </insert>
            <select id="getMessage" arguments="msgId" result="MessageModel">
                 select * from ${T} where msgId = #{msgId}
            </select>
            """))
        #expect(loaded.encryptedProperties == ["MessageModel": ["content"]])
        let run = try #require(try loaded.runs("insertMessage", #"[{"content": "secret"}]"#).first)
        #expect(run.statements[0].sql == "insert into tableDemo (content) values(?)")
        #expect(run.statements[0].encrypted == [EncryptedBinding(index: 0, property: "content")])
        let read = try #require(try loaded.runs("getMessage", "[1]").first)
        #expect(read.statements[0].encrypted.isEmpty)
        #expect(loaded.method(named: "getMessage")?.result == .object(className: "MessageModel"))
    }

    @Test func ifIncludesItsTextWhenTheConditionHolds() throws {
        let loaded = try fixture.load(module("""
            <insert id="addMessages" arguments="messages, onlyRead" foreach="messages.model">
                <if true="model.read or (not onlyRead)">
                insert or replace into ${T} (msgId, content, read) values(#{model.msgId}, #{model.content}, #{model.read})
                </if>
            </insert>
            """))
        let messages = #"[{"msgId": 1, "content": "a", "read": true}, {"msgId": 2, "content": "b", "read": false}]"#
        let sql = "insert or replace into tableDemo (msgId, content, read) values(?, ?, ?)"
        #expect(try loaded.render("addMessages", "[\(messages), true]") == [SQL(sql, [1, "a", true])])
        #expect(try loaded.render("addMessages", "[\(messages), false]") == [SQL(sql, [1, "a", true]), SQL(sql, [2, "b", false])])
        #expect(try loaded.render("addMessages", "[\(messages)]") == [SQL(sql, [1, "a", true]), SQL(sql, [2, "b", false])])
    }

    @Test(arguments: [
        (#"{"title": "T", "year": 2011}"#, true),
        (#"{"title": "T", "year": 2010}"#, false),
        (#"{"year": 2020}"#, false),
        (#"{"authors": ["a", "b"]}"#, true),
        (#"{"authors": ["a"]}"#, false),
        (#"{"title": "T", "year": 2000, "authors": ["a", "b", "c"]}"#, true),
    ])
    func theComplexExpression(arguments: String, included: Bool) throws {
        let loaded = try fixture.load(module("""
            <select id="books" arguments="title, year, authors" result="[{}]">
              select * from ${T} <if true="(title != nil and year > 2010) or authors.count >= 2">where recent = 1</if>
            </select>
            """))
        let expected = included ? "select * from tableDemo where recent = 1" : "select * from tableDemo"
        #expect(try loaded.render("books", arguments).map(\.sql) == [expected])
    }

    @Test(arguments: [
        (#"{"title": "%Swift%"}"#, SQL("select * from tableDemo where state = 'ACTIVE' AND title like ?", ["%Swift%"])),
        (#"{"title": "%Swift%", "author": {"name": "Ann"}}"#, SQL("select * from tableDemo where state = 'ACTIVE' AND title like ?", ["%Swift%"])),
        (#"{"author": {"name": "Ann"}}"#, SQL("select * from tableDemo where state = 'ACTIVE' AND author_name like ?", ["Ann"])),
        (#"{"author": {}}"#, SQL("select * from tableDemo where state = 'ACTIVE' AND featured = 1")),
        ("{}", SQL("select * from tableDemo where state = 'ACTIVE' AND featured = 1")),
    ])
    func chooseRunsTheFirstMatchingWhenOrOtherwise(arguments: String, expected: SQL) throws {
        let loaded = try fixture.load(module("""
            <select id="search" arguments="title, author" result="[{}]">
              select * from ${T} where state = 'ACTIVE'
              <choose>
                <when true="title != nil">
                  AND title like #{title}
                </when>
                <when true="author != nil and author.name != nil">
                  AND author_name like #{author.name}
                </when>
                <otherwise>
                  AND featured = 1
                </otherwise>
              </choose>
            </select>
            """))
        #expect(try loaded.render("search", arguments) == [expected])
    }

    @Test func foreachInlinesItemsReversed() throws {
        let loaded = try fixture.load(module("""
            <select id="s" arguments="list" result="[{}]">
              select * from ${T} where code in
              <foreach item="iterator" collection="list" open="(" separator="," close=")" reverse="yes">
                @{iterator}
              </foreach>
            </select>
            """))
        #expect(try loaded.render("s", #"[["1", "2", "3"]]"#) == [SQL("select * from tableDemo where code in ('3','2','1')")])
    }

    @Test func prefixIteratorExampleAsPrintedIsALoadErrorThatSaysWhatToWrite() {
        let errors = fixture.errors(module("""
            <update id="proc" arguments="list, prefix">
               <foreach item="iterator" collection="list" open="(" separator="," close=")">
                   {prefix}{iterator}
               </foreach>
            </update>
            """))
        #expect(errors == [LoadError(file: "module.xml", line: 4, message:
            "'{prefix}' is not a reference: write #{prefix} to bind it, @{prefix} to inline it, or ${prefix} for a const or sql fragment")])
    }

    @Test func prefixIteratorExampleGivesTheDocumentedResult() throws {
        // "The content of list is @[@"1", @"2", @"3"] ... prefix=@"abc" ... The execution result is: (abc1,abc2,abc3)."
        let loaded = try fixture.load(module("""
            <update id="proc" arguments="list, prefix">
               <foreach item="iterator" collection="list" open="(" separator="," close=")">
                   @{prefix no ""}@{iterator no ""}
               </foreach>
            </update>
            <select id="quoted" arguments="list, prefix" result="[string]">
               select title from ${T} where title in
               <foreach item="iterator" collection="list" open="(" separator="," close=")">
                   '@{prefix}@{iterator}'
               </foreach>
            </select>
            """))
        #expect(try loaded.render("proc", #"[["1", "2", "3"], "abc"]"#).map(\.sql) == ["(abc1,abc2,abc3)"])
        #expect(try loaded.render("quoted", #"[["1", "2", "3"], "abc"]"#).map(\.sql)
            == ["select title from tableDemo where title in ('abc1','abc2','abc3')"])
    }

    @Test func foreachBuildsAnInClause() throws {
        let loaded = try fixture.load(module("""
            <select id="byIds" arguments="idList" result="[{}]">
            select * from ${T} where id in
            <foreach item="id" collection="idList" open="(" separator="," close=")">
            #{id}
            </foreach>
            </select>
            """))
        #expect(try loaded.render("byIds", "[[4, 5, 6]]") == [SQL("select * from tableDemo where id in (?,?,?)", [4, 5, 6])])
    }

    @Test(arguments: [
        (#"{"state": "ACTIVE"}"#, SQL("select * from tableDemo WHERE state = ?", ["ACTIVE"])),
        (#"{"title": "T"}"#, SQL("select * from tableDemo WHERE title like ?", ["T"])),
        (#"{"author": {"name": "Ann"}}"#, SQL("select * from tableDemo WHERE author_name like ?", ["Ann"])),
        (#"{"state": "S", "title": "T", "author": {"name": "A"}}"#,
         SQL("select * from tableDemo WHERE state = ? AND title like ? AND author_name like ?", ["S", "T", "A"])),
    ])
    func whereStripsTheLeadingAnd(arguments: String, expected: SQL) throws {
        let loaded = try fixture.load(module(Self.whereExample))
        #expect(try loaded.render("find", arguments) == [expected])
    }

    @Test func whereWithOnVoidQuitSkipsTheStatement() throws {
        let loaded = try fixture.load(module(Self.whereExample))
        let runs = try loaded.runs("find", "{}")
        #expect(runs.count == 1)
        #expect(runs[0].statements.isEmpty)
        #expect(runs[0].quitCount == 1)
    }

    static let whereExample = """
        <select id="find" arguments="state, title, author" result="[{}]">
          select * from ${T}
          <where onVoid="quit">
            <if true="state != nil">
              state = #{state}
            </if>
            <if true="title != nil">
              AND title like #{title}
            </if>
            <if true="author != nil and author.name != nil">
              AND author_name like #{author.name}
            </if>
          </where>
        </select>
        """

    @Test func setStripsTheTrailingComma() throws {
        let loaded = try fixture.load(module("""
            <update id="u" arguments="username, password, email, bio, id">
              update ${T}
              <set>
                <if false="username != nil">username=#{username},</if>
                <if false="password != nil">password=#{password},</if>
                <if true="email != nil">email=#{email},</if>
                <if true="bio != nil">bio=#{bio},</if>
              </set>
              where id = #{id}
            </update>
            """))
        #expect(try loaded.render("u", #"{"username": "u", "password": "p", "email": "e", "id": 1}"#)
            == [SQL("update tableDemo SET email=? where id = ?", ["e", 1])])
        #expect(try loaded.render("u", #"{"email": "e", "bio": "b", "id": 1}"#)
            == [SQL("update tableDemo SET username=?, password=?, email=?, bio=? where id = ?", [nil, nil, "e", "b", 1])])
        #expect(try loaded.render("u", #"{"username": "u", "password": "p", "id": 1}"#)
            == [SQL("update tableDemo where id = ?", [1])])
    }

    @Test func trimWithWhereOverridesEqualsWhere() throws {
        let loaded = try fixture.load(module("""
            <select id="t" arguments="a, b" result="[{}]">
              select * from ${T}
              <trim prefix="WHERE" prefixOverrides="AND | OR | and | or " onVoid="ignoreAfter">
                <if true="a != nil">and a = #{a}</if>
                <if true="b != nil">or b = #{b}</if>
              </trim>
              order by a
            </select>
            <update id="s" arguments="a, b">
              update ${T}
              <trim prefix="SET" suffixOverrides=",">
                <if true="a != nil">a = #{a},</if>
                <if true="b != nil">b = #{b},</if>
              </trim>
            </update>
            """))
        #expect(try loaded.render("t", #"{"a": 1}"#) == [SQL("select * from tableDemo WHERE a = ? order by a", [1])])
        #expect(try loaded.render("t", #"{"b": 2}"#) == [SQL("select * from tableDemo WHERE b = ? order by a", [2])])
        // ignoreAfter: nothing after the empty trim is rendered; what there is runs.
        #expect(try loaded.render("t", "{}") == [SQL("select * from tableDemo")])
        #expect(try loaded.render("s", #"{"a": 1, "b": 2}"#) == [SQL("update tableDemo SET a = ?, b = ?", [1, 2])])
    }

    @Test func sqlFragmentIsIncludedFromSource() throws {
        let loaded = try fixture.load(module("""
            <sql id="userColumns"> id,username,password </sql>
            <select id="selectUsers" arguments="id" result="{}">
              select ${userColumns}
              from some_table
              where id = #{id}
            </select>
            """))
        #expect(try loaded.render("selectUsers", "[3]") == [SQL("select id,username,password from some_table where id = ?", [3])])
    }

    @Test func selectUsersAsPrintedUsesAnUndeclaredArgument() {
        // As printed, selectUsers declares no arguments but binds #{id}: no caller
        // could ever pass it, so daogate refuses the module and names the fix.
        let errors = fixture.errors(module("""
            <sql id="userColumns"> id,username,password </sql>
            <select id="selectUsers" result="{}">
              select ${userColumns}
              from some_table
              where id = #{id}
            </select>
            """))
        #expect(errors.map(\.line) == [6])
        #expect(errors.first?.message == "#{id}: 'id' is not an argument of method 'selectUsers' (it has no arguments)")
    }

    @Test func tryExceptWithTemplateExpansion() throws {
        let loaded = try fixture.load(module("""
            <insert id="insertTemplates" arguments="templates" foreach="templates.model">
                <try>
                    insert into ${T} (tplId, tplVersion, time, data, tag) values(%{'#{model.*}', tplId, tplVersion, time, data, tag})
                    <except>
                        update ${T} set %{'* = #{model.*}', data, tag} where tplId = #{model.tplId} and tplVersion = #{model.tplVersion}
                    </except>
                </try>
            </insert>
            """))
        let runs = try loaded.runs("insertTemplates", #"[[{"tplId": "a", "tplVersion": 2, "time": 10, "data": "d", "tag": "t"}]]"#)
        #expect(runs.count == 1)
        #expect(runs[0].statements.map { SQL($0.sql, $0.bindings) } == [SQL(
            "insert into tableDemo (tplId, tplVersion, time, data, tag) values(?, ?, ?, ?, ?)", ["a", 2, 10, "d", "t"])])
        #expect(runs[0].except?.map { SQL($0.sql, $0.bindings) } == [SQL(
            "update tableDemo set data = ?, tag = ? where tplId = ? and tplVersion = ?", ["d", "t", "a", 2])])
    }

    @Test func atReferenceQuotesStrings() throws {
        let loaded = try fixture.load(module("""
            <select id="getMessage" arguments="id" result="[MessageModel]">
                select * from ${T} where id = @{id}
            </select>
            """))
        #expect(try loaded.render("getMessage", #"["m-1"]"#) == [SQL("select * from tableDemo where id = 'm-1'")])
        #expect(try loaded.render("getMessage", "[12]") == [SQL("select * from tableDemo where id = 12")])
        #expect(try loaded.render("getMessage", "[null]") == [SQL("select * from tableDemo where id = NULL")])
    }

    @Test func orEmptyTurnsNilIntoAnEmptyString() throws {
        let loaded = try fixture.load(module("""
            <select id="s" arguments="a, b" result="[{}]">
              select * from ${T} where a = #{a or ""} and b = @{b or ""}
            </select>
            """))
        #expect(try loaded.render("s", "[]") == [SQL("select * from tableDemo where a = ? and b = ''", [""])])
        #expect(try loaded.render("s", #"["x", "y"]"#) == [SQL("select * from tableDemo where a = ? and b = 'y'", ["x"])])
    }

    @Test func chainedAccessReadsObjectProperties() throws {
        let loaded = try fixture.load(module("""
            <select id="s" arguments="model, adict" result="[{}]">
              select * from ${T} where content = #{model.content} and aaa = @{adict.aaa} and n = #{adict.list.count}
            </select>
            """))
        #expect(try loaded.render("s", #"[{"content": "c"}, {"aaa": 5, "list": [1, 2, 3]}]"#)
            == [SQL("select * from tableDemo where content = ? and aaa = 5 and n = ?", ["c", 3])])
    }
}
