import DAODialect
import DAOEngine
import SQLiteDatabase
import DAOValue
import Foundation
import Synchronization
import Testing

/// The caps on what is stored (`DiskQuotas`): one user's files of every storage together, the common
/// space's files of every storage together, and the number of custom storages one user has.
@Suite struct StorageQuotaTests {
    let fixture = EngineFixture()
    static let cap = 128 * 1024
    static let note = #"["\#(String(repeating: "n", count: 6000))"]"#

    func notes(userDependent: Bool) throws -> Module {
        try fixture.module("""
            <module name="\(userDependent ? "Notes" : "Shared")" initializer="create" tableName="\(userDependent ? "notes" : "shared")" version="1.0" userDependent="\(userDependent)">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              <insert id="add" arguments="body">insert into ${T} (body) values (#{body})</insert>
            </module>
            """, file: "notes-\(userDependent).xml")
    }

    func engine(userBytes: Int? = cap, commonBytes: Int? = nil, storages: Int? = 16) throws -> Engine {
        var configuration = Engine.Configuration(dataDirectory: fixture.dataDirectory,
                                                 database: DatabaseConfiguration(maximumDatabaseBytes: userBytes))
        configuration.maximumCommonBytes = commonBytes
        configuration.maximumStoragesPerUser = storages
        return try Engine(modules: [try notes(userDependent: true), try notes(userDependent: false)], configuration: configuration)
    }

    /// Adds notes until one is refused; the notes added and the refusal's code.
    static func fill(_ engine: Engine, module: String = "Notes", user: String?, storage: String?,
                     limit: Int = 40) -> (added: Int, refusal: EngineError.Code?) {
        for added in 0..<limit {
            do {
                _ = try engine.call(Call(module: module, method: "add",
                                         arguments: try Value(parsingJSON: note, options: JSONParseOptions())),
                                    context: CallContext(user: user, storage: storage))
            } catch {
                return (added, (error as? EngineError)?.code)
            }
        }
        return (limit, nil)
    }

    /// Bytes on disk of the files whose path relative to the data folder ends so.
    func bytesOnDisk(endingWith suffix: String) -> Int {
        fixture.dataFiles().filter { $0.hasSuffix(suffix) }.reduce(0) { total, file in
            let size = (try? FileManager.default.attributesOfItem(atPath: fixture.dataDirectory + "/" + file)[.size] as? NSNumber)??.intValue
            return total + (size ?? 0)
        }
    }

    @Test func aUsersCapCoversAllTheirStorages() throws {
        let engine = try engine()
        defer { engine.shutdown() }
        var added = Self.fill(engine, user: "ann", storage: nil, limit: 5).added
        for storage in ["s1", "s2", "s3"] {
            let filled = Self.fill(engine, user: "ann", storage: storage)
            #expect(filled.refusal == .storageFull)
            added += filled.added
        }
        #expect(added * 6000 <= Self.cap)
        #expect(bytesOnDisk(endingWith: "p-ann.db") <= Self.cap)
        #expect(bytesOnDisk(endingWith: "p-ann.db") >= Self.cap * 3 / 4)
        // Another user has a cap of their own.
        #expect(Self.fill(engine, user: "bob", storage: "s1", limit: 5).added == 5)
        // A reset storage's bytes are room again, in any storage.
        #expect(Self.fill(engine, user: "ann", storage: nil).refusal == .storageFull)
        #expect(bytesOnDisk(endingWith: "p-ann.db") <= Self.cap)
        _ = try engine.resetStorage("s1", user: try UserID("ann"))
        #expect(Self.fill(engine, user: "ann", storage: nil, limit: 2).added == 2)
    }

    /// The cap holds at a restart, when the user's other files are only on disk.
    @Test func aRestartReadsTheOtherStoragesOnDisk() throws {
        var engine = try engine()
        _ = Self.fill(engine, user: "ann", storage: "s1", limit: 15)
        engine.shutdown()
        engine = try self.engine()
        defer { engine.shutdown() }
        let filled = Self.fill(engine, user: "ann", storage: nil)
        #expect(filled.refusal == .storageFull)
        #expect(bytesOnDisk(endingWith: "p-ann.db") <= Self.cap)
        #expect(filled.added < 10)
    }

    /// Writes to four storages of one user at once share the cap: together they stay within it.
    @Test(.timeLimit(.minutes(1)))
    func concurrentWritesToSeveralStoragesStayWithinTheCap() throws {
        let engine = try engine()
        defer { engine.shutdown() }
        let refusals = Mutex<[EngineError.Code?]>([])
        let group = DispatchGroup()
        for storage in ["a", "b", "c", "d"] {
            group.enter()
            Thread {
                let filled = Self.fill(engine, user: "ann", storage: storage)
                refusals.withLock { $0.append(filled.refusal) }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(refusals.withLock { $0 } == [.storageFull, .storageFull, .storageFull, .storageFull])
        #expect(bytesOnDisk(endingWith: "p-ann.db") <= Self.cap)
    }

    @Test func theCommonSpaceOfEveryStorageSharesItsCap() throws {
        let engine = try engine(userBytes: nil, commonBytes: Self.cap)
        defer { engine.shutdown() }
        var added = 0
        for storage in [nil, "c1", "c2"] as [String?] {
            let filled = Self.fill(engine, module: "Shared", user: nil, storage: storage)
            #expect(filled.refusal == .storageFull)
            added += filled.added
        }
        #expect(added * 6000 <= Self.cap)
        #expect(bytesOnDisk(endingWith: "common.db") <= Self.cap)
        // Users have no cap here.
        #expect(Self.fill(engine, user: "ann", storage: nil, limit: 30).added == 30)
    }

    @Test func aUserHasAtMostTheStoragesAllowed() throws {
        let engine = try engine(userBytes: nil, storages: 2)
        defer { engine.shutdown() }
        #expect(Self.fill(engine, user: "ann", storage: "one", limit: 1).added == 1)
        #expect(Self.fill(engine, user: "ann", storage: "two", limit: 1).added == 1)
        let refused = Self.fill(engine, user: "ann", storage: "three", limit: 1)
        #expect(refused.refusal == .tooManyStorages)
        #expect(!fixture.dataFiles().contains { $0.hasPrefix("storages/three/") })
        // The default storage does not count, nor another user's storages.
        #expect(Self.fill(engine, user: "ann", storage: nil, limit: 1).added == 1)
        #expect(Self.fill(engine, user: "bob", storage: "three", limit: 1).added == 1)
        _ = try engine.resetStorage("one", user: try UserID("ann"))
        #expect(Self.fill(engine, user: "ann", storage: "three", limit: 1).added == 1)
        #expect(Self.fill(engine, user: "ann", storage: "one", limit: 1).refusal == .tooManyStorages)
    }

    /// Creations of storages at once take the last places once each.
    @Test(.timeLimit(.minutes(1)))
    func concurrentCreationsDoNotPassTheBound() throws {
        let engine = try engine(userBytes: nil, storages: 3)
        defer { engine.shutdown() }
        let added = Atomic<Int>(0)
        let group = DispatchGroup()
        for index in 0..<8 {
            group.enter()
            Thread {
                if Self.fill(engine, user: "ann", storage: "s\(index)", limit: 1).added == 1 { added.add(1, ordering: .relaxed) }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(added.load(ordering: .relaxed) == 3)
        #expect(fixture.dataFiles().filter { $0.hasSuffix("/users/p-ann.db") }.count == 3)
    }
}
