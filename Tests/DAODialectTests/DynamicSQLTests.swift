import DAODialect
import DAOValue
import Testing

/// The dynamic tags against the semantics of the dialect's ancestor, MyBatis.
@Suite struct DynamicSQLTests {
    let fixture = Fixture()

    func render(_ body: String, arguments names: String, _ call: String) throws -> [SQL] {
        let loaded = try fixture.load(module("<select id=\"m\" arguments=\"\(names)\">\(body)</select>"))
        return try loaded.render("m", call)
    }

    @Test func whereWithABlankBodyEmitsNothing() throws {
        #expect(try render("select * from t <where> <if true=\"a != nil\">a = #{a}</if> </where>", arguments: "a", "{}")
            == [SQL("select * from t")])
    }

    @Test func whereStripsOnlyOneLeadingAndOr() throws {
        #expect(try render("select * from t <where>AND AND a = 1</where>", arguments: "", "{}")
            == [SQL("select * from t WHERE AND a = 1")])
        #expect(try render("select * from t <where>or a = 1</where>", arguments: "", "{}")
            == [SQL("select * from t WHERE a = 1")])
        #expect(try render("select * from t <where>\n  Or\n a = 1</where>", arguments: "", "{}")
            == [SQL("select * from t WHERE a = 1")])
    }

    @Test func whereStripsAWholeWordOnly() throws {
        #expect(try render("select * from t <where>ANDROID = 1</where>", arguments: "", "{}")
            == [SQL("select * from t WHERE ANDROID = 1")])
        #expect(try render("select * from t <where>ORDER_ID = 1</where>", arguments: "", "{}")
            == [SQL("select * from t WHERE ORDER_ID = 1")])
        // As MyBatis: AND must be followed by white space to be stripped.
        #expect(try render("select * from t <where>AND(a = 1)</where>", arguments: "", "{}")
            == [SQL("select * from t WHERE AND(a = 1)")])
    }

    @Test func whereIsSeparatedFromTextWrittenAgainstIt() throws {
        #expect(try render("select * from t<where>a = 1</where>order by a", arguments: "", "{}")
            == [SQL("select * from t WHERE a = 1 order by a")])
    }

    @Test func setStripsLeadingAndTrailingCommas() throws {
        let loaded = try fixture.load(module("""
            <update id="u" arguments="a, b">update t <set>, a = #{a}, b = #{b},</set> where id = 1</update>
            """))
        #expect(try loaded.render("u", "[1, 2]") == [SQL("update t SET a = ?, b = ? where id = 1", [1, 2])])
    }

    @Test func trimOverrideListsAreSplitOnBarsAndTheFirstMatchWins() throws {
        #expect(try render(#"select * from t <trim prefix="WHERE" prefixOverrides="OR|AND|NOT">NOT a</trim>"#, arguments: "", "{}")
            == [SQL("select * from t WHERE a")])
        #expect(try render(#"select * from t <trim prefix="WHERE" prefixOverrides="and |or">and or a</trim>"#, arguments: "", "{}")
            == [SQL("select * from t WHERE or a")])
    }

    @Test func trimWithPrefixAndSuffix() throws {
        #expect(try render(#"insert into t <trim prefix="(" suffix=")" suffixOverrides=",">a, b,</trim> values (1, 2)"#,
                           arguments: "", "{}")
            == [SQL("insert into t ( a, b ) values (1, 2)")])
    }

    @Test func trimWithAnEmptyBodyEmitsNoPrefixNorSuffix() throws {
        #expect(try render(#"select 1 <trim prefix="WHERE" suffix="LIMIT 1"><if true="a != nil">a</if></trim>"#,
                           arguments: "a", "{}")
            == [SQL("select 1")])
    }

    @Test func trimThatStripsEverythingIsVoid() throws {
        let loaded = try fixture.load(module(#"<select id="m">select 1 <where onVoid="quit">AND</where></select>"#))
        #expect(try loaded.runs("m").first?.quitCount == 1)
    }

    @Test func foreachOverAnEmptyCollectionEmitsNothingNotEvenOpenAndClose() throws {
        #expect(try render(#"select * from t where id in <foreach item="i" collection="ids" open="(" separator="," close=")">#{i}</foreach>"#,
                           arguments: "ids", "[[]]")
            == [SQL("select * from t where id in")])
    }

    @Test func foreachSeparatorsAreWrittenAsGiven() throws {
        #expect(try render(#"select * from t where <foreach item="i" collection="ids" separator=" OR ">id = #{i}</foreach>"#,
                           arguments: "ids", "[[1, 2]]")
            == [SQL("select * from t where id = ? OR id = ?", [1, 2])])
    }

    @Test func nestedForeachSeesTheOuterItem() throws {
        let body = """
            select * from t where
            <foreach item="group" collection="groups" separator=" OR " open="(" close=")">
              <foreach item="id" collection="group.ids" separator=" AND ">g = #{group.name} and id = #{id}</foreach>
            </foreach>
            """
        #expect(try render(body, arguments: "groups", #"[[{"name": "a", "ids": [1, 2]}, {"name": "b", "ids": [3]}]]"#)
            == [SQL("select * from t where (g = ? and id = ? AND g = ? and id = ? OR g = ? and id = ?)", ["a", 1, "a", 2, "b", 3])])
    }

    @Test func chooseTakesTheFirstTrueWhenOnly() throws {
        let body = """
            select * from t where
            <choose><when true="a > 1">big</when><when true="a > 0">small</when></choose>
            """
        #expect(try render(body, arguments: "a", "[5]") == [SQL("select * from t where big")])
        #expect(try render(body, arguments: "a", "[1]") == [SQL("select * from t where small")])
        #expect(try render(body, arguments: "a", "[0]") == [SQL("select * from t where")])
    }

    @Test func whenAcceptsFalse() throws {
        let body = #"select <choose><when false="a">no</when><otherwise>yes</otherwise></choose>"#
        #expect(try render(body, arguments: "a", "[false]") == [SQL("select no")])
        #expect(try render(body, arguments: "a", "[true]") == [SQL("select yes")])
    }

    @Test func dynamicTagsNest() throws {
        let body = """
            select * from t
            <where>
              <choose>
                <when true="ids.count > 0">id in <foreach item="i" collection="ids" open="(" separator="," close=")">#{i}</foreach></when>
                <otherwise>1 = 0</otherwise>
              </choose>
              <if true="flag">AND flag = 1</if>
            </where>
            """
        #expect(try render(body, arguments: "ids, flag", "[[7, 8], true]")
            == [SQL("select * from t WHERE id in (?,?) AND flag = 1", [7, 8])])
        #expect(try render(body, arguments: "ids, flag", "[[], false]") == [SQL("select * from t WHERE 1 = 0")])
    }

    @Test func ignoreAfterRunsWhatWasGeneratedBeforeTheEmptyTrim() throws {
        let loaded = try fixture.load(module("""
            <delete id="d" arguments="a">delete from ${T} <where onVoid="ignoreAfter"><if true="a != nil">a = #{a}</if></where> and 1 = 1</delete>
            """))
        #expect(try loaded.render("d", "[3]") == [SQL("delete from tableDemo WHERE a = ? and 1 = 1", [3])])
        #expect(try loaded.render("d", "[]") == [SQL("delete from tableDemo")])
    }

    @Test func quitSkipsOnlyItsOwnStep() throws {
        let loaded = try fixture.load(module("""
            <update id="u" arguments="a">
              <step>update t <set onVoid="quit"><if true="a != nil">a = #{a},</if></set></step>
              <step>update log set n = n + 1</step>
            </update>
            """))
        let runs = try loaded.runs("u", "[]")
        #expect(runs.first?.statements.map(\.sql) == ["update log set n = n + 1"])
        #expect(runs.first?.quitCount == 1)
    }

    @Test func methodForeachWithAnEmptyCollectionRendersNoRun() throws {
        let loaded = try fixture.load(module(#"<insert id="i" arguments="xs" foreach="xs.x">insert into t values (#{x})</insert>"#))
        #expect(try loaded.runs("i", "[[]]").isEmpty)
    }

    @Test func statementThatDynamicTagsLeaveEmptyRunsNothing() throws {
        let loaded = try fixture.load(module(#"<insert id="i" arguments="a"><if true="a">insert into t values (1)</if></insert>"#))
        let runs = try loaded.runs("i", "[false]")
        #expect(runs.count == 1)
        #expect(runs[0].statements.isEmpty)
        #expect(runs[0].quitCount == 0)
    }

    @Test func whitespaceFoldsOutsideQuotesAndIsKeptInside() throws {
        #expect(try render("select  *\n\t from   t where a = 'x   y\n z' and b = \"c  d\"", arguments: "", "{}")
            == [SQL("select * from t where a = 'x   y\n z' and b = \"c  d\"")])
    }

    @Test func commentsAreDropped() throws {
        #expect(try render("select * -- everything\nfrom t /* the table */ where a = '--not a comment'", arguments: "", "{}")
            == [SQL("select * from t where a = '--not a comment'")])
    }

    @Test func doubledQuotesStayInsideTheLiteral() throws {
        #expect(try render("select 'it''s' as x, #{a} as y", arguments: "a", "[1]") == [SQL("select 'it''s' as x, ? as y", [1])])
    }

    @Test func staticMethodsAreRenderedAtLoadAndDynamicOnesAreNot() throws {
        let loaded = try fixture.load(module("""
            <select id="static" arguments="a">select * from ${T} where a = #{a} and b = #{a or ""}</select>
            <select id="inlines" arguments="a">select * from ${T} where a = @{a}</select>
            <select id="conditional" arguments="a">select * from ${T} <if true="a">where a</if></select>
            <update id="steps"><step>delete from ${T}</step><step>vacuum</step></update>
            """))
        #expect(loaded.method(named: "static")?.isPrecomputed == true)
        #expect(loaded.method(named: "steps")?.isPrecomputed == true)
        #expect(loaded.method(named: "inlines")?.isPrecomputed == false)
        #expect(loaded.method(named: "conditional")?.isPrecomputed == false)
    }

    @Test func anInitializerNamedWithSpacesIsTheMethodItNames() throws {
        let loaded = try fixture.load(module(#"<update id=" create ">create table t (a)</update>"#,
                                             attributes: #"name="m" tableName="t" initializer=" create " version="1""#))
        #expect(loaded.initializer == "create")
        #expect(loaded.method(named: loaded.initializer ?? "") != nil)
    }

    @Test func aModulesStorageFollowsTheStorageNameRule() throws {
        // As X-Storage does: '-' inside a name, so the current-version storage can be a module's.
        let loaded = try fixture.load(module("<select id=\"s\">select 1</select>",
                                             attributes: #"name="m" tableName="t" version="1" storage="current-version""#))
        #expect(loaded.storage == "current-version")
    }

    @Test func templateModuleTakesItsTablePerCall() throws {
        let loaded = try fixture.load(module("""
            <update id="createTable">create table if not exists ${T} (id integer)</update>
            <select id="all">select * from ${t} where '${T}' = '${T}'</select>
            """, attributes: #"name="chat" tableName="" initializer="createTable" version="1.0""#))
        #expect(loaded.isTemplate)
        #expect(loaded.method(named: "createTable")?.isPrecomputed == false)
        #expect(try loaded.render("createTable", table: "chat_42") == [SQL("create table if not exists chat_42 (id integer)")])
        #expect(try loaded.render("all", table: "chat_7") == [SQL("select * from chat_7 where 'chat_7' = 'chat_7'")])
        #expect(loaded.renderError("all")?.code == .invalidTable)
    }

    @Test func nestedFragmentsAndConstsExpand() throws {
        let loaded = try fixture.load(module("""
            <const cols="a, b" where_a="where a = #{a}"/>
            <sql id="inner">${cols}, c</sql>
            <sql id="outer">select ${inner} from ${T}</sql>
            <select id="s" arguments="a">${outer} ${where_a}</select>
            """))
        #expect(try loaded.render("s", "[1]") == [SQL("select a, b, c from tableDemo where a = ?", [1])])
    }

    @Test func fragmentsMayHoldDynamicTagsThatSeeTheMethodsArguments() throws {
        let loaded = try fixture.load(module("""
            <sql id="filter"><where><if true="a != nil">a = #{a}</if></where></sql>
            <select id="s" arguments="a">select * from ${T} ${filter}</select>
            """))
        #expect(try loaded.render("s", "[2]") == [SQL("select * from tableDemo WHERE a = ?", [2])])
        #expect(try loaded.render("s", "[]") == [SQL("select * from tableDemo")])
    }

    @Test func globalsAreVisibleAndArgumentsShadowThem() throws {
        let loaded = try fixture.load(module("""
            <select id="s" arguments="b">select * from ${T} where a = #{appVersion} and b = #{b}</select>
            <select id="shadow" arguments="appVersion">select #{appVersion}</select>
            """, attributes: #"name="demo" tableName="tableDemo" globals="appVersion""#))
        #expect(try loaded.render("s", "[2]", globals: ["appVersion": "9.1"]) == [SQL("select * from tableDemo where a = ? and b = ?", ["9.1", 2])])
        #expect(try loaded.render("s", "[2]") == [SQL("select * from tableDemo where a = ? and b = ?", [nil, 2])])
        #expect(try loaded.render("shadow", #"["mine"]"#, globals: ["appVersion": "9.1"]) == [SQL("select ?", ["mine"])])
    }

    @Test func templateExpansionHandlesEscapedQuotesAndSpacing() throws {
        let loaded = try fixture.load(module(#"""
            <update id="u" arguments="m">update t set %{ '* = coalesce(#{m.*}, \'-\')' , a,b } where 1</update>
            """#))
        #expect(try loaded.render("u", #"[{"a": 1, "b": 2}]"#)
            == [SQL("update t set a = coalesce(?, '-'), b = coalesce(?, '-') where 1", [1, 2])])
    }
}

/// The sources of bound values, for descriptions of a method.
@Suite struct BindingSourceTests {
    let fixture = Fixture()

    @Test func itemsAreTracedBackToTheirCollections() throws {
        let loaded = try fixture.load(module("""
            <insert id="add" arguments="messages, flag" foreach="messages.model">
              insert into t (id, body, flag) values (#{model.msgId}, #{model.body.text}, #{flag})
            </insert>
            <select id="in" arguments="groups, limit">
              select * from t where <foreach item="group" collection="groups" separator=" or ">
                <foreach item="id" collection="group.ids" separator=" or ">id = #{id}</foreach></foreach>
              limit #{limit}
            </select>
            """))
        let add = try #require(loaded.method(named: "add"))
        let addStatement = try #require(add.singleStatement)
        var frame = try add.frame(arguments: [[["msgId": 1]], true])
        frame.locals[add.foreach!.itemSlot] = ["msgId": 1]
        let added = try #require(try addStatement.renderWithSources(frame: frame, table: "t", method: add))
        #expect(added.sources.map(\.description) == ["messages[].msgId", "messages[].body.text", "flag"])
        let select = try #require(loaded.method(named: "in"))
        let rendered = try #require(try select.singleStatement!.renderWithSources(
            frame: select.frame(arguments: [[["ids": [1, 2]]], 5]), table: "t", method: select))
        #expect(rendered.sql == "select * from t where id = ? or id = ? limit ?")
        #expect(rendered.sources.map(\.description) == ["groups[].ids[]", "groups[].ids[]", "limit"])
    }
}

/// A fixed statement (no dynamic tag) binds the frame's slots themselves when it names each once, in order; any
/// other shape of its `#{}` resolves each binding. Both give the bindings the `#{}` name.
@Suite struct FixedStatementBindingTests {
    let fixture = Fixture()

    func bindings(_ sql: String, arguments names: String, _ call: String) throws -> [Value] {
        let loaded = try fixture.load(module("<select id=\"m\" arguments=\"\(names)\">\(sql)</select>"))
        let statements = try loaded.render("m", call)
        try #require(statements.count == 1)
        return statements[0].bindings
    }

    @Test func theSlotsInOrderAreTheBindings() throws {
        #expect(try bindings("select * from t where a = #{a} and b = #{b}", arguments: "a, b", #"[1, "x"]"#)
            == [.integer(1), .string("x")])
        #expect(try bindings("select * from t where a = #{a} and b = #{b}", arguments: "a, b", #"{"b": "x"}"#)
            == [.null, .string("x")])
        #expect(try bindings("select * from t where a = #{a}", arguments: "a", "[null]") == [.null])
    }

    @Test func anyOtherShapeResolvesEachBinding() throws {
        #expect(try bindings("select * from t where b = #{b} and a = #{a}", arguments: "a, b", #"[1, "x"]"#)
            == [.string("x"), .integer(1)])
        #expect(try bindings("select * from t where a = #{a} or a = #{a}", arguments: "a", "[7]")
            == [.integer(7), .integer(7)])
        #expect(try bindings("select * from t where a = #{a}", arguments: "a, b", #"[1, 2]"#) == [.integer(1)])
        #expect(try bindings("select * from t where a = #{a or \"\"}", arguments: "a", "[null]") == [.string("")])
        #expect(try bindings("select * from t where a = #{a.x}", arguments: "a", #"[{"x": 3}]"#) == [.integer(3)])
        #expect(try bindings("select * from t", arguments: "", "null") == [])
    }
}
