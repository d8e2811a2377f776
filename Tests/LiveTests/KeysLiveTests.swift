import Foundation
import Synchronization
import Testing

/// A keyring served by a real `daogate serve`: keys by id, rotation with `daogate rekey` while the server
/// serves, a module's own key, plaintext left in a column that became `crypt`.
@Suite(.serialized) struct KeysLiveTests {
    static let notes = """
        <module name="Notes" initializer="create" tableName="notes" version="1.0" userDependent="true">
          <crypt class="Note" property="body"/>
          <update id="create">create table if not exists ${T} (id integer primary key, body blob)</update>
          <insert id="add" arguments="model:Note">insert into ${T} (id, body) values (#{model.id}, #{model.body})</insert>
          <select id="all" result="[Note]">select id, body from ${T} order by id</select>
        </module>
        """
    static let archive = """
        <module name="Archive" initializer="create" tableName="archive" version="1.0" key="archive">
          <crypt class="Entry" property="text"/>
          <update id="create">create table if not exists ${T} (id integer primary key, text blob)</update>
          <insert id="add" arguments="model:Entry">insert into ${T} (id, text) values (#{model.id}, #{model.text})</insert>
          <select id="all" result="[Entry]">select id, text from ${T} order by id</select>
        </module>
        """
    static let token = "rekey-admin-token-0123456789"

    /// A folder with modules, a key folder and an admin token file.
    struct Setup {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-keys-\(UUID().uuidString)")
        var modules: String { folder.appendingPathComponent("modules").path }
        var keys: String { folder.appendingPathComponent("keys").path }
        var tokenFile: String { folder.appendingPathComponent("token").path }

        init(modules: [String: String], keys: [String: [UInt8]], current: String) throws {
            try FileManager.default.createDirectory(atPath: folder.appendingPathComponent("modules").path, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: folder.appendingPathComponent("keys").path, withIntermediateDirectories: true)
            for (name, xml) in modules { try write(xml, to: self.modules + "/" + name) }
            for (id, bytes) in keys { try Data(bytes).write(to: URL(fileURLWithPath: self.keys + "/\(id).key")) }
            try write(current, to: self.keys + "/current")
            try write(KeysLiveTests.token, to: tokenFile)
        }

        func write(_ text: String, to path: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }

        func serve(extra: [String] = []) throws -> LiveServer {
            try LiveServer(arguments: ["--key-dir", keys, "--admin-token-file", tokenFile] + extra, modules: modules,
                           folder: folder)
        }

        /// Runs `daogate rekey` through `server`: its status, standard output and standard error.
        func rekey(through server: LiveServer) throws -> (status: Int32, output: String, errors: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: LiveServer.binary)
            process.arguments = ["rekey", "--data", server.data.path, "--modules", modules, "--key-dir", keys,
                                 "--server", "127.0.0.1:\(server.port)", "--admin-token-file", tokenFile]
            process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let out = output.fileHandleForReading.readDataToEndOfFile()
            let err = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        }
    }

    static func randomKey() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255) } }

    /// Sends SIGHUP and waits for the log line of the key folder's reload (either outcome).
    func reloadKeys(_ server: LiveServer) throws {
        let before = server.log.components(separatedBy: "SIGHUP: ").count
        kill(server.process.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(10)
        while server.log.components(separatedBy: "SIGHUP: ").count <= before {
            guard Date() < deadline else { throw LiveError("no SIGHUP reload in the log: \(server.log)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 0.2)
    }

    func json(_ text: String) -> [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] }

    @Test func keysRotateWhileTheServerServesAndTheOldKeyCanGo() throws {
        let setup = try Setup(modules: ["notes.xml": Self.notes, "archive.xml": Self.archive],
                              keys: ["old": Self.randomKey(), "archive": Self.randomKey()], current: "old")
        defer { try? FileManager.default.removeItem(at: setup.folder) }
        let server = try setup.serve()
        let users = ["ann", "bob", "carol"]
        for user in users {
            for id in 1...20 {
                let reply = try server.curl("/dao/Notes/add", method: "POST", body: #"[{"id": \#(id), "body": "\#(user) \#(id)"}]"#,
                                            headers: ["X-User-Id: \(user)"])
                #expect(reply.status == 200, "\(reply.body)")
            }
            #expect(try server.curl("/kv/user/biz/secret", method: "PUT", body: #"{"value": "kv \#(user)", "encrypted": true}"#,
                                    headers: ["X-User-Id: \(user)"]).status == 200)
        }
        #expect(try server.curl("/dao/Archive/add", method: "POST", body: #"[{"id": 1, "text": "kept"}]"#).status == 200)

        // A new current key; the old one removed too early: the values it wrote name it.
        try Data(Self.randomKey()).write(to: URL(fileURLWithPath: setup.keys + "/new.key"))
        try setup.write("new", to: setup.keys + "/current")
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: setup.keys + "/old.key"))
        try FileManager.default.removeItem(atPath: setup.keys + "/old.key")
        try reloadKeys(server)
        let missing = try server.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: ann"])
        #expect(missing.status == 500)
        #expect(missing.code == "key_missing")
        #expect(missing.json?["keyId"] as? String == "old")
        #expect((missing.json?["detail"] as? String)?.contains("'old'") == true)
        let kvMissing = try server.curl("/kv/user/biz/secret", headers: ["X-User-Id: ann"])
        #expect(kvMissing.code == "key_missing")

        // The key back; a module's own key cannot be removed under it.
        try oldKey.write(to: URL(fileURLWithPath: setup.keys + "/old.key"))
        let archiveKey = try Data(contentsOf: URL(fileURLWithPath: setup.keys + "/archive.key"))
        try FileManager.default.removeItem(atPath: setup.keys + "/archive.key")
        try reloadKeys(server)
        #expect(server.log.contains("the key folder was not reloaded"))
        try archiveKey.write(to: URL(fileURLWithPath: setup.keys + "/archive.key"))
        try reloadKeys(server)
        #expect(try server.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: ann"]).status == 200)

        // The rekey, with writes going on all along.
        final class Writes: @unchecked Sendable {
            let lock = NSLock()
            var ids: [String: [Int]] = [:]
            var stop = false
            func withLock<T>(_ body: (Writes) -> T) -> T { lock.withLock { body(self) } }
        }
        let writes = Writes()
        let writer = Thread { [server] in
            var id = 100
            while !writes.withLock({ $0.stop }) {
                for user in users {
                    if let reply = try? server.curl("/dao/Notes/add", method: "POST", body: #"[{"id": \#(id), "body": "\#(user) \#(id)"}]"#,
                                                    headers: ["X-User-Id: \(user)"]), reply.status == 200 {
                        writes.withLock { $0.ids[user, default: []].append(id) }
                    }
                }
                id += 1
            }
        }
        writer.start()
        Thread.sleep(forTimeInterval: 0.3)
        let rekey = try setup.rekey(through: server)
        Thread.sleep(forTimeInterval: 0.3)
        writes.withLock { $0.stop = true }
        while !writer.isFinished { Thread.sleep(forTimeInterval: 0.05) }
        #expect(rekey.status == 0, "\(rekey.errors)")
        let summary = json(rekey.output)
        #expect(summary?["currentKey"] as? String == "new")
        #expect(summary?["failed"] as? Int == 0)
        #expect((summary?["reencrypted"] as? Int ?? 0) >= 3 * 20 + 3)
        #expect(rekey.errors.contains("rekeying through it"))
        #expect(writes.withLock { $0.ids.values.map(\.count).reduce(0, +) } > 0)

        // The server keeps the last rekey's counts.
        let status = try server.curl("/admin/rekey", headers: ["Authorization: Bearer \(Self.token)"])
        #expect(status.json?["running"] as? Bool == false)
        #expect(status.json?["databases"] as? Int == 4)  // the common file and three users'
        #expect(status.json?["currentKey"] as? String == "new")

        // Again: nothing left.
        let again = try setup.rekey(through: server)
        #expect(json(again.output)?["reencrypted"] as? Int == 0)

        // The old key gone for good: every value still reads, the concurrent writes included.
        try FileManager.default.removeItem(atPath: setup.keys + "/old.key")
        try reloadKeys(server)
        #expect(server.log.contains("loaded (archive, new)"))
        for user in users {
            let reply = try server.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: \(user)"])
            #expect(reply.status == 200, "\(reply.body)")
            let rows = (reply.json?["result"] as? [[String: Any]]) ?? []
            let expected = Array(1...20) + writes.withLock { $0.ids[user] ?? [] }
            #expect(rows.map { $0["id"] as? Int ?? -1 } == expected)
            #expect(rows.allSatisfy { ($0["body"] as? String) == "\(user) \($0["id"] as? Int ?? -1)" })
            #expect(try server.curl("/kv/user/biz/secret", headers: ["X-User-Id: \(user)"]).json?["value"] as? String == "kv \(user)")
        }
        let archived = try server.curl("/dao/Archive/all", method: "POST")
        #expect(archived.status == 200, "\(archived.body)")
        // The module's own key: its value was written with `archive` and stays there.
        let raw = try run("/usr/bin/sqlite3", [server.data.path + "/common.db", "select hex(substr(text, 1, 11)) from archive"])
        #expect(raw.trimmingCharacters(in: .whitespacesAndNewlines) == "4447020761726368697665")  // "DG" 2 7 "archive"
        // A restart reads the folder as it is now.
        #expect(server.stop() == 0)
        let restarted = try setup.serve()
        #expect(try restarted.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: bob"]).status == 200)
    }

    /// Runs `daogate rekey` in its own process (no --server): its status, standard output and standard error.
    func rekeyAlone(_ setup: Setup, data: String) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LiveServer.binary)
        process.arguments = ["rekey", "--data", data, "--modules", setup.modules, "--key-dir", setup.keys]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test func rekeyWithoutAServerTakesTheDataFolderAndWithOneNeedsIt() throws {
        let setup = try Setup(modules: ["notes.xml": Self.notes], keys: ["one": Self.randomKey()], current: "one")
        defer { try? FileManager.default.removeItem(at: setup.folder) }
        let server = try setup.serve()
        for user in ["ann", "bob"] {
            #expect(try server.curl("/dao/Notes/add", method: "POST", body: #"[{"id": 1, "body": "\#(user)"}]"#,
                                    headers: ["X-User-Id: \(user)"]).status == 200)
        }
        try Data(Self.randomKey()).write(to: URL(fileURLWithPath: setup.keys + "/two.key"))
        try setup.write("two", to: setup.keys + "/current")
        // The server holds the folder: without --server, nothing is done.
        let refused = try rekeyAlone(setup, data: server.data.path)
        #expect(refused.status == 1)
        #expect(refused.errors.contains("give --server"), "\(refused.errors)")
        #expect(server.stop() == 0)
        let alone = try rekeyAlone(setup, data: server.data.path)
        #expect(alone.status == 0, "\(alone.errors)")
        #expect(json(alone.output)?["reencrypted"] as? Int == 2)
        #expect(alone.errors.components(separatedBy: "\n").filter { $0.hasPrefix("rekey: ") }.count >= 3, "\(alone.errors)")
        try FileManager.default.removeItem(atPath: setup.keys + "/one.key")
        let restarted = try setup.serve()
        let reply = try restarted.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: bob"])
        #expect((reply.json?["result"] as? [[String: Any]])?.first?["body"] as? String == "bob", "\(reply.body)")
    }

    @Test func aModuleNamingAKeyTheRingLacksDoesNotStart() throws {
        let setup = try Setup(modules: ["archive.xml": Self.archive], keys: ["main": Self.randomKey()], current: "main")
        defer { try? FileManager.default.removeItem(at: setup.folder) }
        let refusal = try LiveServer.refusal(["--modules", setup.modules, "--data", setup.folder.path + "/data", "--port", "0",
                                              "--key-dir", setup.keys])
        #expect(refusal.status != 0)
        #expect(refusal.output.contains("names the key 'archive'"), "\(refusal.output)")
    }

    /// Values written before key ids (format 1) read with the one-key configuration, whose key is `default`.
    @Test func valuesWrittenBeforeKeyIdsStillRead() throws {
        let setup = try Setup(modules: ["notes.xml": Self.notes], keys: ["default": (0..<32).map(UInt8.init)], current: "default")
        defer { try? FileManager.default.removeItem(at: setup.folder) }
        let keyFile = setup.keys + "/default.key"
        let first = try LiveServer(arguments: ["--key-file", keyFile], modules: setup.modules, folder: setup.folder)
        #expect(try first.curl("/dao/Notes/add", method: "POST", body: #"[{"id": 1, "body": "new format"}]"#,
                                headers: ["X-User-Id: ann"]).status == 200)
        #expect(first.stop() == 0)
        // A format 1 ciphertext, as daogate wrote them before key ids, made by Python's cryptography.
        let file = try FileManager.default.contentsOfDirectory(atPath: setup.folder.path + "/data/users").first { $0.hasSuffix(".db") }!
        _ = try run("/usr/bin/sqlite3", [setup.folder.path + "/data/users/" + file,
                                         "insert into notes (id, body) values (2, x'\(Self.version1Body)')"])
        let server = try LiveServer(arguments: ["--key-file", keyFile], modules: setup.modules, folder: setup.folder)
        let reply = try server.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: ann"])
        #expect(reply.status == 200, "\(reply.body)")
        #expect((reply.json?["result"] as? [[String: Any]])?.compactMap { $0["body"] as? String } == ["new format", "old format"])
        withExtendedLifetime(first) {}
    }

    /// AES-256-GCM of the payload 01 "old format" with the key 00…1f, nonce a0…ab and associated data
    /// "DG" 01 "body", in format 1: magic, version, nonce, ciphertext, tag.
    static let version1Body = "444701a0a1a2a3a4a5a6a7a8a9aaabe777104965ad6dcd0f04f31074ac2fe85d1c46de08d84147b4d13e"

    @Test func plaintextOfAColumnThatBecameCryptReadsUntilRekeyEncryptsIt() throws {
        let plain = Self.notes.replacingOccurrences(of: #"  <crypt class="Note" property="body"/>"#, with: "")
        let setup = try Setup(modules: ["notes.xml": plain], keys: ["k1": Self.randomKey()], current: "k1")
        defer { try? FileManager.default.removeItem(at: setup.folder) }
        let server = try setup.serve()
        #expect(try server.curl("/dao/Notes/add", method: "POST", body: #"[{"id": 1, "body": "written plain"}]"#,
                                headers: ["X-User-Id: ann"]).status == 200)
        try setup.write(Self.notes, to: setup.modules + "/notes.xml")
        #expect(try server.curl("/admin/reload", method: "POST", headers: ["Authorization: Bearer \(Self.token)"]).status == 200)
        #expect(try server.curl("/dao/Notes/add", method: "POST", body: #"[{"id": 2, "body": "written encrypted"}]"#,
                                headers: ["X-User-Id: ann"]).status == 200)
        let before = try server.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: ann"])
        #expect(before.status == 200, "\(before.body)")
        #expect((before.json?["result"] as? [[String: Any]])?.compactMap { $0["body"] as? String } == ["written plain", "written encrypted"])
        let rekey = try setup.rekey(through: server)
        #expect(json(rekey.output)?["encrypted"] as? Int == 1, "\(rekey.output) \(rekey.errors)")
        let file = try FileManager.default.contentsOfDirectory(atPath: server.data.path + "/users").first { $0.hasSuffix(".db") }!
        let raw = try run("/usr/bin/sqlite3", [server.data.path + "/users/" + file, "select typeof(body), hex(substr(body, 1, 3)) from notes order by id"])
        #expect(raw == "blob|444702\nblob|444702\n")
        let after = try server.curl("/dao/Notes/all", method: "POST", headers: ["X-User-Id: ann"])
        #expect((after.json?["result"] as? [[String: Any]])?.compactMap { $0["body"] as? String } == ["written plain", "written encrypted"])
    }
}
