import DAODialect
@testable import DAOEngine
import Testing

private let int64 = JSONShape.integer(bits: 64)
private let int32 = JSONShape.integer(bits: 32)

/// An object shape from its properties in order.
private func object(_ properties: KeyValuePairs<String, JSONShape>, className: String? = nil) -> JSONShape {
    .object(properties: properties.map { JSONShape.Property(name: $0.key, shape: $0.value) }, className: className)
}

private func columns(_ properties: KeyValuePairs<String, JSONShape>) -> [JSONShape.Property] {
    properties.map { JSONShape.Property(name: $0.key, shape: $0.value) }
}

/// The table most focused cases use: one column per kind of declared type.
private let createTable = """
    <update id="create">
      create table if not exists ${T} (id integer primary key, title text, year integer, price real, cover blob,
        flag boolean, created date, amount numeric, note)
    </update>
    """

/// What `MethodDescriber` infers about methods' arguments and results.
@Suite struct DescriptionTests {
    let fixture = EngineFixture()

    /// The descriptions of one module's methods, its `create` initializer
    /// making the table `t` (`createTable` unless given).
    func describe(_ methods: String, create: String = createTable, extra: String = "") throws -> [String: MethodDescription] {
        let module = try fixture.module("""
            <module name="M" initializer="create" tableName="t" version="1.0" \(extra)>
            \(create)
            \(methods)
            </module>
            """)
        return try #require(MethodDescriber.describe([module])["M"])
    }

    // MARK: The example modules

    @Test func theExampleModules() throws {
        let all = MethodDescriber.describe(try EngineFixture.exampleModules())
        #expect(all.keys.sorted() == ["Books", "ChatMessages", "Demo", "Messages", "Templates"])

        let demo = try #require(all["Demo"])
        #expect(demo["insertItem"] == MethodDescription(arguments: [ArgumentShape(name: "content", shape: .string)], resultColumns: nil))
        #expect(demo["getItem"] == MethodDescription(arguments: [ArgumentShape(name: "index", shape: int64)], resultColumns: nil))
        #expect(demo["createTable"] == MethodDescription(arguments: [], resultColumns: nil))

        let messages = try #require(all["Messages"])
        let model = object(["msgId": int64, "time": int64, "content": .any, "uin": int64, "read": .boolean],
                           className: "MessageModel")
        #expect(messages["addMessages"]?.arguments == [ArgumentShape(name: "messages", shape: .array(model)),
                                                       ArgumentShape(name: "onlyRead", shape: .boolean)])
        #expect(messages["insertMessage"]?.argument("model")
            == object(["time": int64, "content": .any, "uin": int64, "read": .boolean], className: "MessageModel"))
        let stored = columns(["time": int64, "content": .any, "uin": int64, "read": .boolean, "tag": .string])
        #expect(messages["find"]?.resultColumns == columns(["msgId": int64]) + stored)
        #expect(messages["messagesOf"]?.resultColumns == columns(["msgId": int64]) + stored)
        #expect(messages["getMessage"]?.resultColumns == columns(["id": int64]) + stored)
        #expect(messages["find"]?.arguments.map(\.shape) == [int64, int64])
        #expect(messages["unreadCount"]?.resultColumns == nil)
        #expect(messages["remove"] == MethodDescription(arguments: [ArgumentShape(name: "msgId", shape: int64)], resultColumns: nil))

        let books = try #require(all["Books"])
        let bookColumns = columns(["id": int64, "title": .string, "year": int64, "author_name": .string, "state": .string,
                                   "featured": int64])
        #expect(books["findBooks"] == MethodDescription(
            arguments: [ArgumentShape(name: "state", shape: .string), ArgumentShape(name: "title", shape: .string),
                        ArgumentShape(name: "author", shape: object(["name": .string]))],
            resultColumns: bookColumns))
        #expect(books["searchActive"]?.argument("author") == object(["name": .string]))
        #expect(books["byIds"] == MethodDescription(arguments: [ArgumentShape(name: "idList", shape: .array(int64))],
                                                    resultColumns: bookColumns, nonEmptyCollections: ["idList"]))
        #expect(books["byCodes"] == MethodDescription(arguments: [ArgumentShape(name: "list", shape: .array(.string)),
                                                                  ArgumentShape(name: "prefix", shape: .string)],
                                                      resultColumns: nil, nonEmptyCollections: ["list"]))
        #expect(books["addBook"]?.arguments.map(\.shape) == [.string, int32, .string, .string, .boolean, .string])
        #expect(books["updateAuthor"]?.arguments.map(\.shape) == [int64, .string, .string, .string, .string])
        #expect(books["selectBook"]?.resultColumns
            == bookColumns + columns(["username": .string, "email": .string, "bio": .string]))
        // Sorted by raw text: renderings with it as 1 and as rowid give the same columns, so they do not depend on it.
        #expect(books["sorted"]?.resultColumns == bookColumns)
        #expect(books["titlesFrom"]?.resultColumns == nil)

        let templates = try #require(all["Templates"])
        #expect(templates["insertTemplates"]?.arguments == [ArgumentShape(name: "templates", shape: .array(object(
            ["tplId": .string, "tplVersion": int64, "time": int64, "data": .string, "tag": .string])))])
        #expect(templates["getTemplate"]?.resultColumns == columns(
            ["rowid": int64, "tplId": .string, "tplVersion": int64, "time": int64, "data": .string, "tag": .string]))

        let chat = try #require(all["ChatMessages"])
        #expect(chat["send"]?.arguments == [ArgumentShape(name: "sender", shape: .string), ArgumentShape(name: "body", shape: .string)])
        #expect(chat["latest"] == MethodDescription(
            arguments: [ArgumentShape(name: "limit", shape: int32)],
            resultColumns: columns(["id": int64, "sender": .string, "body": .string, "sentAt": int64])))
        #expect(chat["clear"] == MethodDescription(arguments: [], resultColumns: nil))
    }

    // MARK: Arguments from columns

    @Test func declaredTypesOfColumnsFollowSQLiteAffinity() throws {
        let methods = try describe("""
            <insert id="add" arguments="a, b, c, d, e, f, g, h">
              insert into ${T} (title, year, price, cover, flag, created, amount, note)
              values (#{a}, #{b}, #{c}, #{d}, #{e}, #{f}, #{g}, #{h})
            </insert>
            """)
        #expect(methods["add"]?.arguments.map(\.shape) == [.string, int64, .number, .any, .boolean, .any, .number, .any])
    }

    @Test(arguments: [
        ("INTEGER", int64), ("bigint", int64), ("UNSIGNED BIG INT", int64), ("point", int64),
        ("varchar(20)", .string), ("NATIVE CHARACTER(70)", .string), ("clob", .string), ("Text", .string),
        ("blob", .any), ("", .any), ("real", .number), ("double precision", .number), ("FLOAT", .number),
        ("boolean", .boolean), ("numeric", .number), ("decimal(10,5)", .number), ("date", .any), ("DATETIME", .any), ("timestamp", .any),
        ("money", .number),
    ] as [(String, JSONShape)])
    func declaredTypeToShape(type: String, shape: JSONShape) {
        #expect(JSONShape(declaredType: type) == shape)
    }

    @Test func resultsReadBooleanColumnsAsIntegersAndExpressionsAsAnything() {
        #expect(JSONShape(resultDeclaredType: "boolean") == .boolean)
        #expect(JSONShape(resultDeclaredType: "text") == .string)
        #expect(JSONShape(resultDeclaredType: nil) == .any)
    }

    @Test func everyComparisonPatternFindsItsColumn() throws {
        let methods = try describe("""
            <select id="compare" arguments="a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q">
              select * from ${T} where title = #{a} and year == #{b} and price != #{c} and amount &lt;&gt; #{d}
                and year &lt; #{e} and price &gt; #{f} and year &lt;= #{g} and year &gt;= #{h} and title like #{i}
                and title not like #{j} and title glob #{k} and flag is #{l} and flag is not #{m}
                and year in (#{n}, 3, #{n}) and price not in (#{o}) and year between #{p} and #{q}
            </select>
            <select id="reversed" arguments="a, b, c, d">
              select * from ${T} t where #{a} = t.title and #{b} like title and #{c} is not "year" and #{d} &gt; t.price
            </select>
            <select id="patterns" arguments="a, b, c">
              select * from ${T} where year like #{a} and #{b} not glob title and price glob #{c}
            </select>
            <select id="page" arguments="size, skip">select * from ${T} limit #{size} offset #{skip}</select>
            <select id="page2" arguments="skip, size">select * from ${T} limit #{skip}, #{size}</select>
            """)
        #expect(methods["compare"]?.arguments.map(\.shape)
            == [.string, int64, .number, .number, int64, .number, int64, int64, .string, .string, .string, .boolean, .boolean,
                int64, .number, int64, int64])
        #expect(methods["reversed"]?.arguments.map(\.shape) == [.string, .string, int64, .number])
        // A pattern is text: only a text column says more than that.
        #expect(methods["patterns"]?.arguments.map(\.shape) == [.any, .string, .any])
        #expect(methods["page"]?.arguments.map(\.shape) == [int64, int64])
        #expect(methods["page2"]?.arguments.map(\.shape) == [int64, int64])
    }

    @Test func updatesSetTheirColumns() throws {
        let methods = try describe("""
            <update id="updateAuthor" arguments="$id, title, year, price, flag">
              update ${T}
              <set>
                <if false="title != nil">title=#{title},</if>
                <if true="year != nil">year = #{year},</if>
                <if true="price != nil">price = coalesce(#{price}, 0),</if>
                <if true="flag != nil">flag=#{flag},</if>
              </set>
              where id = #{id}
            </update>
            """)
        #expect(methods["updateAuthor"]?.arguments.map(\.shape) == [int64, .string, int64, .any, .boolean])
    }

    @Test func insertsMapEachValueToItsColumn() throws {
        let methods = try describe("""
            <insert id="rows" arguments="a, b, c, d">
              insert or replace into ${T} (title, "year") values (coalesce(#{a}, 'x'), #{b}), ((#{c}), abs(#{d}))
            </insert>
            <insert id="positional" arguments="id, title, year, price, cover, flag, created, amount, note">
              insert into ${T} values (#{id}, #{title}, #{year}, #{price}, #{cover}, #{flag}, #{created}, #{amount}, #{note})
            </insert>
            <insert id="upsert" arguments="title, year">
              insert into ${T} (title) values (#{title}) on conflict (id) do update set year = #{year}
            </insert>
            <insert id="copy" arguments="year, limit">
              insert into ${T} (title) select title from ${T} where year = #{year} limit #{limit}
            </insert>
            """)
        #expect(methods["rows"]?.arguments.map(\.shape) == [.string, int64, .string, .any])
        #expect(methods["positional"]?.arguments.map(\.shape)
            == [int64, .string, int64, .number, .any, .boolean, .any, .number, .any])
        #expect(methods["upsert"]?.arguments.map(\.shape) == [.string, int64])
        #expect(methods["copy"]?.arguments.map(\.shape) == [int64, int64])
    }

    @Test func valuesInFunctionsAndExpressionsMeetNoColumn() throws {
        let methods = try describe("""
            <select id="f" arguments="a, b, c, d, e, f, g, h, i" result="[{}]">
              select #{a} as v, lower(#{b}) as w from ${T}
              where lower(title) = #{c} and title = upper(#{d}) and year + 1 = #{e} and year = #{f} + 1
                and #{g} = year * 2 and title collate nocase = #{h} and id in (select value from json_each(#{i}))
            </select>
            """)
        #expect(methods["f"]?.arguments.map(\.shape) == Array(repeating: .any, count: 9))
    }

    @Test func aColumnIsLookedUpInTheTablesItsQueryReads() throws {
        let methods = try describe("""
            <select id="joined" arguments="year, text, title" result="[{}]">
              select n.title, p.born from ${T} n join people as p on p.pid = n.id
              where p.born = #{year} and note = #{text} and n.title = #{title}
            </select>
            <select id="inner" arguments="who, year" result="[{}]">
              select title from ${T} where id in (select pid from people where name = #{who}) and year = #{year}
            </select>
            <select id="subquery" arguments="year, who" result="[{}]">
              select * from (select * from people) where born &gt; #{year} and name = #{who}
            </select>
            <select id="unknownAlias" arguments="year" result="[{}]">
              select * from (select * from people) as p where p.born = #{year}
            </select>
            """, create: """
            <update id="create">
              <step>create table if not exists ${T} (id integer primary key, title text, year integer, note)</step>
              <step>create table if not exists people (pid integer primary key, name text, born integer)</step>
              <step>create table if not exists pets (pid integer, name integer)</step>
            </update>
            """)
        #expect(methods["joined"]?.arguments.map(\.shape) == [int64, .any, .string])
        #expect(methods["inner"]?.arguments.map(\.shape) == [.string, int64])
        // born is in people alone; name is in people and pets.
        #expect(methods["subquery"]?.arguments.map(\.shape) == [int64, .any])
        #expect(methods["unknownAlias"]?.arguments.map(\.shape) == [.any])
    }

    @Test func aColumnFoundInAnotherModulesTable() throws {
        let people = try fixture.module("""
            <module name="People" initializer="create" tableName="people" version="1.0">
              <update id="create">create table if not exists ${T} (pid integer primary key, name text, born integer)</update>
            </module>
            """, file: "people.xml")
        let notes = try fixture.module("""
            <module name="Notes" initializer="create" tableName="notes" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              <select id="byAuthor" arguments="who" result="[{}]">
                select * from (select body, name from ${T} join people on pid = id) where name = #{who}
              </select>
            </module>
            """, file: "notes.xml")
        let all = MethodDescriber.describe([people, notes])
        #expect(all["Notes"]?["byAuthor"] == MethodDescription(arguments: [ArgumentShape(name: "who", shape: .string)],
                                                               resultColumns: columns(["body": .string, "name": .string])))
    }

    @Test func usesThatDisagreeGiveAny() throws {
        let methods = try describe("""
            <select id="clash" arguments="x, n, v, a, b" result="[{}]">
              select * from ${T} where (title = #{x} or year = #{x}) and year = #{n} and (year = #{v} or price = #{v})
                and title = #{a} and year = #{a.p} and cover = #{b} and title = #{b}
              limit #{n}
            </select>
            """)
        #expect(methods["clash"]?.arguments.map(\.shape) == [.any, int64, .number, .any, .any])
    }

    @Test func argumentsOnlyInConditionsOrInlinedAreAny() throws {
        let methods = try describe("""
            <select id="recent" arguments="year, flag, col, since, title" result="[string]">
              select title from ${T}
              <where>
                <if true="year &gt; 2010 and flag">created &gt; 0</if>
                <if true="since != nil">and year &gt; #{since}</if>
                <if true="col != nil">and @{col no ""} = #{title}</if>
              </where>
              order by @{col no ""}
            </select>
            """)
        #expect(methods["recent"]?.arguments.map(\.shape) == [.any, .any, .any, int64, .any])
    }

    @Test func declaredTypesWin() throws {
        let methods = try describe("""
            <select id="typed" arguments="n:string, j:json, o:{}, list:[int], m:Model, ms:[[Model]], b:binary, d:double"
                    result="[{}]">
              select * from ${T} where year = #{n} and year = #{j} and year = #{o.p} and title = #{b} and title = #{d}
                and year in <foreach collection="list" item="i" open="(" separator="," close=")">#{i}</foreach>
            </select>
            """)
        #expect(methods["typed"]?.arguments.map(\.shape) == [
            .string, .any, object(["p": int64]), .array(int32), .object(properties: [], className: "Model"),
            .array(.array(.object(properties: [], className: "Model"))), .binary, .number,
        ])
    }

    @Test func nestedForeachPathsMakeArraysOfObjects() throws {
        let methods = try describe("""
            <select id="grouped" arguments="groups, tags" result="[{}]">
              select * from ${T} where
              <foreach collection="groups" item="g" separator=" or ">
                (title = #{g.name} and id in
                  <foreach collection="g.ids" item="id" open="(" separator="," close=")">#{id}</foreach>
                  and <foreach collection="g.years" item="y" separator=" and ">year &lt;&gt; #{y.value}</foreach>)
              </foreach>
              <foreach collection="tags" item="tag" open=" and note in (" separator="," close=")">'@{tag}'</foreach>
            </select>
            <insert id="addAll" arguments="rows" foreach="rows.row">
              insert into ${T} (title, year) values (#{row.title}, #{row.year})
            </insert>
            <update id="touch" arguments="rows" foreach="rows.row">update ${T} set flag = 1</update>
            <update id="anyRows" arguments="rows:json" foreach="rows.row">update ${T} set flag = #{row}</update>
            """)
        #expect(methods["grouped"]?.arguments == [
            ArgumentShape(name: "groups", shape: .array(object(["name": .string, "ids": .array(int64),
                                                                "years": .array(object(["value": int64]))]))),
            ArgumentShape(name: "tags", shape: .array(.any)),
        ])
        #expect(methods["addAll"]?.argument("rows") == .array(object(["title": .string, "year": int64])))
        #expect(methods["touch"]?.argument("rows") == .array(.any))
        #expect(methods["anyRows"]?.argument("rows") == .array(.boolean))
    }

    @Test func tryAndExceptBothShapeTheArguments() throws {
        let methods = try describe("""
            <insert id="upsert" arguments="$items:[{}]" foreach="items.item">
              <try>
                insert into ${T} (title, year) values (#{item.title}, #{item.year})
                <except>update ${T} set flag = #{item.flag} where title = #{item.title}</except>
              </try>
            </insert>
            <update id="steps" arguments="a, b">
              <step>update ${T} set title = #{a}</step>
              <step resumable="true">update ${T} set price = #{b}</step>
            </update>
            """)
        #expect(methods["upsert"]?.argument("items") == .array(object(["title": .string, "year": int64, "flag": .boolean])))
        #expect(methods["steps"]?.arguments.map(\.shape) == [.string, .number])
    }

    @Test func everyChooseBranchIsRead() throws {
        let methods = try describe("""
            <select id="pick" arguments="mode, a, b, c" result="[{}]">
              select * from ${T} where id = 1
              <choose>
                <when true="mode == 1">and title = #{a}</when>
                <when true="mode == 2">and year = #{b}</when>
                <otherwise>and price = #{c}</otherwise>
              </choose>
            </select>
            """)
        #expect(methods["pick"]?.arguments.map(\.shape) == [.any, .string, int64, .number])
    }

    @Test func globalArgumentsAreNotArguments() throws {
        let methods = try describe("""
            <select id="mine" arguments="year" result="[{}]">select * from ${T} where title = #{owner} and year = #{year}</select>
            """, extra: #"globals="owner""#)
        #expect(methods["mine"]?.arguments == [ArgumentShape(name: "year", shape: int64)])
    }

    @Test func countOfAValueSaysNothingAboutIt() throws {
        let methods = try describe("""
            <select id="counted" arguments="tags, o" result="[{}]">
              select * from ${T} where year = #{tags.count} and year = #{o.count}
            </select>
            """)
        #expect(methods["counted"]?.arguments.map(\.shape) == [.any, .any])
    }

    // MARK: Results

    @Test func resultColumnsOfExpressionsAndRepeatedNames() throws {
        let methods = try describe("""
            <select id="stats" result="{}">select count(*) as n, max(year) as latest, title, year as title from ${T}</select>
            <select id="plain">select id, flag from ${T}</select>
            <select id="scalar" result="[string]">select title from ${T}</select>
            <select id="broken" result="[{}]">select nope from ${T}</select>
            <delete id="remove" arguments="id">delete from ${T} where id = #{id}</delete>
            """)
        #expect(methods["stats"]?.resultColumns == columns(["n": .any, "latest": .any, "title": int64]))
        #expect(methods["plain"]?.resultColumns == columns(["id": int64, "flag": .boolean]))
        #expect(methods["scalar"]?.resultColumns == nil)
        #expect(methods["broken"] == MethodDescription(arguments: [], resultColumns: nil))
        #expect(methods["remove"]?.resultColumns == nil)
    }

    @Test func resultColumnsThatDependOnInlinedValuesAreUnknown() throws {
        let methods = try describe("""
            <select id="pick" arguments="$col:string" result="[{}]">select @{col no ""} from ${T}</select>
            <select id="after" arguments="$year:long long" result="[{}]">select title from ${T} where year &gt; @{year}</select>
            <select id="dynamic" arguments="wide" result="[{}]">select id<if true="wide">, title</if> from ${T}</select>
            """)
        #expect(methods["pick"]?.resultColumns == nil)
        #expect(methods["after"]?.resultColumns == columns(["title": .string]))
        #expect(methods["dynamic"]?.resultColumns == columns(["id": int64, "title": .string]))
    }

    @Test func encryptedPropertiesReadAsWhatWasWritten() throws {
        let methods = try describe("""
            <map id="secretMap" result="Secret"><result property="code" column="pin"/></map>
            <crypt class="Secret" property="pin"/>
            <crypt class="Secret" property="code"/>
            <crypt class="Secret" property="note"/>
            <update id="create">create table if not exists ${T} (id integer primary key, pin integer, note blob, label text)</update>
            <insert id="add" arguments="s:Secret">insert into ${T} (pin, label) values (#{s.pin}, #{s.label})</insert>
            <select id="get" arguments="$id" result="Secret">select * from ${T} where id = #{id}</select>
            <select id="mapped" arguments="$id" result="[:secretMap]">select * from ${T} where id = #{id}</select>
            <select id="raw" arguments="$id" result="{}">select * from ${T} where id = #{id}</select>
            """, create: "")
        #expect(methods["add"]?.argument("s") == object(["pin": int64, "label": .string], className: "Secret"))
        #expect(methods["get"]?.resultColumns == columns(["id": int64, "pin": int64, "note": .any, "label": .string]))
        // `code` is decrypted, but nothing encrypts a `code` property.
        #expect(methods["mapped"]?.resultColumns == columns(["id": int64, "code": .any, "note": .any, "label": .string]))
        // Not decrypted: ciphertexts.
        #expect(methods["raw"]?.resultColumns == columns(["id": int64, "pin": .any, "note": .any, "label": .string]))
    }

    // MARK: Template modules

    @Test func eachTemplateModuleHasItsOwnTable() throws {
        let texts = try fixture.module("""
            <module name="Texts" initializer="create" tableName="" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              <insert id="send" arguments="body">insert into ${T} (body) values (#{body})</insert>
            </module>
            """, file: "texts.xml")
        let numbers = try fixture.module("""
            <module name="Numbers" initializer="create" tableName="" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, body integer, extra real)</update>
              <insert id="send" arguments="body, extra">insert into ${T} (body, extra) values (#{body}, #{extra})</insert>
              <select id="all" result="[{}]">select * from ${T}</select>
            </module>
            """, file: "numbers.xml")
        let all = MethodDescriber.describe([texts, numbers])
        #expect(all["Texts"]?["send"]?.argument("body") == .string)
        #expect(all["Numbers"]?["send"]?.arguments.map(\.shape) == [int64, .number])
        #expect(all["Numbers"]?["all"]?.resultColumns == columns(["id": int64, "body": int64, "extra": .number]))
        #expect(SQLCheck.check([texts, numbers]) == [])
    }

    @Test func collectionsThatSQLiteNeedsNonEmpty() throws {
        let methods = try describe("""
            <select id="byIds" arguments="ids" result="[{}]">
              select * from ${T} where id in <foreach item="id" collection="ids" open="(" separator="," close=")">#{id}</foreach>
            </select>
            <select id="orTitles" arguments="titles" result="[{}]">
              select * from ${T} where 0 <foreach item="t" collection="titles">or title = #{t}</foreach>
            </select>
            <select id="guarded" arguments="ids" result="[{}]">
              select * from ${T}
              <if true="ids.count > 0">where id in <foreach item="id" collection="ids" open="(" separator="," close=")">#{id}</foreach></if>
            </select>
            <insert id="each" arguments="rows" foreach="rows.row">insert into ${T} (title) values (#{row.title})</insert>
            """)
        #expect(methods["byIds"]?.nonEmptyCollections == ["ids"])
        #expect(methods["orTitles"]?.nonEmptyCollections == [])
        #expect(methods["guarded"]?.nonEmptyCollections == [])
        #expect(methods["each"]?.nonEmptyCollections == [])
    }

    @Test func theEngineRefusesWhatTheDescriptionRefuses() throws {
        let engine = try fixture.engine("""
            <module name="M" initializer="create" tableName="t" version="1.0">
            \(createTable)
            <select id="byIds" arguments="ids" result="[{}]">
              select * from ${T} where id in <foreach item="id" collection="ids" open="(" separator="," close=")">#{id}</foreach>
            </select>
            <select id="maybe" arguments="ids" result="[{}]">
              select * from ${T} where id in
              <if true="ids != nil"><foreach item="id" collection="ids" open="(" separator="," close=")">#{id}</foreach></if>
            </select>
            <insert id="add" arguments="$row:Row">insert into ${T} (title, year) values (#{row.title}, #{row.year})</insert>
            <insert id="addAll" arguments="$rows" foreach="rows.row">insert into ${T} (title, year) values (#{row.title}, #{row.year})</insert>
            </module>
            """)
        let empty = engine.failure("M", "byIds", #"{"ids": []}"#)
        #expect(empty?.code == .invalidArguments)
        #expect(empty?.message == "argument 'ids' must not be empty: its statement needs at least one element")
        #expect(try engine.value("M", "byIds", #"{"ids": [1.0]}"#) == [])
        // SQLite refuses `in ()` that the call shaped: the caller's fault, not the server's.
        let shaped = engine.failure("M", "maybe", #"{"ids": null}"#)
        #expect(shaped?.isCallersFault == true)
        #expect(shaped?.message.contains("failed") == true)
        // A declared class's properties are checked against the columns they meet.
        let wrong = engine.failure("M", "add", #"{"row": {"title": "T", "year": {}}}"#)
        #expect(wrong?.isCallersFault == true)
        #expect(wrong?.message == "argument 'row.year' must be an integer, not an object")
        // Deep in an array of objects, the error names the element and the property.
        let deep = engine.failure("M", "addAll", #"{"rows": [{"title": "A", "year": 1}, {"title": "B", "year": 2.5}]}"#)
        #expect(deep?.message == "argument 'rows[1].year' must be an integer, not a number")
        #expect(try engine.value("M", "byIds", #"{"ids": [1, 2]}"#) == [])
        #expect(try engine.write("M", "add", #"{"row": {"title": "T", "year": 1999.0}}"#).changes == 1)
        #expect(try engine.value("M", "byIds", #"{"ids": [1]}"#) == [["id": 1, "title": "T", "year": 1999, "price": nil,
                                                                        "cover": nil, "flag": nil, "created": nil, "amount": nil, "note": nil]])
    }

    // MARK: Outlines

    @Test func outlinesWriteEveryBranchOnceWithoutValues() throws {
        let books = try #require(try EngineFixture.exampleModules().first { $0.name == "Books" })
        func outlines(_ name: String) throws -> [StatementOutline] {
            let method = try #require(books.method(named: name))
            return try #require(method.singleStatement).outlines(table: "books", method: method)
        }
        let select = "select id, title, year, author_name, state, featured from books where"
        let choose = try outlines("searchActive")
        #expect(choose.map(\.sql) == ["\(select) state = 'ACTIVE' AND title like ?", "\(select) state = 'ACTIVE' AND author_name like ?",
                                      "\(select) state = 'ACTIVE' AND featured = 1"])
        #expect(choose.map { $0.sources.map(\.description) } == [["title"], ["author.name"], []])
        let foreach = try #require(try outlines("byIds").first)
        #expect(foreach.sql == "\(select) id in ( ? )")
        #expect(foreach.sources.map(\.description) == ["idList[]"])
        #expect(try outlines("byCodes").map(\.elements) == [[BindingSource(argument: "list", steps: [.element])]])
        #expect(try outlines("updateAuthor").map(\.sql) == ["update books SET username=?, password=?, email=?, bio=? where id = ?"])
    }

    // MARK: The matcher

    /// Each `?`'s target, written `column` (`column!` when written, `@table`
    /// for a qualified one), `#i/n` for a table's i-th of n columns, `int`, or `-`.
    func targets(_ sql: String) -> [String] {
        SQLColumnMatcher(sql: sql).targets.map { target in
            switch target {
            case .column(let reference)?:
                reference.name + (reference.written ? "!" : "")
                    + (reference.scopes.count == 1 && reference.scopes[0].count == 1 ? "@" + reference.scopes[0][0] : "")
            case .tableColumn(_, let index, let count)?: "#\(index)/\(count)"
            case .integer?: "int"
            case nil: "-"
            }
        }
    }

    @Test(arguments: [
        ("insert into t (a, b) values (?, coalesce(?, 0))", ["a!@t", "b!@t"]),
        ("insert into t (a, b, c, d) values (ifnull(max(?, 1), 0), nullif(?, ''), nullif('', ?), json(?))", ["a!@t", "b!@t", "-", "-"]),
        ("insert into t (a, b, c) values (? || 'x', (?), (select x from u where y = ?))", ["-", "b!@t", "y"]),
        (#"insert or replace into "t" (a, "b c") values (?, ?), (?, ?)"#, ["a!@t", "b c!@t", "a!@t", "b c!@t"]),
        ("insert into main.t values (?, (?)), (lower(?), ?)", ["#0/2", "#1/2", "-", "#1/2"]),
        ("insert into t (a) values (?) on conflict (a) do update set b = ? where c = ?", ["a!@t", "b!@t", "c@t"]),
        ("update t set a = ?, b == ? where c = ?", ["a!@t", "b!@t", "c@t"]),
        ("update or replace t set a = ?", ["a!@t"]),
        ("delete from t where a = ? or ? <> b", ["a@t", "b@t"]),
        ("select * from t where a like ? escape '!' and b not glob ? and c is not ? and d not in (?, ?)", ["a@t", "b@t", "c@t", "d@t", "d@t"]),
        ("select * from t where a between ? and ? and b not between ? and ?", ["a@t", "a@t", "b@t", "b@t"]),
        (#"select * from t x where x.a = ? and main.t.b = ? and ? = x."c""#, ["a@t", "b@t", "c@t"]),
        ("select * from t limit ? offset ?", ["int", "int"]),
        ("select * from t limit ?, ?", ["int", "int"]),
        ("select * from t limit ? * 2", ["-"]),
        ("select ?, max(?) from t where a = ? || 'x' and case when a then b end = ? and 1 = ? and ? = a and ? is null",
         ["-", "-", "-", "-", "-", "a@t", "-"]),
        ("select '?', \"we?ird\" from t -- ?\n where /* ? */ \"x\"\"y\" = ? and b = x'3F' and [c d] = ? and `e` = ?",
         ["x\"y@t", "c d@t", "e@t"]),
        ("select * from a join b y on y.id = a.id where y.n = ? and z.n = ?", ["n@b", "n@z"]),
        ("insert into t (a) select b from u where c = ?", ["c@u"]),
        ("update t set a = (select max(b) from u where c = ?)", ["c"]),
    ] as [(String, [String])])
    func matcherPatterns(sql: String, expected: [String]) {
        #expect(targets(sql) == expected)
    }

    @Test func unqualifiedColumnsAreLookedForInnermostFirst() {
        let matcher = SQLColumnMatcher(sql: "select * from a, b where n = ? and exists (select 1 from c join d on 1 where m = ?)")
        #expect(matcher.targets == [
            .column(.init(name: "n", scopes: [["a", "b"]], written: false)),
            .column(.init(name: "m", scopes: [["c", "d"], ["a", "b"]], written: false)),
        ])
    }

    @Test func tokens() {
        let tokens = SQLToken.tokenize("select 1e-5, 0x1F, .5, X'00', 'it''s', \"a\"\"b\", [c], `d`, ?, ?2, :n, a->>'$', x>=-1 -- c\n/* d */")
        #expect(tokens.map(\.text) == ["select", "1e-5", ",", "0x1F", ",", ".5", ",", "X'00'", ",", "'it''s'", ",", "a\"b", ",", "c", ",",
                                       "d", ",", "?", ",", "?2", ",", ":n", ",", "a", "->>", "'$'", ",", "x", ">=", "-", "1"])
        #expect(tokens.filter { $0.kind == .placeholder }.count == 3)
        #expect(tokens.filter { $0.kind == .identifier }.map(\.text) == ["a\"b", "c", "d"])
    }
}
