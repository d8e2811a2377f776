import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Testing

/// SQL that a call's values made wrong is the caller's 400 (`invalid_arguments`),
/// whatever SQLite calls the refusal, on every path a statement takes, and
/// whatever ran before; SQL the module wrote wrong stays `statement_failed`.
@Suite struct CallerSQLTests {
    let fixture = EngineFixture()

    static let module = """
        <module name="R" tableName="t" initializer="create" version="1.0">
          <update id="create">create table if not exists ${T} (id integer primary key, name text)</update>
          <insert id="add" arguments="name">insert into ${T} (name) values (#{name})</insert>
          <select id="count" result="int">select count(*) from ${T}</select>
          <select id="bare" arguments="q" result="string">select @{q no ""}</select>
          <select id="fromTable" arguments="q" result="[string]">select @{q no ""} from ${T}</select>
          <select id="orderBy" arguments="q" result="[int]">select id from ${T} order by @{q no ""}</select>
          <select id="quotedName" arguments="q" result="[string]">select "@{q}" from ${T}</select>
          <select id="likelihood" arguments="q" result="int">select likelihood(1, @{q})</select>
          <select id="inlinedJSON" arguments="q" result="string">select json(@{q})</select>
          <select id="boundJSON" arguments="q" result="[string]">select value from json_each(#{q})</select>
          <select id="dangling" arguments="q" result="[int]">select id from ${T} where <if true="q != nil">id = #{q}</if></select>
          <select id="each" arguments="qs" result="string" foreach="qs.q">select @{q no ""}</select>
          <insert id="addRaw" arguments="q">insert into ${T} (name) values (@{q no ""})</insert>
          <select id="broken" result="[int]">select no_such_column from ${T}</select>
          <select id="name" arguments="id" result="string">select name from ${T} where id = #{id}</select>
        </module>
        """

    /// A call SQLite refuses because of what it sent, and the words of the refusal.
    struct Case: Sendable, CustomTestStringConvertible {
        var method: String
        var arguments: Value
        var message: String
        var testDescription: String { "\(method) \(arguments.jsonString()): \(message)" }
    }

    static let cases: [Case] = [
        // Compiling: unknown names (SQLITE_SCHEMA on a connection that never read the schema, SQLITE_ERROR after).
        Case(method: "bare", arguments: ["q": "abc"], message: "no such column: abc"),
        Case(method: "fromTable", arguments: ["q": "abc"], message: "no such column: abc"),
        Case(method: "quotedName", arguments: ["q": "nope"], message: "no such column: nope"),
        // Compiling: what a value means where it stands.
        Case(method: "orderBy", arguments: ["q": "5"], message: "ORDER BY term out of range"),
        Case(method: "likelihood", arguments: ["q": 2], message: "likelihood"),
        // Compiling: dynamic tags that left the SQL unfinished.
        Case(method: "dangling", arguments: ["q": nil], message: "incomplete input"),
        // Running: a function refusing an inlined or a bound value.
        Case(method: "inlinedJSON", arguments: ["q": "{"], message: "malformed JSON"),
        Case(method: "boundJSON", arguments: ["q": "[1,"], message: "malformed JSON"),
        // A method-level foreach, and a write.
        Case(method: "each", arguments: ["qs": ["abc"]], message: "no such column: abc"),
        Case(method: "addRaw", arguments: ["q": "abc"], message: "no such column: abc"),
    ]

    /// Fails with `invalid_arguments` naming the refusal, and changed nothing.
    private func expectRefused(_ engine: Engine, _ call: Call, _ message: String,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        do {
            let result = try engine.call(call)
            Issue.record("\(call.method) succeeded: \(result)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .invalidArguments, "\(error)", sourceLocation: sourceLocation)
            #expect(error.isCallersFault, sourceLocation: sourceLocation)
            #expect(error.message.contains(message), "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.line != nil, sourceLocation: sourceLocation)
        }
        #expect(try engine.value("R", "count") == 1, sourceLocation: sourceLocation)
    }

    @Test(arguments: cases)
    func refusedSQLIsTheCallersWhateverRanBefore(_ refused: Case) throws {
        let engine = try fixture.engine(Self.module)
        let call = Call(module: "R", method: refused.method, arguments: refused.arguments)
        // First on a fresh database, a fresh writer and fresh readers…
        try engine.write("R", "add", #"["one"]"#)
        try expectRefused(engine, call, refused.message)
        // …then after calls that read the schema on every connection, and again.
        for _ in 0..<4 { _ = try engine.value("R", "fromTable", #"{"q": "name"}"#) }
        try expectRefused(engine, call, refused.message)
        try expectRefused(engine, call, refused.message)
    }

    @Test(arguments: cases)
    func refusedSQLIsTheCallersInATransaction(_ refused: Case) throws {
        let engine = try fixture.engine(Self.module)
        try engine.write("R", "add", #"["one"]"#)
        do {
            _ = try engine.transaction([Call(module: "R", method: "add", arguments: ["two"]),
                                        Call(module: "R", method: refused.method, arguments: refused.arguments)])
            Issue.record("the transaction succeeded")
        } catch {
            #expect(error.code == .invalidArguments, "\(error)")
            #expect(error.callIndex == 1)
            #expect(error.message.contains(refused.message), "\(error.message)")
        }
        #expect(try engine.value("R", "count") == 1)
    }

    @Test func theModulesOwnBrokenSQLStaysTheServers() throws {
        let engine = try fixture.engine(Self.module)
        let error = engine.failure("R", "broken")
        #expect(error?.code == .statementFailed)
        #expect(error?.isCallersFault == false)
    }

    @Test func aTableDroppedBehindTheEnginesBackIsNotTheCallersFault() throws {
        let engine = try fixture.engine(Self.module)
        try engine.write("R", "add", #"["one"]"#)
        #expect(try engine.value("R", "name", "[1]") == "one")
        let other = try Database(path: fixture.dataDirectory + "/common.db", readOnly: false, configuration: .init())
        try other.execute("drop table t")
        other.close()
        Thread.sleep(forTimeInterval: 0.2)  // past the readers' snapshots of another process's writes
        // The cached statement no longer compiles: a runtime SQLITE_ERROR, with a value bound, that is not the value's.
        let error = engine.failure("R", "name", "[1]")
        #expect(error?.code == .statementFailed, "\(String(describing: error))")
        #expect(error?.message.contains("no such table") == true)
    }

    @Test func sqliteErrorsNameTheirKind() {
        #expect(SQLiteError(extendedCode: 1, message: "").isRefusal)
        #expect(SQLiteError(extendedCode: 17, message: "").isRefusal)
        #expect(SQLiteError(extendedCode: 25, message: "").isRefusal)
        #expect(!SQLiteError(extendedCode: 10, message: "").isRefusal)
        #expect(!SQLiteError(extendedCode: 19, message: "").isRefusal)
        #expect(SQLiteError(extendedCode: 18, message: "").isTooBig)
        #expect(SQLiteError(extendedCode: 20, message: "").isDatatypeMismatch)
    }
}
