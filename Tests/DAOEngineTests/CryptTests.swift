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
        // Plaintext in a crypt column (written before the property was declared crypt) reads as it is.
        let plain = try reopened.value("Messages", "getMessage", "[99]", user: "ann")
        #expect(plain[member: "content"] == "plain text")
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

    /// The module of the issue: `crypt` through `@{}` would write the secret in plain text.
    static let inlinedSecret = """
        <module name="Cr" initializer="createTable" tableName="cr" version="1.0">
          <crypt class="Secret" property="s"/>
          <update id="createTable">create table if not exists ${T} (id integer primary key, s blob)</update>
          <insert id="addInline" arguments="model:Secret">insert into ${T} (s) values (@{model.s})</insert>
          <select id="all" result="[Secret]">select id, s from ${T}</select>
        </module>
        """

    @Test func inliningACryptPropertyIsALoadErrorAtItsLine() throws {
        #expect(throws: LoadFailure.self) { try fixture.module(Self.inlinedSecret, file: "cr.xml") }
        do {
            _ = try fixture.module(Self.inlinedSecret, file: "cr.xml")
        } catch let failure as LoadFailure {
            #expect(failure.errors.count == 1)
            #expect(failure.errors.first?.file.hasSuffix("cr.xml") == true)
            #expect(failure.errors.first?.line == 4)
            #expect(failure.errors.first?.message
                == "@{model.s} would write the crypt property 's' into the SQL text in plain: bind it with #{model.s}, which encrypts it")
        }
    }

    static let refusedReferences: [(String, String)] = [
        ("@{} of a typed argument's crypt property", #"<insert id="w" arguments="model:Secret">insert into t (s) values (@{model.s or ""})</insert>"#),
        ("@{} of an untyped argument's crypt property", #"<insert id="w" arguments="model">insert into t (s) values (@{model.s})</insert>"#),
        ("@{} inside quotes", #"<update id="w" arguments="model">update t set s = '@{model.s}'</update>"#),
        ("@{} of a foreach item's crypt property", #"<insert id="w" arguments="ms:[Secret]" foreach="ms.m">insert into t (s) values (@{m.s})</insert>"#),
        ("@{} of a nested crypt property", #"<insert id="w" arguments="x">insert into t (s) values (@{x.inner.s})</insert>"#),
        ("#{} of a whole object of a class with a crypt property", #"<insert id="w" arguments="model:Secret">insert into t (json) values (#{model})</insert>"#),
        ("@{} of a whole object of a class with a crypt property", #"<insert id="w" arguments="model:Secret">insert into t (json) values (@{model})</insert>"#),
        ("#{} of a whole foreach item", #"<insert id="w" arguments="ms:[Secret]">insert into t (json) values <foreach item="m" collection="ms" separator=",">(#{m})</foreach></insert>"#),
    ]

    @Test(arguments: refusedReferences)
    func noReferenceCanWriteACryptPropertyInPlainText(shape: String, method: String) {
        let xml = "<module name=\"M\" tableName=\"t\">\n<crypt class=\"Secret\" property=\"s\"/>\n\(method)\n</module>"
        do {
            _ = try fixture.module(xml)
            Issue.record("\(shape): loaded")
        } catch let failure as LoadFailure {
            #expect(failure.errors.map(\.line) == [3], "\(shape)")
            #expect(failure.errors.first?.message.contains("in plain") == true, "\(shape): \(failure)")
        } catch {
            Issue.record("\(shape): \(error)")
        }
    }

    @Test func readsAndPlainPropertiesMayStillBeInlined() throws {
        let module = try fixture.module("""
            <module name="M" tableName="t">
              <crypt class="Secret" property="s"/>
              <select id="find" arguments="model:Secret">select * from t where s = @{model.s} and other = @{model.other}</select>
              <insert id="plain" arguments="model:Secret">insert into t (other) values (@{model.other})</insert>
              <insert id="whole" arguments="model:Open">insert into t (json) values (#{model})</insert>
            </module>
            """)
        #expect(module.methods.count == 3)
    }

    @Test func aCryptColumnReadsBackThroughAMapThatRenamesIt() throws {
        let engine = try fixture.engine("""
            <module name="Cr" initializer="create" tableName="cr" version="1.0">
              <crypt class="Secret" property="s"/>
              <crypt class="Shown" property="text"/>
              <map id="shown" result="Shown"><result property="text" column="s"/></map>
              <map id="renamed" result="Secret"><result property="s" column="body"/></map>
              <update id="create">create table if not exists ${T} (id integer primary key, s blob, body blob)</update>
              <insert id="add" arguments="model:Secret">insert into ${T} (s, body) values (#{model.s}, #{model.s})</insert>
              <select id="viaMap" result="[:shown]">select id, s from ${T}</select>
              <select id="renamedColumn" result="[:renamed]">select id, body from ${T}</select>
              <select id="typed" result="[Secret]">select id, s from ${T}</select>
            </module>
            """, cipher: Cipher(key: .generate()))
        try engine.write("Cr", "add", #"[{"s": "\#(Self.secret)"}]"#)
        #expect(try engine.value("Cr", "viaMap") == [["id": 1, "text": .string(Self.secret)]])
        #expect(try engine.value("Cr", "renamedColumn") == [["id": 1, "s": .string(Self.secret)]])
        #expect(try engine.value("Cr", "typed") == [["id": 1, "s": .string(Self.secret)]])
    }

    @Test func aValueNoCryptPropertyOfTheModuleWroteStillFails() throws {
        let key = try CipherKey.generate()
        let other = try fixture.engine("""
            <module name="Other" initializer="create" tableName="cr" version="1.0">
              <crypt class="Elsewhere" property="unrelated"/>
              <update id="create">create table if not exists ${T} (id integer primary key, s blob)</update>
              <insert id="add" arguments="model:Elsewhere">insert into ${T} (s) values (#{model.unrelated})</insert>
            </module>
            """, cipher: Cipher(key: key))
        try other.write("Other", "add", #"[{"unrelated": "x"}]"#)
        other.shutdown()
        // The module, changed: it reads the column as another class's crypt property (its table is its own:
        // a module of another name would be refused it, table_owned).
        let reader = try fixture.engine("""
            <module name="Other" tableName="cr" version="1.0">
              <crypt class="Secret" property="s"/>
              <select id="typed" result="[Secret]">select id, s from ${T}</select>
            </module>
            """, cipher: Cipher(key: key))
        let error = reader.failure("Other", "typed")
        #expect(error?.code == .encryption)
        #expect(error?.message.contains("cannot decrypt Secret.s") == true)
    }
}
