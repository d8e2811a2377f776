import CSQLite
import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Testing

/// `crypt` properties are ciphertext on disk and plaintext to their class's readers.
@Suite struct CryptTests {
    let fixture = EngineFixture()
    static let secret = "TOP-SECRET-PLAINTEXT-7f3a"

    func engine(key: CipherKey) throws -> Engine {
        try fixture.engine(EngineFixture.exampleModules(), cipher: Cipher(key: key))
    }

    /// Every byte of the user's database files (the WAL included).
    func rawBytes(user: String) throws -> Data {
        var bytes = Data()
        for file in fixture.dataFiles() where file.hasPrefix("users/p-\(user).db") {
            bytes += try Data(contentsOf: URL(fileURLWithPath: fixture.dataDirectory + "/" + file))
        }
        return bytes
    }

    @Test func theDatabaseFileHoldsNoPlaintextOfAnEncryptedProperty() throws {
        let key = try CipherKey.generate()
        let engine = try engine(key: key)
        let inserted = try engine.write("Messages", "insertMessage",
                                        #"[{"time": 1, "content": "\#(Self.secret)", "uin": 7, "read": false}]"#, user: "ann")
        try engine.write("Messages", "addMessages",
                         #"[[{"msgId": 50, "time": 2, "content": "\#(Self.secret)-2", "uin": 7, "read": true}]]"#, user: "ann")
        let raw = try rawBytes(user: "ann")
        #expect(!raw.isEmpty)
        #expect(raw.range(of: Data(Self.secret.utf8)) == nil)
        engine.shutdown()
        #expect(try rawBytes(user: "ann").range(of: Data(Self.secret.utf8)) == nil)

        let reopened = try self.engine(key: key)
        let message = try reopened.value("Messages", "getMessage", "[\(inserted.lastInsertRowID)]", user: "ann")
        #expect(message[member: "content"] == .string(Self.secret))
        #expect(message[member: "uin"] == 7)
        let mapped = try reopened.value("Messages", "messagesOf", "[7]", user: "ann")
        #expect(mapped.arrayValue?.map { $0[member: "content"] } == [.string(Self.secret + "-2"), .string(Self.secret)])
        #expect(mapped.arrayValue?.first?[member: "msgId"] == 50)
    }

    @Test func aWrongKeyIsAClearErrorNotGarbage() throws {
        let engine = try engine(key: .generate())
        let inserted = try engine.write("Messages", "insertMessage", #"[{"content": "hello"}]"#, user: "ann")
        engine.shutdown()
        let other = try self.engine(key: .generate())
        let error = other.failure("Messages", "getMessage", "[\(inserted.lastInsertRowID)]", user: "ann")
        #expect(error?.code == .encryption)
        #expect(error?.isCallersFault == false)
        #expect(error?.message.contains("cannot decrypt MessageModel.content") == true)
    }

    @Test func aTamperedValueIsAClearError() throws {
        let key = try CipherKey.generate()
        let engine = try engine(key: key)
        let inserted = try engine.write("Messages", "insertMessage", #"[{"content": "hello"}]"#, user: "ann")
        engine.shutdown()
        var db: OpaquePointer?
        #expect(sqlite3_open(fixture.dataDirectory + "/users/p-ann.db", &db) == SQLITE_OK)
        // Changes the 21st byte whatever it holds: a test that passes by chance is no test.
        #expect(sqlite3_exec(db, """
            update messages set content = cast(substr(content, 1, 20)
                || (case when substr(content, 21, 1) = x'00' then x'01' else x'00' end) || substr(content, 22) as blob)
            """, nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_exec(db, "insert into messages (id, content) values (99, 'plain text')", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        let reopened = try self.engine(key: key)
        let tampered = reopened.failure("Messages", "getMessage", "[\(inserted.lastInsertRowID)]", user: "ann")
        #expect(tampered?.code == .encryption)
        let plain = reopened.failure("Messages", "getMessage", "[99]", user: "ann")
        #expect(plain?.code == .encryption)
        #expect(plain?.message.contains("holds a string there, not a ciphertext") == true)
    }

    @Test func nilStaysNilAndOtherColumnsStayPlain() throws {
        let engine = try engine(key: .generate())
        let inserted = try engine.write("Messages", "insertMessage", #"[{"content": null, "uin": 5}]"#, user: "ann")
        let message = try engine.value("Messages", "getMessage", "[\(inserted.lastInsertRowID)]", user: "ann")
        #expect(message[member: "content"] == .null)
        #expect(message[member: "uin"] == 5)
    }

    @Test func aTypedArgumentEncryptsOnlyItsClassesProperties() throws {
        let engine = try fixture.engine("""
            <module name="M" tableName="t" initializer="create" version="1.0">
              <crypt class="Secret" property="body"/>
              <update id="create">create table if not exists ${T} (id integer primary key, body)</update>
              <insert id="secret" arguments="s:Secret">insert into ${T} (body) values (#{s.body})</insert>
              <insert id="open" arguments="o:Open">insert into ${T} (body) values (#{o.body})</insert>
              <select id="raw" arguments="id" result="{}">select body from ${T} where id = #{id}</select>
              <select id="typed" arguments="id" result="Secret">select body from ${T} where id = #{id}</select>
            </module>
            """, cipher: Cipher(key: .generate()))
        let secret = try engine.write("M", "secret", #"[{"body": "hidden"}]"#).lastInsertRowID
        let open = try engine.write("M", "open", #"[{"body": "visible"}]"#).lastInsertRowID
        #expect(try engine.value("M", "raw", "[\(open)]") == ["body": "visible"])
        guard case .blob? = try engine.value("M", "raw", "[\(secret)]")[member: "body"] else {
            Issue.record("the Secret body is not stored as ciphertext")
            return
        }
        #expect(try engine.value("M", "typed", "[\(secret)]") == ["body": "hidden"])
    }
}
