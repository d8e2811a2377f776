import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Synchronization
import Testing

/// Storage spaces: the common database, one per user, custom storages, bound files.
@Suite struct StorageTests {
    let fixture = EngineFixture()

    static let perUser = """
        <module name="Diary" tableName="entries" initializer="create" version="1.0" userDependent="true">
          <update id="create">create table if not exists ${T} (id integer primary key, text text)</update>
          <insert id="write" arguments="text">insert into ${T} (text) values (#{text})</insert>
          <select id="read" result="[string]">select text from ${T} order by id</select>
        </module>
        """

    @Test func eachUserHasTheirOwnDatabase() throws {
        let engine = try fixture.engine(Self.perUser)
        try engine.write("Diary", "write", #"["ann's"]"#, user: "ann")
        try engine.write("Diary", "write", #"["bob's"]"#, user: "bob")
        #expect(try engine.value("Diary", "read", user: "ann") == ["ann's"])
        #expect(try engine.value("Diary", "read", user: "bob") == ["bob's"])
        #expect(fixture.dataFiles().filter { $0.hasSuffix(".db") } == ["users/p-ann.db", "users/p-bob.db"])
        let missing = engine.failure("Diary", "read")
        #expect(missing?.code == .userRequired)
        #expect(missing?.isCallersFault == true)
    }

    @Test(arguments: ["../../etc/passwd", "..", ".", "a/b", "/etc/passwd", "Alice", "ALICE", "a.b", "x-abc", "p-abc",
                      "%2e%2e", "~!@#$%^&*()", "a\\b", String(repeating: "z", count: 128)])
    func hostileUserIDsStayInsideTheUsersFolder(id: String) throws {
        let engine = try fixture.engine(Self.perUser)
        try engine.write("Diary", "write", #"["mine"]"#, user: id)
        #expect(try engine.value("Diary", "read", user: id) == ["mine"])
        let files = fixture.dataFiles().filter { $0.hasSuffix(".db") }
        #expect(files.count == 1)
        let name = try #require(files.first)
        #expect(name.hasPrefix("users/"))
        let fileName = String(name.dropFirst("users/".count).dropLast(".db".count))
        #expect(!fileName.contains("/") && !fileName.contains(".") && !fileName.contains("\0"))
        #expect(fileName == fileName.lowercased())
        #expect(fileName.utf8.count <= 207)
        #expect(UserID(fileName: fileName)?.rawValue == id)
    }

    @Test(arguments: ["", "a\u{0}b", "tab\there", "line\nbreak", "del\u{7F}", String(repeating: "x", count: 129),
                      String(repeating: "é", count: 65), String(repeating: "a", count: 10_240),
                      "a b", " ", "用户", "é", "\u{202E}evil", "zero\u{200B}width"])
    func invalidUserIDsAreRefusedAndTouchNothing(id: String) throws {
        let engine = try fixture.engine(Self.perUser)
        let error = engine.failure("Diary", "write", #"["x"]"#, user: id)
        #expect(error?.code == .invalidUser)
        #expect(error?.isCallersFault == true)
        #expect(fixture.dataFiles().isEmpty)
    }

    @Test func differentIDsNeverShareAFile() throws {
        let ids = ["a", "A", "b-", "b_", "x-mfrgg", "p-a", "ab", "a.", "a_", "_a", "A-", "~"]
        let names = Set(try ids.map { try UserID($0).fileName })
        #expect(names.count == ids.count)
    }

    @Test func logsNeverShowTheUserID() throws {
        let user = try UserID("alice@example.com")
        #expect(!user.description.contains("alice"))
        #expect(!DatabaseLocation.user(user, storage: nil).description.contains("alice"))
    }

    @Test func customStoragesHaveTheirOwnCommonAndUserDatabases() throws {
        let shared = try fixture.module("""
            <module name="Contacts" tableName="contacts" initializer="create" version="1.0" storage="Contact">
              <update id="create">create table if not exists ${T} (name text)</update>
              <insert id="add" arguments="name">insert into ${T} values (#{name})</insert>
              <select id="all" result="[string]">select name from ${T}</select>
            </module>
            """, file: "contacts.xml")
        let engine = try fixture.engine([shared, fixture.module(Self.perUser)])
        try engine.write("Contacts", "add", #"["in Contact"]"#)
        try engine.write("Contacts", "add", #"["in Other"]"#, storage: "Other")
        try engine.write("Diary", "write", #"["in Work"]"#, user: "ann", storage: "Work")
        #expect(try engine.value("Contacts", "all") == ["in Contact"])
        #expect(fixture.dataFiles().filter { $0.hasSuffix(".db") }
            == ["storages/Contact/common.db", "storages/Other/common.db", "storages/Work/users/p-ann.db"])
        for bad in ["../x", "a/b", "", ".hidden", "-x", String(repeating: "s", count: 65)] {
            #expect((try? engine.write("Contacts", "add", #"["x"]"#, storage: bad)) == nil)
        }
    }

    @Test func aModuleBoundToADatabaseFileUsesIt() throws {
        let engine = try fixture.engine("""
            <module name="Audit" tableName="audit" initializer="create" version="1.0" database="audit/log.db">
              <update id="create">create table if not exists ${T} (event text)</update>
              <insert id="log" arguments="event">insert into ${T} values (#{event})</insert>
            </module>
            """)
        try engine.write("Audit", "log", #"["started"]"#, user: "ignored")
        #expect(fixture.dataFiles().filter { $0.hasSuffix(".db") } == ["databases/audit/log.db"])
    }

    /// The header's read and write versions: 1 for a rollback journal, 2 for WAL.
    func journalVersions(_ relative: String) throws -> [UInt8] {
        let header = try Data(contentsOf: URL(fileURLWithPath: fixture.dataDirectory + "/" + relative))
        return [header[18], header[19]]
    }

    @Test func usersFilesHaveARollbackJournalAndTheCommonFileWAL() throws {
        let contacts = try fixture.module("""
            <module name="Contacts" tableName="contacts" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (name text)</update>
              <insert id="add" arguments="name">insert into ${T} values (#{name})</insert>
            </module>
            """, file: "contacts.xml")
        let engine = try fixture.engine([fixture.module(Self.perUser), contacts])
        try engine.write("Diary", "write", #"["ann's"]"#, user: "ann")
        try engine.write("Contacts", "add", #"["shared"]"#)
        #expect(try journalVersions("users/p-ann.db") == [1, 1])
        #expect(try journalVersions("common.db") == [2, 2])
        #expect(!fixture.dataFiles().contains("users/p-ann.db-wal"))
        #expect(engine.openDatabaseCost.descriptors == 1 + 3)  // ann's file; the common file, its -wal and -shm
    }

    @Test func manyUsersBeyondTheOpenFileCapAreServedWithinIt() throws {
        let engine = try fixture.engine([fixture.module(Self.perUser)], maximumOpenDatabases: 8)
        for user in 0..<120 {
            try engine.write("Diary", "write", #"["entry of \#(user)"]"#, user: "user\(user)")
            #expect(engine.openDatabaseCount <= 8)
        }
        for user in stride(from: 0, to: 120, by: 7) {
            #expect(try engine.value("Diary", "read", user: "user\(user)") == [.string("entry of \(user)")])
        }
        #expect(engine.openDatabaseCount <= 8)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for user in stride(from: worker, to: 120, by: 8) {
                do {
                    let entries = try engine.value("Diary", "read", user: "user\(user)")
                    #expect(entries == [.string("entry of \(user)")])
                } catch {
                    Issue.record(error)
                }
            }
        }
        #expect(fixture.dataFiles().filter { $0.hasSuffix(".db") }.count == 120)
    }

    /// The descriptors of this process open on files of the data folder.
    func descriptorsInData() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry))?.hasPrefix(fixture.dataDirectory) == true
        }.count
    }

    /// Files closed and re-opened all the time under concurrent writes and
    /// reads (a budget of 30 descriptors: 10 one-connection files) keep
    /// every acknowledged write, and the descriptors stay within the budget
    /// and what the calls in flight hold.
    @Test func filesClosedAndReopenedUnderLoadKeepEveryWrite() throws {
        let engine = try fixture.engine([fixture.module(Self.perUser)], maximumOpenDatabases: 100_000, maximumOpenDescriptors: 30)
        let users = 60
        let rounds = 10
        let threads = 6
        let peak = Atomic<Int>(0)
        let acknowledged = Mutex([Int](repeating: 0, count: users))
        DispatchQueue.concurrentPerform(iterations: threads) { worker in
            for round in 0..<rounds {
                for user in stride(from: worker, to: users, by: threads) {
                    do {
                        try engine.write("Diary", "write", #"["\#(round)"]"#, user: "u\(user)")
                        acknowledged.withLock { $0[user] += 1 }
                        // A read of another user's file meanwhile: it sees whole writes only.
                        let other = (user + 1 + round) % users
                        let before = acknowledged.withLock { $0[other] }
                        let seen = try engine.value("Diary", "read", user: "u\(other)")
                        if case .array(let entries) = seen { #expect(entries.count >= before) } else { Issue.record("\(seen)") }
                    } catch {
                        Issue.record(error)
                    }
                    peak.max(engine.openDatabaseCost.descriptors, ordering: .relaxed)
                }
            }
        }
        // Past the budget by at most one file per thread, each at most a writer and its readers.
        #expect(peak.load(ordering: .relaxed) <= 30 + threads * engine.configuration.descriptorsPerDatabase)
        #expect(descriptorsInData() <= 30)
        #expect(engine.openDatabaseCost.descriptors <= 30)
        for user in 0..<users {
            let entries = try engine.value("Diary", "read", user: "u\(user)")
            #expect(entries == .array((0..<rounds).map { .string("\($0)") }), "user \(user)")
        }
    }

    /// A file is opened outside the registry's lock: first calls that reach one file at once wait for the one
    /// open under way instead of opening a second pool (a second writer), so every write lands in one file,
    /// and the file is open once.
    @Test func firstCallsToOneFileAtOnceShareOneOpen() throws {
        let engine = try fixture.engine([fixture.module(Self.perUser)])
        let threads = 8
        for round in 0..<5 {
            let user = "same\(round)"
            DispatchQueue.concurrentPerform(iterations: threads) { worker in
                do {
                    try engine.write("Diary", "write", #"["\#(worker)"]"#, user: user)
                } catch {
                    Issue.record(error)
                }
            }
            let entries = try engine.value("Diary", "read", user: user)
            if case .array(let list) = entries {
                #expect(Set(list) == Set((0..<threads).map { Value.string("\($0)") }), "round \(round)")
            } else {
                Issue.record("\(entries)")
            }
            #expect(engine.openDatabaseCount == round + 1)
        }
    }

    /// Past seven eighths of the byte budget, files going idle give their
    /// cached pages back instead of being closed: twenty users whose files
    /// with their pages (about 31 kB each as estimated) would not fit in 580,000 bytes
    /// all stay open (about 26 kB each without), and read their rows again.
    @Test func filesGoingIdleUnderMemoryPressureFreeTheirPagesAndStayOpen() throws {
        let engine = try fixture.engine([fixture.module(Self.perUser)], maximumOpenDatabases: 100_000, maximumOpenBytes: 580_000)
        for user in 0..<20 {
            try engine.write("Diary", "write", #"["entry of \#(user)"]"#, user: "u\(user)")
            #expect(try engine.value("Diary", "read", user: "u\(user)") == [.string("entry of \(user)")])
            // With its pages, before any pressure, one file holds more than a twentieth of the budget.
            if user == 0 { #expect(engine.openDatabaseCost.bytes > 580_000 / 20) }
        }
        #expect(engine.openDatabaseCount == 20)
        #expect(engine.openDatabaseCost.bytes <= 580_000)
        for user in 0..<20 {
            #expect(try engine.value("Diary", "read", user: "u\(user)") == [.string("entry of \(user)")])
        }
        #expect(engine.openDatabaseCount == 20)
    }

    /// What a file's initializer and version check found is remembered
    /// while the file is closed: a re-open runs neither again, but a reset forgets it.
    @Test func aReopenedFileIsNotCheckedAgain() throws {
        let engine = try fixture.engine([fixture.module(Self.perUser)], maximumOpenDatabases: 1)
        try engine.write("Diary", "write", #"["ann's"]"#, user: "ann")
        try engine.write("Diary", "write", #"["bob's"]"#, user: "bob")  // closes ann's file
        #expect(engine.openDatabaseCount == 1)
        // Behind the engine's back, ann's table goes: a re-open that checked again would create it.
        let path = fixture.dataDirectory + "/users/p-ann.db"
        let pool = try DatabasePool(path: path)
        try pool.write { try $0.execute("drop table entries") }
        pool.close()
        let failure = engine.failure("Diary", "read", user: "ann")
        #expect(failure != nil, "the table was checked again")
    }

    // MARK: Resets

    /// Diary entries for ann and bob in the default storage and in Work, a shared
    /// Contacts entry in the common database, and a bound file.
    func populated() throws -> Engine {
        let contacts = try fixture.module("""
            <module name="Contacts" tableName="contacts" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (name text)</update>
              <insert id="add" arguments="name">insert into ${T} values (#{name})</insert>
              <select id="all" result="[string]">select name from ${T}</select>
            </module>
            """, file: "contacts.xml")
        let audit = try fixture.module("""
            <module name="Audit" tableName="audit" initializer="create" version="1.0" database="audit/log.db">
              <update id="create">create table if not exists ${T} (event text)</update>
              <insert id="log" arguments="event">insert into ${T} values (#{event})</insert>
            </module>
            """, file: "audit.xml")
        let engine = try fixture.engine([fixture.module(Self.perUser), contacts, audit])
        for user in ["ann", "bob"] {
            try engine.write("Diary", "write", #"["\#(user)'s"]"#, user: user)
            try engine.write("Diary", "write", #"["\#(user) at work"]"#, user: user, storage: "Work")
        }
        try engine.write("Contacts", "add", #"["shared"]"#)
        try engine.write("Audit", "log", #"["kept"]"#)
        return engine
    }

    @Test func resettingAUserRemovesOnlyTheirDatabase() throws {
        let engine = try populated()
        let report = try engine.resetStorage(nil, user: try UserID("ann"))
        #expect(report.databases == 1 && report.bytes > 0)
        #expect(!fixture.dataFiles().contains { $0.hasPrefix("users/p-ann.db") })
        #expect(try engine.value("Diary", "read", user: "ann") == [])
        #expect(try engine.value("Diary", "read", user: "bob") == ["bob's"])
        #expect(try engine.value("Diary", "read", user: "ann", storage: "Work") == ["ann at work"])
        #expect(try engine.resetStorage(nil, user: try UserID("nobody")) == ResetReport())
    }

    @Test func resettingAStorageRemovesItsCommonAndUserDatabasesOnly() throws {
        let engine = try populated()
        let report = try engine.resetStorage(nil, user: nil)
        #expect(report.databases == 3)
        #expect(fixture.dataFiles().filter { $0.hasSuffix(".db") }
            == ["databases/audit/log.db", "storages/Work/users/p-ann.db", "storages/Work/users/p-bob.db"])
        #expect(try engine.value("Contacts", "all") == [])
        #expect(try engine.value("Diary", "read", user: "ann", storage: "Work") == ["ann at work"])

        #expect(try engine.resetStorage("Work", user: nil).databases == 2)
        #expect(!FileManager.default.fileExists(atPath: fixture.dataDirectory + "/storages/Work"))
        #expect(try engine.value("Diary", "read", user: "ann", storage: "Work") == [])
        #expect(engine.customStorages() == ["Work"])
        #expect(throws: EngineError.self) { try engine.resetStorage("../x", user: nil) }
    }

    @Test func callsDuringAResetWaitOrAreBusyAndNeverSeeHalfAFile() throws {
        let engine = try populated()
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for round in 0..<40 {
                do {
                    if worker == 0 && round % 8 == 0 {
                        _ = try engine.resetStorage(nil, user: try UserID("ann"))
                    } else {
                        try engine.write("Diary", "write", #"["w\#(worker)"]"#, user: "ann")
                        _ = try engine.value("Diary", "read", user: "ann")
                    }
                } catch let error as EngineError where error.code == .busy {
                    continue
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try engine.value("Diary", "read", user: "bob") == ["bob's"])
    }

    @Test func theCurrentVersionStorageIsResetWhenTheDeploymentVersionChanges() throws {
        let engine = try populated()
        #expect(try !engine.prepareCurrentVersionStorage(version: "1.0"))
        try engine.write("Diary", "write", #"["v1"]"#, user: "ann", storage: Engine.currentVersionStorage)
        #expect(try !engine.prepareCurrentVersionStorage(version: "1.0"))
        #expect(try engine.value("Diary", "read", user: "ann", storage: Engine.currentVersionStorage) == ["v1"])
        #expect(try engine.prepareCurrentVersionStorage(version: "2.0"))
        #expect(try engine.value("Diary", "read", user: "ann", storage: Engine.currentVersionStorage) == [])
        #expect(try engine.value("Diary", "read", user: "ann", storage: "Work") == ["ann at work"])
        #expect(try String(contentsOfFile: fixture.dataDirectory + "/deployment-version", encoding: .utf8) == "2.0")
    }
}
