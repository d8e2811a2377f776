import CSQLite
import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Synchronization
import Testing

/// Table versions, upgrades, resets and the proxy operations on tables.
@Suite struct LifecycleTests {
    let fixture = EngineFixture()

    /// The notes module at `version`, with the given extra attributes and upgrade blocks.
    func notes(_ version: String, attributes: String = "", upgrades: String = "") -> String {
        """
        <module name="Notes" tableName="notes" initializer="create" version="\(version)" \(attributes)>
          <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
          \(upgrades)
          <insert id="add" arguments="body">insert into ${T} (body) values (#{body})</insert>
          <select id="all" result="[{}]">select * from ${T} order by id</select>
          <select id="count" result="int">select count(*) from ${T}</select>
        </module>
        """
    }

    func storedVersion(_ engine: Engine) throws -> String? {
        try engine.storedVersion(module: "Notes", context: CallContext())?.description
    }

    @Test func firstUseCreatesTheTableAndRecordsItsVersion() throws {
        let engine = try fixture.engine(notes("1.0"))
        try engine.write("Notes", "add", #"["a"]"#)
        #expect(try storedVersion(engine) == "1.0")
        let events = fixture.takeEvents()
        #expect(events.map(\.kind) == [.tableCreated])
        #expect(events.first?.table == "notes")
        #expect(events.first?.module == "Notes")
    }

    @Test func upgradeBlocksRunInOrderFromTheStoredVersion() throws {
        let old = try fixture.engine(notes("1.0"))
        try old.write("Notes", "add", #"["kept"]"#)
        old.shutdown()
        _ = fixture.takeEvents()
        let upgrades = """
            <upgrade toVersion="1.1"><step>alter table ${T} add column tag text</step></upgrade>
            <upgrade toVersion="1.2"><step>update ${T} set tag = 'old'</step><step>create index notes_tag on ${T} (tag)</step></upgrade>
            """
        let new = try fixture.engine(notes("1.2", upgrades: upgrades))
        #expect(try new.value("Notes", "all") == [["id": 1, "body": "kept", "tag": "old"]])
        #expect(try storedVersion(new) == "1.2")
        let events = fixture.takeEvents()
        #expect(events.map(\.kind) == [.shouldUpgrade])
        #expect(events.first?.fromVersion == Version("1.0"))
        #expect(events.first?.toVersion == Version("1.2"))
    }

    @Test func resetOnUpgradeDropsAndRecreatesTheTable() throws {
        let old = try fixture.engine(notes("1.0"))
        try old.write("Notes", "add", #"["gone"]"#)
        old.shutdown()
        _ = fixture.takeEvents()
        let new = try fixture.engine(notes("2.0", attributes: #"resetOnUpgrade="YES""#,
                                           upgrades: #"<upgrade toVersion="2.0">alter table ${T} add column x text</upgrade>"#))
        #expect(try new.value("Notes", "count") == 0)
        #expect(try storedVersion(new) == "2.0")
        #expect(fixture.takeEvents().map(\.kind) == [.shouldUpgrade, .tableDeleted, .tableCreated])
    }

    @Test func upgradeMinVersionResetsOlderTablesAndUpgradesNewerOnes() throws {
        let upgrades = #"<upgrade toVersion="2.0"><step>alter table ${T} add column tag text</step></upgrade>"#
        // Stored 1.0 < upgradeMinVersion 1.5: reset.
        let old = try fixture.engine(notes("1.0"))
        try old.write("Notes", "add", #"["old"]"#)
        old.shutdown()
        let reset = try fixture.engine(notes("2.0", attributes: #"upgradeMinVersion="1.5""#, upgrades: upgrades))
        #expect(try reset.value("Notes", "all") == [])
        reset.shutdown()
        // Stored 1.5 ≥ upgradeMinVersion: the upgrade blocks run and the data stays.
        let other = EngineFixture()
        let middle = try other.engine(notes("1.5"))
        try middle.write("Notes", "add", #"["kept"]"#)
        middle.shutdown()
        let upgraded = try other.engine(notes("2.0", attributes: #"upgradeMinVersion="1.5""#, upgrades: upgrades))
        #expect(try upgraded.value("Notes", "all") == [["id": 1, "body": "kept", "tag": nil]])
    }

    @Test func aFailedUpgradeRollsBackKeepsTheDataAndVersionAndFailsClearly() throws {
        let old = try fixture.engine(notes("1.0"))
        try old.write("Notes", "add", #"["precious"]"#)
        old.shutdown()
        _ = fixture.takeEvents()
        let broken = try fixture.engine(notes("1.1", upgrades: """
            <upgrade toVersion="1.1">
              <step>alter table ${T} add column tag text</step>
              <step>update no_such_table set x = 1</step>
            </upgrade>
            """))
        let error = broken.failure("Notes", "count")
        #expect(error?.code == .upgradeFailed)
        #expect(error?.isCallersFault == false)
        #expect(error?.message.contains("from version 1.0 to 1.1 failed, so the table keeps its data and version 1.0") == true)
        #expect(error?.message.contains("no such table: no_such_table") == true)
        #expect(error?.line == 5)
        #expect(fixture.takeEvents().map(\.kind) == [.shouldUpgrade, .upgradeFailed])
        // It fails again on the next call, rather than running on a half-upgraded table.
        #expect(broken.failure("Notes", "count")?.code == .upgradeFailed)
        broken.shutdown()
        let fixed = try fixture.engine(notes("1.0"))
        #expect(try fixed.value("Notes", "all") == [["id": 1, "body": "precious"]])
        #expect(try storedVersion(fixed) == "1.0")
    }

    @Test func aNewerTableThanTheModuleIsLeftAlone() throws {
        let new = try fixture.engine(notes("2.0"))
        try new.write("Notes", "add", #"["x"]"#)
        new.shutdown()
        let old = try fixture.engine(notes("1.0"))
        #expect(try old.value("Notes", "count") == 1)
        #expect(try storedVersion(old) == "2.0")
    }

    @Test func deleteTableDropsItAndTheNextCallCreatesItAgain() throws {
        let engine = try fixture.engine(notes("1.0"))
        try engine.write("Notes", "add", #"["x"]"#)
        // Read twice: the first finds the table ready and remembers the module, the second reads that memory;
        // the drop must take it back, or the call after it would find no table.
        #expect(try engine.value("Notes", "count") == 1)
        #expect(try engine.value("Notes", "count") == 1)
        _ = fixture.takeEvents()
        #expect(try engine.deleteTable(module: "Notes", context: CallContext()))
        #expect(fixture.takeEvents().map(\.kind) == [.tableDeleted])
        #expect(try storedVersion(engine) == nil)
        #expect(try engine.value("Notes", "count") == 0)
        #expect(fixture.takeEvents().map(\.kind) == [.tableCreated])
        #expect(try engine.methodNames(module: "Notes") == ["create", "add", "all", "count"])
    }

    @Test func deleteTablesDropsOnlyTheModulesMatchingTables() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        for table in ["chat_1", "chat_2", "chat_10", "other"] {
            try engine.write("ChatMessages", "send", #"["a", "b"]"#, user: "u", table: table)
        }
        try engine.write("Messages", "insertMessage", #"[{"content": "x"}]"#, user: "u")
        let progress = Mutex<[Double]>([])
        let deleted = try engine.deleteTables(module: "ChatMessages", matching: "chat_[0-9]+", vacuum: true,
                                              context: CallContext(user: "u")) { value in progress.withLock { $0.append(value) } }
        #expect(deleted.tables == ["chat_1", "chat_10", "chat_2"])
        #expect(deleted.vacuumed)
        #expect(progress.withLock { $0 } == [1.0 / 3, 2.0 / 3, 1])
        #expect(try engine.tables(module: "ChatMessages", context: CallContext(user: "u")).map(\.table) == ["other"])
        // Another module's table in the same database is out of reach, even with a pattern matching it.
        #expect(try engine.deleteTables(module: "ChatMessages", matching: ".*", vacuum: false, context: CallContext(user: "u")).tables == ["other"])
        #expect(try engine.value("Messages", "unreadCount", user: "u") == 1)
        #expect(throws: EngineError.self) {
            try engine.deleteTables(module: "ChatMessages", matching: "(", vacuum: false, context: CallContext(user: "u"))
        }
        try engine.vacuum(module: "Demo", context: CallContext())
    }

    /// The issue's patterns, which escaped the `^( … )$` that wrapped them:
    /// `chat_1)|(zzz` dropped chat_1 and chat_10, `x)|(` every table. Now the
    /// anchors are the engine's: they are refused and drop nothing, and an
    /// alternation matches whole names only (ICU's `\d` keeps its meaning).
    @Test func deleteTablesMatchesWholeNamesThatNoPatternEscapes() throws {
        let engine = try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: .generate()))
        let context = CallContext(user: "u")
        for table in ["chat_1", "chat_10", "chat_2", "other"] {
            try engine.write("ChatMessages", "send", #"["a", "b"]"#, user: "u", table: table)
        }
        for pattern in ["chat_1)|(zzz", "x)|(", "(?=chat).*", "(chat)\\1", "[[a-z]--[h]]+_1"] {
            #expect(throws: EngineError.self, "\(pattern)") {
                try engine.deleteTables(module: "ChatMessages", matching: pattern, vacuum: false, context: context)
            }
        }
        #expect(try engine.deleteTables(module: "ChatMessages", matching: "chat_1|zzz", vacuum: false, context: context).tables == ["chat_1"])
        #expect(try engine.deleteTables(module: "ChatMessages", matching: "chat_\\d+", vacuum: false, context: context).tables == ["chat_10", "chat_2"])
        #expect(try engine.tables(module: "ChatMessages", context: context).map(\.table) == ["other"])
    }
}
