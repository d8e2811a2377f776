import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Testing

/// A table belongs to the module that made it (`TableVersions` records which): no other module reads, writes
/// or drops it, whichever of them names it — a template's caller, a module's own `tableName` — and across a
/// reload or a restart. The refusal is `table_owned`, naming the maker, and a `table_owned` event.
@Suite struct TableOwnershipTests {
    let fixture = EngineFixture()

    func drafts(userDependent: Bool = true) throws -> Module {
        try fixture.module("""
            <module name="Drafts" initializer="create" tableName="" version="1.0" userDependent="\(userDependent)">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              <insert id="add" arguments="body">insert into ${T} (body) values (#{body})</insert>
              <select id="all" result="[{}]">select * from ${T}</select>
            </module>
            """, file: "drafts.xml")
    }

    func board() throws -> Module {
        try fixture.module("""
            <module name="Board" initializer="create" tableName="" version="1.0" userDependent="true">
              <update id="create">create table if not exists ${T} (id integer primary key, title text)</update>
              <select id="all" result="[{}]">select * from ${T}</select>
            </module>
            """, file: "board.xml")
    }

    func ledger(userDependent: Bool = true) throws -> Module {
        try fixture.module("""
            <module name="Ledger" initializer="create" tableName="ledger" version="1.0" userDependent="\(userDependent)">
              <update id="create">create table if not exists ${T} (id integer primary key, amount integer not null)</update>
              <insert id="record" arguments="$amount">insert into ${T} (amount) values (#{amount})</insert>
              <select id="all" result="[{}]">select * from ${T}</select>
            </module>
            """, file: "ledger.xml")
    }

    func expectOwned(_ error: EngineError?, by owner: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.code == .tableOwned, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.owner == owner, sourceLocation: sourceLocation)
    }

    func thrown(_ body: () throws -> Void) -> EngineError? {
        do { try body() } catch { return error as? EngineError }
        return nil
    }

    /// The squat, and what stops it: a template's caller names a table after a module that is not there yet.
    func squatThenRefuse(_ engine: Engine, user: String? = "ann") throws {
        #expect(throws: Never.self) { try engine.value("Ledger", "all", user: "bob") }
        expectOwned(engine.failure("Ledger", "all", user: user), by: "Drafts")
        expectOwned(engine.failure("Ledger", "record", "[1]", user: user), by: "Drafts")
        expectOwned(thrown { _ = try engine.transaction([Call(module: "Ledger", method: "record", arguments: [.integer(1)])],
                                                        context: CallContext(user: user)) }, by: "Drafts")
        expectOwned(thrown { _ = try engine.storedVersion(module: "Ledger", context: CallContext(user: user)) }, by: "Drafts")
        expectOwned(thrown { try engine.deleteTable(module: "Ledger", context: CallContext(user: user)) }, by: "Drafts")
        // The template reaches it no more: by name (the added module's), nor by pattern.
        #expect(engine.failure("Drafts", "all", user: user, table: "ledger")?.code == .invalidTable)
        #expect(try engine.deleteTables(module: "Drafts", matching: ".*", vacuum: false, context: CallContext(user: user)).tables == ["other"])
        let events = fixture.takeEvents().filter { $0.kind == .tableOwned }
        #expect(events.count == 5)
        #expect(events.allSatisfy { $0.module == "Ledger" && $0.table == "ledger" && $0.error == "made by module Drafts" })
        // The admin frees the name: the module's own table dropped whoever made it; its next call makes its own.
        #expect(try engine.deleteTable(module: "Ledger", context: CallContext(user: user), whoeverMadeIt: true))
        try engine.write("Ledger", "record", "[7]", user: user)
        #expect(try engine.value("Ledger", "all", user: user) == .array([["id": 1, "amount": 7]]))
    }

    func plant(_ engine: Engine, user: String? = "ann") throws {
        try engine.write("Drafts", "add", #"["planted"]"#, user: user, table: "ledger")
        try engine.write("Drafts", "add", #"["mine"]"#, user: user, table: "other")
    }

    @Test func aModuleAddedByAReloadDoesNotAdoptATemplatesTable() throws {
        let engine = try fixture.engine([try drafts()])
        defer { engine.shutdown() }
        try plant(engine)
        try squatThenRefuse(try engine.replacingModules([try drafts(), try ledger()]))
    }

    @Test func aModuleAddedAtARestartDoesNotAdoptATemplatesTable() throws {
        let engine = try fixture.engine([try drafts()])
        try plant(engine)
        engine.shutdown()
        let restarted = try fixture.engine([try drafts(), try ledger()])
        defer { restarted.shutdown() }
        try squatThenRefuse(restarted)
    }

    /// In the common space a squat would be every user's: refused alike.
    @Test func aCommonTemplateDoesNotHandItsTableToACommonModule() throws {
        let engine = try fixture.engine([try drafts(userDependent: false)])
        defer { engine.shutdown() }
        try plant(engine, user: nil)
        let reloaded = try engine.replacingModules([try drafts(userDependent: false), try ledger(userDependent: false)])
        for user in ["ann", "bob", nil] as [String?] {
            expectOwned(reloaded.failure("Ledger", "all", user: user), by: "Drafts")
        }
    }

    /// A fixed module's table is its own: a template loaded once the module is gone cannot take it.
    @Test func aTemplateDoesNotTakeTheTableOfAModuleThatWasRemoved() throws {
        let engine = try fixture.engine([try ledger(), try drafts()])
        defer { engine.shutdown() }
        try engine.write("Ledger", "record", "[3]", user: "ann")
        #expect(engine.failure("Drafts", "all", user: "ann", table: "ledger")?.code == .invalidTable)
        let reloaded = try engine.replacingModules([try drafts()])
        expectOwned(reloaded.failure("Drafts", "all", user: "ann", table: "LEDGER"), by: "Ledger")
        expectOwned(reloaded.failure("Drafts", "add", #"["x"]"#, user: "ann", table: "ledger"), by: "Ledger")
        expectOwned(thrown { try reloaded.deleteTable(module: "Drafts", table: "ledger", context: CallContext(user: "ann"), whoeverMadeIt: true) },
                    by: "Ledger")
        #expect(try reloaded.deleteTables(module: "Drafts", matching: ".*", vacuum: false, context: CallContext(user: "ann")).tables == [])
        // Where the module never made it, the name is free.
        #expect(try reloaded.value("Drafts", "all", user: "bob", table: "ledger") == .array([]))
        #expect(try engine.value("Ledger", "all", user: "ann") == .array([["id": 1, "amount": 3]]))
    }

    @Test func twoTemplatesDoNotShareATable() throws {
        let engine = try fixture.engine([try drafts(), try board()])
        defer { engine.shutdown() }
        try engine.write("Drafts", "add", #"["d"]"#, user: "ann", table: "t1")
        expectOwned(engine.failure("Board", "all", user: "ann", table: "t1"), by: "Drafts")
        expectOwned(engine.failure("Board", "all", user: "ann", table: "T1"), by: "Drafts")
        #expect(try engine.value("Board", "all", user: "bob", table: "t1") == .array([]))
        expectOwned(engine.failure("Drafts", "all", user: "bob", table: "t1"), by: "Board")
    }

    /// A `TableVersions` of a file made elsewhere (the reference's: no `module` column) gains the column: its
    /// tables name no module, so the module whose `tableName` one is adopts it, and no caller's template may.
    @Test func aTableVersionsWithoutModulesIsMigrated() throws {
        let path = fixture.dataDirectory + "/users/p-ann.db"
        try FileManager.default.createDirectory(atPath: fixture.dataDirectory + "/users", withIntermediateDirectories: true)
        _ = try run("/usr/bin/sqlite3", [path, """
            create table TableVersions (tableName text primary key, version text not null);
            create table ledger (id integer primary key, amount integer not null);
            insert into ledger (amount) values (42);
            insert into TableVersions values ('ledger', '1.0');
            create table stray (id integer primary key);
            insert into TableVersions values ('stray', '1.0');
            """])
        let engine = try fixture.engine([try ledger(), try drafts()])
        defer { engine.shutdown() }
        #expect(engine.failure("Drafts", "all", user: "ann", table: "stray")?.code == .invalidTable)
        #expect(try engine.value("Ledger", "all", user: "ann") == .array([["id": 1, "amount": 42]]))
        try engine.write("Ledger", "record", "[1]", user: "ann")
        #expect(try engine.tables(module: "Ledger", context: CallContext(user: "ann")) == [.init(table: "ledger", version: Version("1.0"))])
        let recorded = try run("/usr/bin/sqlite3", [path, "select tableName, coalesce(module, '-') from TableVersions order by 1"])
        #expect(recorded == "ledger|Ledger\nstray|-\n")
    }
}

@discardableResult
private func run(_ program: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
