import DAODialect
import DAOEngine
import DAOValue
import Testing

/// Columns declared boolean read back as JSON booleans in object results,
/// by the rule of the `bool` result; other columns keep their storage class.
@Suite struct BooleanColumnTests {
    let fixture = EngineFixture()

    func engine() throws -> Engine {
        try fixture.engine("""
            <module name="B" tableName="t" initializer="create" version="1.0">
              <crypt class="Secret" property="hidden"/>
              <update id="create">
                create table if not exists ${T} (id integer primary key, flag boolean, small BOOL, n integer, hidden boolean)
              </update>
              <insert id="add" arguments="flag:json, small:json, n:json">insert into ${T} (flag, small, n) values (#{flag}, #{small}, #{n})</insert>
              <insert id="addSecret" arguments="model:Secret">insert into ${T} (hidden) values (#{model.hidden})</insert>
              <select id="row" arguments="id" result="{}">select flag, small, n, flag as renamed, not flag as negated from ${T} where id = #{id}</select>
              <select id="secret" arguments="id" result="Secret">select hidden from ${T} where id = #{id}</select>
              <select id="flag" arguments="id" result="int">select flag from ${T} where id = #{id}</select>
            </module>
            """, cipher: Cipher(key: .generate()))
    }

    @Test(arguments: [
        ("true, true, 1", Value.bool(true), Value.bool(true)),
        ("false, false, 0", .bool(false), .bool(false)),
        ("2, 0.5, 2", .bool(true), .bool(true)),
        (#""yes", "FALSE", 1"#, .bool(true), .bool(false)),
        ("null, null, null", .null, .null),
    ])
    func booleanColumnsReadAsBooleans(_ arguments: String, _ flag: Value, _ small: Value) throws {
        let engine = try engine()
        let id = try engine.write("B", "add", "[\(arguments)]").lastInsertRowID
        let row = try engine.value("B", "row", "[\(id)]")
        #expect(row[member: "flag"] == flag)
        #expect(row[member: "small"] == small)
        #expect(row[member: "renamed"] == flag, "an alias of the column keeps its declared type")
        #expect(row[member: "negated"]?.integerValue != nil || row[member: "negated"] == .null, "an expression has no declared type")
        #expect(row[member: "n"] != .bool(true) && row[member: "n"] != .bool(false), "an integer column stays integer")
        // A scalar result keeps its own type.
        if case .integer(let stored)? = try? engine.value("B", "flag", "[\(id)]") {
            #expect(.bool(stored != 0) == flag)
        } else {
            #expect(flag == .null || arguments.hasPrefix("\""), "an int result of a boolean column is its integer")
        }
    }

    @Test func textThatIsNoBooleanIsAConversionErrorNamingTheColumn() throws {
        let engine = try engine()
        try engine.write("B", "add", #"["maybe", null, null]"#)
        let error = engine.failure("B", "row", "[1]")
        #expect(error?.code == .resultConversion)
        #expect(error?.message.contains("column flag") == true)
    }

    @Test func anEncryptedBooleanDecryptsToTheBooleanWritten() throws {
        let engine = try engine()
        try engine.write("B", "addSecret", #"[{"hidden": true}]"#)
        #expect(try engine.value("B", "secret", "[1]") == ["hidden": true])
    }

    @Test func theDeclaredTypeRule() {
        for type in ["BOOL", "boolean", "Boolean NOT NULL"] { #expect(declaredTypeIsBoolean(type), "\(type)") }
        for type in ["", "INTEGER", "BOOLINT", "TEXT", "bool_text", "BLOB", "REAL", "NUMERIC"] {
            #expect(!declaredTypeIsBoolean(type), "\(type)")
        }
    }
}
