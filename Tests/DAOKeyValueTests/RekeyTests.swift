import DAODialect
import DAOEngine
import SQLiteDatabase
import DAOKeyValue
import DAOValue
import Foundation
import Testing

/// `daogate rekey`'s work: every encrypted value of every file written again with its target key.
@Suite struct RekeyTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-rekey-\(UUID().uuidString)")
    var data: String { root.appendingPathComponent("data").path }
    static let users = ["ann", "bob", "eve"]

    static let modules = [
        """
        <module name="Notes" initializer="create" tableName="notes" version="1.0" userDependent="true">
          <crypt class="Note" property="body"/>
          <update id="create">create table if not exists ${T} (id integer primary key, body blob, title text)</update>
          <insert id="add" arguments="model:Note">insert into ${T} (id, body, title) values (#{model.id}, #{model.body}, #{model.title})</insert>
          <select id="all" result="[Note]">select id, body, title from ${T} order by id</select>
        </module>
        """,
        """
        <module name="Archive" initializer="create" tableName="archive" version="1.0" key="archive">
          <crypt class="Entry" property="text"/>
          <update id="create">create table if not exists ${T} (id integer primary key, text blob)</update>
          <insert id="add" arguments="model:Entry">insert into ${T} (id, text) values (#{model.id}, #{model.text})</insert>
          <select id="all" result="[Entry]">select id, text from ${T} order by id</select>
        </module>
        """,
    ]

    func loadModules() throws -> [Module] {
        let folder = root.appendingPathComponent("modules")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try Self.modules.enumerated().map { index, xml in
            let url = folder.appendingPathComponent("m\(index).xml")
            try Data(xml.utf8).write(to: url)
            return try ModuleLoader.load(file: url.path)
        }
    }

    func call(_ engine: Engine, _ module: String, _ method: String, _ arguments: String, user: String? = nil) throws -> CallResult {
        try engine.call(Call(module: module, method: method, arguments: Value(parsingJSON: arguments)), context: CallContext(user: user))
    }

    /// The key ids of every ciphertext in `table.column` of `location`, and the count of plaintext values there.
    func stored(_ engine: Engine, _ location: DatabaseLocation, _ table: String, _ column: String) throws -> (ids: [String], plain: Int) {
        try engine.withOpenDatabase(location) { database in
            try database.pool.read { db in
                let statement = try db.makeStatement("SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL")
                var ids: [String] = []
                var plain = 0
                while try statement.step() {
                    if case .blob(let bytes) = statement.value(at: 0), let id = Cipher.keyID(of: bytes)?.id { ids.append(id) } else { plain += 1 }
                }
                return (ids, plain)
            }
        }
    }

    @Test func rekeyMovesEveryValueToItsTargetKeyResumablyAndTheOldKeyCanGo() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let keys = ["old": try CipherKey.generate(), "new": try CipherKey.generate(), "archive": try CipherKey.generate()]
        let keyring = Keyring(try Keyring.Snapshot(keys: keys, current: "old"))
        let cipher = Cipher(keyring: keyring)
        let engine = try Engine(modules: try loadModules(), configuration: .init(dataDirectory: data, cipher: cipher))
        defer { engine.shutdown() }
        let kv = KVStore(engine: engine, cipher: cipher)
        let caches = DiskCaches(engine: engine, cipher: cipher)
        let extra = DatabaseLocation.user(try UserID("ann"), storage: "extra")

        for (index, user) in Self.users.enumerated() {
            for id in 1...3 {
                try call(engine, "Notes", "add", #"[{"id": \#(id), "body": "\#(user)-\#(id)", "title": "t\#(id)"}]"#, user: user)
            }
            let location = DatabaseLocation.user(try UserID(user), storage: nil)
            _ = try kv.set("biz", "secret", value: .string("kv-\(user)"), type: nil, encrypted: true, purgeable: false, in: location)
            _ = try kv.set("biz", "open", value: .integer(Int64(index)), type: nil, encrypted: false, purgeable: false, in: location)
            try caches.create("c", in: location, capacity: 10, encrypted: true)
            _ = try caches.set("c", in: location, key: "k", value: .string("cache-\(user)"))
        }
        _ = try kv.set("biz", "secret", value: .string("kv-extra"), type: nil, encrypted: true, purgeable: false, in: extra)
        try call(engine, "Archive", "add", #"[{"id": 1, "text": "archived"}]"#)
        // A plaintext body: written before `body` was declared crypt.
        try engine.withOpenDatabase(.user(try UserID("eve"), storage: nil)) { database in
            try database.pool.write { try $0.execute("INSERT INTO notes (id, body, title) VALUES (9, 'plain-eve', 't9')") }
        }

        keyring.replace(with: try Keyring.Snapshot(keys: keys, current: "new"))
        // Stopped after the second file (the common one, then ann's), as a killed run would be …
        struct Stop: Error {}
        var job = RekeyJob(engine: engine, cipher: cipher)
        job.batchSize = 2
        #expect(throws: Stop.self) { try job.run { report, _ in if report.databases == 2 { throw Stop() } } }
        // … and run again: it continues.
        let second = try job.run()
        #expect(second.failed == 0)
        #expect(second.encrypted == 1)
        #expect(second.databases == 5)  // common, three users, and ann's in the storage "extra"
        // 16 ciphertexts were on the old key (9 notes, 4 KV entries, 3 cache entries): ann's 5 moved in the first run.
        #expect(second.reencrypted == 16 - 5)
        for user in Self.users {
            let location = DatabaseLocation.user(try UserID(user), storage: nil)
            #expect(try stored(engine, location, "notes", "body") == (Array(repeating: "new", count: user == "eve" ? 4 : 3), 0))
            #expect(try stored(engine, location, "daogate_kv", "value").ids == ["new"])
            #expect(try stored(engine, location, "daogate_lru_c", "value").ids == ["new"])
        }
        #expect(try stored(engine, .common(storage: nil), "archive", "text").ids == ["archive"])
        #expect(try stored(engine, extra, "daogate_kv", "value").ids == ["new"])

        // Nothing left to do.
        let third = try job.run()
        #expect((third.reencrypted, third.encrypted, third.failed) == (0, 0, 0))

        // The old key removed: everything still reads.
        keyring.replace(with: try Keyring.Snapshot(keys: ["new": keys["new"]!, "archive": keys["archive"]!], current: "new"))
        for user in Self.users {
            let location = DatabaseLocation.user(try UserID(user), storage: nil)
            guard case .value(let notes) = try call(engine, "Notes", "all", "null", user: user) else { Issue.record("no value"); continue }
            var expected: [Value] = (1...3).map { ["id": .integer(Int64($0)), "body": .string("\(user)-\($0)"), "title": .string("t\($0)")] }
            if user == "eve" { expected.append(["id": 9, "body": "plain-eve", "title": "t9"]) }
            #expect(notes == .array(expected))
            #expect(try kv.get("biz", "secret", in: location)?.value == .string("kv-\(user)"))
            #expect(try caches.get("c", in: location, key: "k") == .string("cache-\(user)"))
        }
        #expect(try kv.get("biz", "secret", in: extra)?.value == "kv-extra")
        guard case .value(let archived) = try call(engine, "Archive", "all", "null") else { Issue.record("no value"); return }
        #expect(archived == [["id": 1, "text": "archived"]])
    }

    @Test func aValueWhoseKeyIsGoneIsReportedAndLeftAsItIs() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let lost = try CipherKey.generate()
        let kept = try CipherKey.generate()
        let keyring = Keyring(try Keyring.Snapshot(keys: ["lost": lost, "kept": kept], current: "lost"))
        let cipher = Cipher(keyring: keyring)
        let engine = try Engine(modules: [], configuration: .init(dataDirectory: data, cipher: cipher))
        defer { engine.shutdown() }
        let kv = KVStore(engine: engine, cipher: cipher)
        let ann = DatabaseLocation.user(try UserID("ann"), storage: nil)
        _ = try kv.set("biz", "a", value: "x", type: nil, encrypted: true, purgeable: false, in: ann)
        keyring.replace(with: try Keyring.Snapshot(keys: ["kept": kept], current: "kept"))
        let report = try RekeyJob(engine: engine, cipher: cipher).run()
        #expect(report.failed == 1)
        #expect(report.failures.first?.message.contains("'lost'") == true)
        #expect(try stored(engine, ann, "daogate_kv", "value").ids == ["lost"])
        let error = #expect(throws: EngineError.self) { try kv.get("biz", "a", in: ann) }
        #expect(error?.code == .keyMissing)
        #expect(error?.keyID == "lost")
    }
}
