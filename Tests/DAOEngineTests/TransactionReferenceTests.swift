import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Testing

/// Transactions whose calls use earlier results (`{"$result": pointer}`), `last_insert_rowid()` inside a
/// transaction, and the built-in `userId` global: on real SQLite files.
@Suite struct TransactionReferenceTests {
    let fixture = EngineFixture()

    static let blog = """
        <module name="Blog" initializer="create" version="1.0">
          <update id="create">
            <step>create table if not exists posts (id integer primary key, title text not null)</step>
            <step>create table if not exists comments (id integer primary key, post integer not null references posts(id), body text)</step>
          </update>
          <insert id="addPost" arguments="$title:string">insert into posts (title) values (#{title})</insert>
          <insert id="addComment" arguments="$post:long long, body:string">insert into comments (post, body) values (#{post}, #{body})</insert>
          <insert id="addCommentToLast" arguments="body">insert into comments (post, body) values (last_insert_rowid(), #{body})</insert>
          <insert id="addComments" arguments="$items" foreach="items.item">insert into comments (post, body) values (#{item.post}, #{item.body})</insert>
          <update id="retitle" arguments="$id:long long, $title:string">update posts set title = #{title} where id = #{id}</update>
          <select id="post" arguments="$id:long long" result="{}">select id, title from posts where id = #{id}</select>
          <select id="comments" arguments="$post:long long" result="[{}]">select post, body from comments where post = #{post} order by id</select>
          <select id="titles" result="[string]">select title from posts order by id</select>
          <select id="commentCount" result="int">select count(*) from comments</select>
        </module>
        """

    func engine() throws -> Engine { try fixture.engine(Self.blog) }

    func calls(_ json: String) throws -> [Call] {
        guard case .array(let items) = try Value(parsingJSON: json) else { throw EngineError(.invalidArguments, "not an array") }
        return items.map { item in
            Call(module: item[member: "module"]?.stringValue ?? "Blog", method: item[member: "method"]!.stringValue!,
                 arguments: item[member: "arguments"] ?? .null)
        }
    }

    func failure(_ engine: Engine, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> EngineError? {
        let calls = try calls(json)
        do {
            let results = try engine.transaction(calls)
            Issue.record("the transaction succeeded: \(results)", sourceLocation: sourceLocation)
        } catch {
            return error
        }
        return nil
    }

    @Test func aParentsRowidReachesItsChildrenByReference() throws {
        let engine = try engine()
        _ = try engine.write("Blog", "addPost", #"["first"]"#)
        let results = try engine.transaction(try calls("""
            [{"method": "addPost", "arguments": {"title": "second"}},
             {"method": "addComment", "arguments": {"post": {"$result": "/0/lastInsertRowId"}, "body": "a"}},
             {"method": "addComment", "arguments": [{"$result": "/0/lastInsertRowId"}, "b"]},
             {"method": "post", "arguments": {"id": {"$result": "/0/lastInsertRowId"}}},
             {"method": "retitle", "arguments": {"id": {"$result": "/3/result/id"}, "title": "renamed"}},
             {"method": "addComments", "arguments": {"items": [{"post": {"$result": "/3/result/id"}, "body": {"$result": "/3/result/title"}}]}}]
            """))
        #expect(results[0] == .write(WriteResult(changes: 1, lastInsertRowID: 2)))
        #expect(results[1] == .write(WriteResult(changes: 1, lastInsertRowID: 1)))
        #expect(results[2] == .write(WriteResult(changes: 1, lastInsertRowID: 2)))
        #expect(results[3] == .value(["id": 2, "title": "second"]))
        #expect(results[4] == .write(WriteResult(changes: 1, lastInsertRowID: 0)))
        #expect(results[5] == .write(WriteResult(changes: 1, lastInsertRowID: 3)))
        #expect(try engine.value("Blog", "comments", "[2]") == [["post": 2, "body": "a"], ["post": 2, "body": "b"], ["post": 2, "body": "second"]])
        #expect(try engine.value("Blog", "titles") == ["first", "renamed"])
    }

    @Test func lastInsertRowidInSQLSeesThePreviousInsertOfTheTransaction() throws {
        let engine = try engine()
        _ = try engine.write("Blog", "addPost", #"["first"]"#)
        let results = try engine.transaction(try calls("""
            [{"method": "addPost", "arguments": ["second"]},
             {"method": "addCommentToLast", "arguments": ["child"]}]
            """))
        // The comment is numbered 1, as its parent's rowid was before it: still its own insert.
        #expect(results == [.write(WriteResult(changes: 1, lastInsertRowID: 2)), .write(WriteResult(changes: 1, lastInsertRowID: 1))])
        #expect(try engine.value("Blog", "comments", "[2]") == [["post": 2, "body": "child"]])
        // Outside a transaction too: the connection's previous insert, as in SQLite.
        #expect(try engine.write("Blog", "addCommentToLast", #"["again"]"#) == WriteResult(changes: 1, lastInsertRowID: 2))
        #expect(try engine.value("Blog", "comments", "[1]") == [["post": 1, "body": "again"]])
    }

    @Test func aWriteThatInsertsNothingReportsZeroAndKeepsTheDatabasesLastInsert() throws {
        let engine = try engine()
        _ = try engine.write("Blog", "addPost", #"["first"]"#)
        #expect(try engine.write("Blog", "retitle", #"[1, "x"]"#) == WriteResult(changes: 1, lastInsertRowID: 0))
        #expect(try engine.lastInsertRowID(module: "Blog", context: CallContext()) == 1)
    }

    @Test func aFailedTransactionLeavesTheLastInsertRowidOfTheDatabase() throws {
        let engine = try engine()
        #expect(try engine.write("Blog", "addPost", #"["kept"]"#).lastInsertRowID == 1)
        let error = try failure(engine, """
            [{"method": "addPost", "arguments": ["gone"]},
             {"method": "addComment", "arguments": [99, "orphan"]}]
            """)
        #expect(error?.code == .constraintViolation)
        #expect(error?.callIndex == 1)
        #expect(try engine.lastInsertRowID(module: "Blog", context: CallContext()) == 1)
        #expect(try engine.value("Blog", "titles") == ["kept"])
        // A failing single call restores it too.
        #expect(engine.failure("Blog", "addComment", "[99, \"orphan\"]")?.code == .constraintViolation)
        #expect(try engine.lastInsertRowID(module: "Blog", context: CallContext()) == 1)
    }

    @Test(arguments: [
        (#"{"$result": "/1/lastInsertRowId"}"#, "points to call 1"),
        (#"{"$result": "/2/lastInsertRowId"}"#, "points to call 2"),
        (#"{"$result": "0/lastInsertRowId"}"#, "starts with '/'"),
        (#"{"$result": ""}"#, "starts with '/'"),
        (#"{"$result": "/00/lastInsertRowId"}"#, "names a call by its index"),
        (#"{"$result": "/x"}"#, "names a call by its index"),
        (#"{"$result": "/0/a~2b"}"#, "'~0' (for ~) or '~1'"),
        (#"{"$result": 0}"#, "not an integer"),
        (#"{"$result": "/0/lastInsertRowId", "also": 1}"#, "the single member $result"),
    ])
    func aMalformedOrForwardReferenceIsRefusedBeforeAnythingRuns(reference: String, message: String) throws {
        let engine = try engine()
        let error = try failure(engine, """
            [{"method": "addPost", "arguments": ["never"]},
             {"method": "addComment", "arguments": {"post": \(reference), "body": "x"}}]
            """)
        #expect(error?.code == .invalidReference)
        #expect(error?.callIndex == 1)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("call 1") == true)
        // Checked before the transaction opened: no database file was even made.
        #expect(!fixture.dataFiles().contains("common.db"))
    }

    @Test(arguments: [
        (#"{"$result": "/0/result"}"#, "which has no member 'result'"),
        (#"{"$result": "/0/lastInsertRowId/x"}"#, "an integer, which has no member 'x'"),
        (#"{"$result": "/1/result/missing"}"#, "which has no member 'missing'"),
        (#"{"$result": "/1/result/0"}"#, "which has no member '0'"),
    ])
    func aReferenceToAMemberThatDoesNotExistRollsBackTheWholeTransaction(reference: String, message: String) throws {
        let engine = try engine()
        let error = try failure(engine, """
            [{"method": "addPost", "arguments": ["never"]},
             {"method": "post", "arguments": [1]},
             {"method": "addComment", "arguments": {"post": \(reference), "body": "x"}}]
            """)
        #expect(error?.code == .invalidReference)
        #expect(error?.callIndex == 2)
        #expect(error?.reference == reference.split(separator: "\"")[3].description)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(try engine.value("Blog", "titles") == [])
    }

    @Test func aResolvedValueIsCheckedAgainstTheArgumentsType() throws {
        let engine = try engine()
        let error = try failure(engine, """
            [{"method": "addPost", "arguments": ["p"]},
             {"method": "post", "arguments": [1]},
             {"method": "addComment", "arguments": {"post": {"$result": "/1/result/title"}, "body": "x"}}]
            """)
        #expect(error?.render?.code == .wrongType)
        #expect(error?.callIndex == 2)
        #expect(try engine.value("Blog", "titles") == [])
    }

    @Test func pointerEscapesNameMembersWithSlashesAndTildes() throws {
        let engine = try fixture.engine("""
            <module name="Odd" initializer="create" version="1.0">
              <update id="create">create table if not exists odd (id integer primary key, v text)</update>
              <insert id="add" arguments="v">insert into odd (v) values (#{v})</insert>
              <select id="row" result="{}">select 'slash' as "a/b", 'tilde' as "c~d"</select>
            </module>
            """)
        let results = try engine.transaction([
            Call(module: "Odd", method: "row"),
            Call(module: "Odd", method: "add", arguments: [["$result": "/0/result/a~1b"]]),
            Call(module: "Odd", method: "add", arguments: [["$result": "/0/result/c~0d"]]),
        ])
        #expect(results[1] == .write(WriteResult(changes: 1, lastInsertRowID: 1)))
        #expect(results[2] == .write(WriteResult(changes: 1, lastInsertRowID: 2)))
    }

    // MARK: userId

    static let notes = """
        <module name="Notes" initializer="create" version="1.0">
          <update id="create">create table if not exists notes (id integer primary key, owner text, body text)</update>
          <insert id="add" arguments="$body:string">insert into notes (owner, body) values (#{userId}, #{body})</insert>
          <select id="mine" result="[string]">select body from notes where owner is #{userId} order by id</select>
          <select id="whoAmI" result="string"><if true="userId == nil">select 'nobody'</if><if false="userId == nil">select #{userId}</if></select>
        </module>
        """

    @Test func userIdIsTheCallersIdInACommonModuleAndNullWithoutOne() throws {
        let engine = try fixture.engine(Self.notes)
        _ = try engine.write("Notes", "add", #"["ann's"]"#, user: "ann")
        _ = try engine.write("Notes", "add", #"["bob's"]"#, user: "bob")
        _ = try engine.write("Notes", "add", #"["nobody's"]"#)
        #expect(try engine.value("Notes", "mine", user: "ann") == ["ann's"])
        #expect(try engine.value("Notes", "mine", user: "bob") == ["bob's"])
        #expect(try engine.value("Notes", "mine") == ["nobody's"])
        #expect(try engine.value("Notes", "whoAmI", user: "ann") == "ann")
        #expect(try engine.value("Notes", "whoAmI") == "nobody")
        let results = try engine.transaction([Call(module: "Notes", method: "add", arguments: ["in a transaction"]),
                                              Call(module: "Notes", method: "mine")], context: CallContext(user: "ann"))
        #expect(results[1] == .value(["ann's", "in a transaction"]))
    }

    @Test func aCallerCannotSetUserIdByAnArgumentOrAGlobal() throws {
        let engine = try fixture.engine(Self.notes)
        #expect(engine.failure("Notes", "add", #"{"body": "x", "userId": "bob"}"#, user: "ann")?.render?.code == .unknownArgument)
        try engine.setGlobalArguments(["userId": "bob"], module: "Notes")
        _ = try engine.write("Notes", "add", #"["mine"]"#, user: "ann")
        #expect(try engine.value("Notes", "mine", user: "ann") == ["mine"])
        #expect(try engine.value("Notes", "mine", user: "bob") == [])
    }

    @Test(arguments: [
        (#"<insert id="m" arguments="userId">insert into t values (#{userId})</insert>"#, "an argument cannot be named 'userId'"),
        (#"<insert id="m" arguments="$userId">insert into t values (#{userId})</insert>"#, "an argument cannot be named 'userId'"),
        (#"<insert id="m" arguments="ids" foreach="ids.userId">insert into t values (#{userId})</insert>"#, "the foreach item cannot be named 'userId'"),
        (#"<update id="m" arguments="ids">update t set v = 1 where id in <foreach item="userId" collection="ids" open="(" separator="," close=")">#{userId}</foreach></update>"#, "the foreach item cannot be named 'userId'"),
    ])
    func userIdIsAReservedName(method: String, message: String) throws {
        do {
            _ = try fixture.module(#"<module name="R" tableName="t" version="1.0">\#(method)</module>"#)
            Issue.record("the module loaded")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
        do {
            _ = try fixture.module(#"<module name="G" tableName="t" version="1.0" globals="a, userId"><select id="s">select 1</select></module>"#)
            Issue.record("the module loaded")
        } catch {
            #expect("\(error)".contains("'userId' is built in"), "\(error)")
        }
    }
}
