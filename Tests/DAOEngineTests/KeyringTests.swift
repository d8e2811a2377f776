import CSQLite
import DAODialect
@testable import DAOEngine
import DAOValue
import Foundation
import Testing

/// A keyring's keys by id: new values record the current key's id, any key of the ring reads them,
/// values written before ids read with `default`, a module may name its own key.
@Suite struct KeyringTests {
    let fixture = EngineFixture()

    static func ring(_ ids: [String], current: String) throws -> (Keyring, [String: CipherKey]) {
        var keys: [String: CipherKey] = [:]
        for id in ids { keys[id] = try CipherKey.generate() }
        return (Keyring(try Keyring.Snapshot(keys: keys, current: current)), keys)
    }

    @Test func newValuesRecordTheCurrentKeyAndAnyKeyOfTheRingReadsThem() throws {
        let (keyring, keys) = try Self.ring(["2026-a", "2026-b"], current: "2026-a")
        let cipher = Cipher(keyring: keyring)
        let old = try cipher.encrypt("first", context: "content")
        #expect(Cipher.keyID(of: old)?.id == "2026-a")
        keyring.replace(with: try Keyring.Snapshot(keys: keys, current: "2026-b"))
        let new = try cipher.encrypt("second", context: "content")
        #expect(Cipher.keyID(of: new)?.id == "2026-b")
        #expect(try cipher.decrypt(old, context: "content") == "first")
        #expect(try cipher.decrypt(new, context: "content") == "second")
        // A module's own key, whatever the current one is.
        let own = try cipher.encrypt("third", context: "content", keyID: "2026-a")
        #expect(Cipher.keyID(of: own)?.id == "2026-a")
        #expect(try cipher.decrypt(own, context: "content") == "third")
    }

    @Test func aValueWhoseKeyIsGoneIsKeyMissingNamingTheKey() throws {
        let (keyring, keys) = try Self.ring(["old", "new"], current: "old")
        let cipher = Cipher(keyring: keyring)
        let ciphertext = try cipher.encrypt("secret", context: "content")
        keyring.replace(with: try Keyring.Snapshot(keys: ["new": keys["new"]!], current: "new"))
        let error = #expect(throws: CipherError.self) { try cipher.decrypt(ciphertext, context: "content") }
        #expect(error?.kind == .keyMissing)
        #expect(error?.keyID == "old")
        #expect(error?.message.contains("'old'") == true)
        let unknown = #expect(throws: CipherError.self) { try cipher.encrypt("x", context: "c", keyID: "nope") }
        #expect(unknown?.kind == .keyMissing)
        #expect(unknown?.keyID == "nope")
    }

    /// Vectors of format version 1 (no key id), made with Python's `cryptography` AESGCM: read with the key `default`.
    @Test func valuesWrittenBeforeKeyIdsReadWithTheDefaultKey() throws {
        let counting = try CipherKey(bytes: (0..<32).map(UInt8.init))
        let hex = "444701b0b1b2b3b4b5b6b7b8b9babb9baaa554133244a0b9cbde08b87242b3cb81cdb8ec5f04a2b5"
        let version1 = stride(from: 0, to: hex.count, by: 2).map {
            UInt8(hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)!
        }
        #expect(Cipher.isCiphertext(version1))
        #expect(Cipher.keyID(of: version1)?.id == "default")
        #expect(Cipher.keyID(of: version1)?.isCurrentVersion == false)
        // The one-key form (--key-file) …
        #expect(try Cipher(key: counting).decrypt(version1, context: "kv:biz/key") == -2)
        // … and a ring whose current key is another one, with the old key kept as `default`.
        let ring = Keyring(try Keyring.Snapshot(keys: ["default": counting, "next": try CipherKey.generate()], current: "next"))
        #expect(try Cipher(keyring: ring).decrypt(version1, context: "kv:biz/key") == -2)
        // Without `default`, the error names it.
        let bare = Keyring(try Keyring.Snapshot(keys: ["next": try CipherKey.generate()], current: "next"))
        let error = #expect(throws: CipherError.self) { try Cipher(keyring: bare).decrypt(version1, context: "kv:biz/key") }
        #expect(error?.kind == .keyMissing)
        #expect(error?.keyID == "default")
    }

    @Test func theKeyIdIsAuthenticated() throws {
        let key = try CipherKey.generate()
        let ring = Keyring(try Keyring.Snapshot(keys: ["aa": key, "ab": key], current: "aa"))
        var ciphertext = try Cipher(keyring: ring).encrypt("secret", context: "content")
        ciphertext[5] = UInt8(ascii: "b")  // "aa" → "ab": the same key bytes, another id
        let error = #expect(throws: CipherError.self) { try Cipher(keyring: ring).decrypt(ciphertext, context: "content") }
        #expect(error?.kind == .authenticationFailed)
    }

    // MARK: The key folder

    func keyFolder(_ files: [String: [UInt8]]) throws -> String {
        let folder = fixture.root.appendingPathComponent("keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: folder + "/" + name)) }
        return folder
    }

    @Test func aKeyFolderIsIdDotKeyFilesAndCurrent() throws {
        let hex = Array(String(repeating: "ab", count: 32).utf8)
        let folder = try keyFolder(["k1.key": [UInt8](repeating: 7, count: 32), "k2.key": hex + [0x0A],
                                    "current": Array("k2\n".utf8), "README": Array("not a key".utf8)])
        let ring = try Keyring.load(directory: folder)
        #expect(ring.ids == ["k1", "k2"])
        #expect(ring.current == "k2")
    }

    @Test(arguments: [
        (["a.key": [UInt8](repeating: 1, count: 32)], "current"),
        (["a.key": [UInt8](repeating: 1, count: 32), "current": Array("b".utf8)], "names the key 'b'"),
        (["a.key": [UInt8](repeating: 1, count: 31), "current": Array("a".utf8)], "a.key"),
        (["-a.key": [UInt8](repeating: 1, count: 32), "current": Array("-a".utf8)], "is not a key id"),
        (["current": Array("a".utf8)], "holds no key"),
    ] as [([String: [UInt8]], String)])
    func aKeyFolderWithAProblemIsAnErrorNamingIt(files: [String: [UInt8]], named: String) throws {
        let folder = try keyFolder(files)
        let error = #expect(throws: CipherError.self) { try Keyring.load(directory: folder) }
        #expect(error?.kind == .invalidKey)
        #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
    }

    // MARK: Modules

    static let keyedModule = """
        <module name="Notes" initializer="create" tableName="notes" version="1.0" key="archive">
          <crypt class="Note" property="body"/>
          <update id="create">create table if not exists ${T} (id integer primary key, body blob)</update>
          <insert id="add" arguments="model:Note">insert into ${T} (body) values (#{model.body})</insert>
          <select id="all" result="[Note]">select id, body from ${T} order by id</select>
          <select id="raw" result="[binary]">select body from ${T} order by id</select>
        </module>
        """

    @Test func aModuleWritesWithTheKeyItNamesAndReadsWithTheRecordedOne() throws {
        let (keyring, keys) = try Self.ring(["archive", "main"], current: "main")
        let engine = try fixture.engine(Self.keyedModule, cipher: Cipher(keyring: keyring))
        try engine.write("Notes", "add", #"[{"body": "kept"}]"#)
        let raw = try engine.value("Notes", "raw")
        guard case .blob(let stored)? = raw.arrayValue?.first else { Issue.record("no blob: \(raw)"); return }
        #expect(Cipher.keyID(of: stored)?.id == "archive")
        #expect(try engine.value("Notes", "all") == [["id": 1, "body": "kept"]])
        // The key gone: the read names it.
        keyring.replace(with: try Keyring.Snapshot(keys: ["main": keys["main"]!], current: "main"))
        let error = engine.failure("Notes", "all")
        #expect(error?.code == .keyMissing)
        #expect(error?.keyID == "archive")
        #expect(error?.isCallersFault == false)
        #expect(error?.message.contains("'archive'") == true)
    }

    @Test func aModuleNamingAKeyTheRingLacksIsRefusedAtLoad() throws {
        let (keyring, _) = try Self.ring(["main"], current: "main")
        let error = #expect(throws: EngineError.self) { try fixture.engine(Self.keyedModule, cipher: Cipher(keyring: keyring)) }
        #expect(error?.code == .keyMissing)
        #expect(error?.message.contains("module Notes") == true)
        #expect(error?.message.contains("'archive'") == true)
    }

    @Test(arguments: ["", "-x", "a/b", String(repeating: "k", count: 65)])
    func aKeyAttributeThatIsNoKeyIdIsALoadError(id: String) throws {
        let xml = Self.keyedModule.replacingOccurrences(of: #"key="archive""#, with: #"key="\#(id)""#)
        #expect(throws: LoadFailure.self) { try fixture.module(xml) }
    }

    // MARK: crypt added to an existing column

    @Test func plaintextWrittenBeforeCryptWasDeclaredReadsAsItIs() throws {
        let before = try fixture.engine("""
            <module name="Profiles" initializer="create" tableName="profiles" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, phone text, photo blob)</update>
              <insert id="add" arguments="id, phone, photo">insert into ${T} values (#{id}, #{phone}, #{photo})</insert>
            </module>
            """)
        try before.write("Profiles", "add", #"[1, "+33 6 12", {"$base64": "AAEC"}]"#)
        before.shutdown()
        let after = try fixture.engine("""
            <module name="Profiles" initializer="create" tableName="profiles" version="1.0">
              <crypt class="Profile" property="phone"/>
              <crypt class="Profile" property="photo"/>
              <update id="create">create table if not exists ${T} (id integer primary key, phone text, photo blob)</update>
              <insert id="add" arguments="model:Profile">insert into ${T} values (#{model.id}, #{model.phone}, #{model.photo})</insert>
              <select id="all" result="[Profile]">select * from ${T} order by id</select>
            </module>
            """, cipher: Cipher(key: .generate()))
        try after.write("Profiles", "add", #"[{"id": 2, "phone": "+33 7 34", "photo": {"$base64": "AwQ="}}]"#)
        #expect(try after.value("Profiles", "all") == [
            ["id": 1, "phone": "+33 6 12", "photo": .blob([0, 1, 2])],
            ["id": 2, "phone": "+33 7 34", "photo": .blob([3, 4])],
        ])
    }
}
