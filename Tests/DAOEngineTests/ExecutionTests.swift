import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Testing

/// Methods run on real SQLite files: the reference's examples end to end.
@Suite struct ExecutionTests {
    let fixture = EngineFixture()

    @Test func demoInsertThenLastInsertRowIDThenGetItem() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        let inserted = try engine.write("Demo", "insertItem", #"["something"]"#)
        #expect(inserted == WriteResult(changes: 1, lastInsertRowID: 1))
        let lastIndex = try engine.lastInsertRowID(module: "Demo", context: CallContext())
        #expect(lastIndex == 1)
        #expect(try engine.value("Demo", "getItem", "[\(lastIndex)]") == "something")
        #expect(try engine.value("Demo", "getItem", "[2]") == .null)
        #expect(fixture.dataFiles().contains("common.db"))
    }

    @Test func writeResultCountsRowsAndReportsOnlyThisCallsInsert() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, v text)</update>
              <insert id="add" arguments="v">insert into ${T} (v) values (#{v})</insert>
              <update id="touch">update ${T} set v = v || '!'</update>
              <delete id="clear">delete from ${T}</delete>
            </module>
            """)
        #expect(try engine.write("M", "add", #"["a"]"#) == WriteResult(changes: 1, lastInsertRowID: 1))
        #expect(try engine.write("M", "add", #"["b"]"#) == WriteResult(changes: 1, lastInsertRowID: 2))
        #expect(try engine.write("M", "touch") == WriteResult(changes: 2, lastInsertRowID: 0))
        #expect(try engine.write("M", "clear") == WriteResult(changes: 2, lastInsertRowID: 0))
    }

    @Test func foreachInsertRunsEveryElementInOneTransaction() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        let result = try engine.write("Messages", "addMessages", #"""
            {"messages": [{"msgId": 1, "time": 10, "content": "a", "uin": 7, "read": true},
                          {"msgId": 2, "time": 20, "content": "b", "uin": 7, "read": false}]}
            """#, user: "ann")
        #expect(result.changes == 2)
        let messages = try engine.value("Messages", "messagesOf", "[7]", user: "ann")
        #expect(messages.arrayValue?.count == 2)
        #expect(messages.arrayValue?.first?[member: "msgId"] == 2)
        #expect(messages.arrayValue?.first?[member: "content"] == "b")
    }

    @Test func aForeachInsertThatFailsHalfWayLeavesNothing() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, v text not null)</update>
              <insert id="addAll" arguments="$items" foreach="items.item">
                insert into ${T} (id, v) values (#{item.id}, #{item.v})
              </insert>
              <select id="count" result="int">select count(*) from ${T}</select>
            </module>
            """)
        let error = engine.failure("M", "addAll", #"[[{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3}, {"id": 4, "v": "d"}]]"#)
        #expect(error?.code == .constraintViolation)
        #expect(error?.method == "M.addAll")
        #expect(error?.line == 3)
        #expect(error?.message.contains("NOT NULL constraint failed: t.v") == true)
        #expect(try engine.value("M", "count") == 0)
        let duplicate = engine.failure("M", "addAll", #"[[{"id": 1, "v": "a"}, {"id": 1, "v": "b"}]]"#)
        #expect(duplicate?.code == .constraintViolation)
        #expect(duplicate?.isCallersFault == true)
        #expect(try engine.value("M", "count") == 0)
    }

    @Test func stepsRunInOneTransactionAndResumableStepsMayFail() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, v text)</update>
              <update id="both">
                <step>insert into ${T} (v) values ('one')</step>
                <step>insert into no_such_table values (1)</step>
              </update>
              <update id="resumable">
                <step>insert into ${T} (v) values ('one')</step>
                <step resumable="true">insert into no_such_table values (1)</step>
                <step>insert into ${T} (v) values ('three')</step>
              </update>
              <select id="values" result="[string]">select v from ${T} order by id</select>
            </module>
            """)
        let error = engine.failure("M", "both")
        #expect(error?.code == .statementFailed)
        #expect(error?.line == 5)
        #expect(error?.isCallersFault == false)
        #expect(try engine.value("M", "values") == [])
        #expect(try engine.write("M", "resumable").changes == 2)
        #expect(try engine.value("M", "values") == ["one", "three"])
    }

    @Test func tryExceptUpdatesWhenTheInsertFailsAndKeepsTheRowid() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        let template = #"{"tplId": "a", "tplVersion": 1, "time": 5, "data": "first", "tag": "x"}"#
        #expect(try engine.write("Templates", "insertTemplates", "[[\(template)]]").changes == 1)
        let before = try engine.value("Templates", "getTemplate", #"["a", 1]"#)
        let updated = #"{"tplId": "a", "tplVersion": 1, "time": 6, "data": "second", "tag": "y"}"#
        #expect(try engine.write("Templates", "insertTemplates", "[[\(updated)]]").changes == 1)
        let after = try engine.value("Templates", "getTemplate", #"["a", 1]"#)
        #expect(after[member: "data"] == "second")
        #expect(after[member: "tag"] == "y")
        #expect(after[member: "time"] == 5)
        #expect(after[member: "rowid"] == before[member: "rowid"])
    }

    @Test func whenBothTryAndExceptFailTheCallFailsAndLeavesNothing() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, v text not null)</update>
              <insert id="put" arguments="id, v">
                <try>
                  <step>insert into ${T} (id, v) values (100, 'marker')</step>
                  <step>insert into ${T} (id, v) values (#{id}, #{v})</step>
                  <except>insert into ${T} (id, v) values (#{id} + 1, #{v})</except>
                </try>
              </insert>
              <select id="count" result="int">select count(*) from ${T}</select>
            </module>
            """)
        let error = engine.failure("M", "put", "[1, null]")
        #expect(error?.code == .constraintViolation)
        #expect(error?.message.contains("the try branch failed") == true)
        #expect(try engine.value("M", "count") == 0)
    }

    @Test func onVoidQuitSucceedsWithoutRunning() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        try engine.write("Books", "addBook", #"{"title": "Swift", "year": 2014}"#)
        #expect(try engine.value("Books", "findBooks", "{}") == [])
        #expect(try engine.value("Books", "findBooks", #"{"title": "Swift"}"#).arrayValue?.count == 1)
    }

    @Test func selectForeachReturnsOneResultPerElement() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <update id="create">
                <step>create table if not exists ${T} (id integer primary key, v text)</step>
                <step>insert into ${T} (id, v) values (1, 'a'), (2, 'b')</step>
              </update>
              <select id="each" arguments="ids" foreach="ids.id" result="string">select v from ${T} where id = #{id}</select>
            </module>
            """)
        #expect(try engine.value("M", "each", "[[2, 1, 3]]") == ["b", "a", nil])
        #expect(try engine.value("M", "each", "[[]]") == [])
    }

    @Test func aTransactionOfSeveralCallsIsAllOrNothing() throws {
        let unique = try fixture.module("""
            <module name="Unique" tableName="u" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key)</update>
              <insert id="add" arguments="id">insert into ${T} values (#{id})</insert>
              <select id="count" result="int">select count(*) from ${T}</select>
            </module>
            """)
        let engine = try fixture.engine(EngineFixture.exampleModules() + [unique], cipher: Cipher(key: .generate()))
        let results = try engine.transaction([
            Call(module: "Demo", method: "insertItem", arguments: ["one"]),
            Call(module: "Demo", method: "insertItem", arguments: ["two"]),
            Call(module: "Demo", method: "getItem", arguments: [2]),
        ])
        #expect(results == [.write(WriteResult(changes: 1, lastInsertRowID: 1)),
                            .write(WriteResult(changes: 1, lastInsertRowID: 2)), .value("two")])
        do {
            _ = try engine.transaction([
                Call(module: "Demo", method: "insertItem", arguments: ["three"]),
                Call(module: "Books", method: "addBook", arguments: ["title": nil]),
            ])
            Issue.record("the transaction succeeded")
        } catch {
            #expect(error.callIndex == 1)
            #expect(error.code == .invalidArguments)
        }
        do {
            _ = try engine.transaction([
                Call(module: "Demo", method: "insertItem", arguments: ["three"]),
                Call(module: "Unique", method: "add", arguments: [1]),
                Call(module: "Unique", method: "add", arguments: [1]),
            ])
            Issue.record("the transaction succeeded")
        } catch {
            #expect(error.callIndex == 2)
            #expect(error.code == .constraintViolation)
        }
        #expect(try engine.value("Demo", "getItem", "[3]") == .null)
        #expect(try engine.value("Unique", "count") == 0)
    }

    @Test func aTransactionCannotSpanDatabases() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        do {
            _ = try engine.transaction([
                Call(module: "Demo", method: "insertItem", arguments: ["one"]),
                Call(module: "ChatMessages", method: "send", arguments: ["a", "b"], table: "c1"),
            ], context: CallContext(user: "ann"))
            Issue.record("the transaction succeeded")
        } catch {
            #expect(error.callIndex == 1)
            #expect(error.message.contains("a transaction runs in one database"))
        }
    }

    @Test func globalArgumentsAreVisibleToEveryMethod() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0" globals="tenant">
              <update id="create">create table if not exists ${T} (tenant text, v text)</update>
              <insert id="add" arguments="v">insert into ${T} values (#{tenant}, #{v})</insert>
              <select id="mine" result="[string]">select v from ${T} where tenant = #{tenant}</select>
            </module>
            """)
        try engine.setGlobalArguments(["tenant": "acme"], module: "M")
        try engine.write("M", "add", #"["x"]"#)
        try engine.setGlobalArguments(["tenant": "other"], module: "M")
        try engine.write("M", "add", #"["y"]"#)
        #expect(try engine.value("M", "mine") == ["y"])
        #expect(throws: EngineError.self) { try engine.setGlobalArguments([:], module: "Nope") }
    }

    @Test func templateModulesKeepATableAndAVersionPerTable() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        try engine.write("ChatMessages", "send", #"["ann", "hi"]"#, user: "u1", table: "chat_a")
        try engine.write("ChatMessages", "send", #"["bob", "yo"]"#, user: "u1", table: "chat_b")
        try engine.write("ChatMessages", "send", #"["cy", "hey"]"#, user: "u1", table: "chat_b")
        #expect(try engine.value("ChatMessages", "latest", "[10]", user: "u1", table: "chat_a").arrayValue?.count == 1)
        #expect(try engine.value("ChatMessages", "latest", "[10]", user: "u1", table: "chat_b").arrayValue?.count == 2)
        let tables = try engine.tables(module: "ChatMessages", context: CallContext(user: "u1"))
        #expect(tables == [.init(table: "chat_a", version: Version("1.0")), .init(table: "chat_b", version: Version("1.0"))])
        #expect(engine.failure("ChatMessages", "latest", "[1]", user: "u1")?.code == .invalidTable)
        #expect(engine.failure("ChatMessages", "latest", "[1]", user: "u1", table: "x; drop")?.code == .invalidTable)
        #expect(engine.failure("Demo", "getItem", "[1]", table: "other")?.code == .invalidTable)
    }

    @Test func unknownModulesAndMethodsAndBadArgumentsFailBeforeAnythingRuns() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        #expect(engine.failure("Nope", "x")?.code == .unknownModule)
        #expect(engine.failure("Demo", "nope")?.code == .unknownMethod)
        #expect(engine.failure("Books", "addBook", "{}")?.code == .invalidArguments)
        #expect(engine.failure("Books", "addBook", #"{"title": 1}"#)?.code == .invalidArguments)
        #expect(engine.failure("Books", "sorted", #"{"orderBy": "id; drop table books"}"#)?.code == .invalidArguments)
        #expect(engine.failure("Books", "sorted", #"{"orderBy": "no_such_column"}"#)?.code == .invalidArguments)
        #expect(fixture.dataFiles().allSatisfy { !$0.hasPrefix("users/") })
    }

    @Test func initializerRunsOncePerDatabaseUnderConcurrency() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <update id="create">
                <step>create table if not exists ${T} (id integer primary key)</step>
                <step>create table if not exists runs (n integer)</step>
                <step>insert into runs values (1)</step>
              </update>
              <select id="runs" result="int">select count(*) from runs</select>
            </module>
            """)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            #expect(throws: Never.self) { try engine.value("M", "runs") }
        }
        #expect(try engine.value("M", "runs") == 1)
        #expect(fixture.takeEvents().filter { $0.kind == .tableCreated }.count == 1)
        // A new process (engine) on the same file does not run it again.
        let again = try fixture.engine(Array(engine.modules.values))
        #expect(try again.value("M", "runs") == 1)
    }

    @Test func concurrentReadersAndWritersFromSeveralThreads() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        try engine.write("Demo", "insertItem", #"["seed"]"#)
        DispatchQueue.concurrentPerform(iterations: 10) { worker in
            for index in 0..<50 {
                if worker < 2 {
                    #expect(throws: Never.self) { try engine.write("Demo", "insertItem", #"["w\#(worker)-\#(index)"]"#) }
                } else {
                    do {
                        let item = try engine.value("Demo", "getItem", "[1]")
                        #expect(item == "seed")
                    } catch {
                        Issue.record(error)
                    }
                }
            }
        }
        #expect(try engine.value("Demo", "getItem", "[101]") != .null)
        #expect(try engine.value("Demo", "getItem", "[102]") == .null)
    }

    @Test func engineRefusesCryptModulesWithoutAKey() throws {
        #expect(throws: EngineError.self) { try fixture.engine(EngineFixture.exampleModules()) }
    }
}
