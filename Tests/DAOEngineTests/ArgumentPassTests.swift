import DAODialect
@testable import DAOEngine
import DAOValue
import Foundation
import Testing

/// Arguments are checked and placed in the frame in one walk, a base64 value decoded once into the bytes bound.
@Suite struct ArgumentPassTests {
    let fixture = EngineFixture()

    static let module = """
        <module name="M" tableName="t" initializer="create" version="1.0">
          <update id="create">create table if not exists ${T} (id integer primary key, data blob, n integer)</update>
          <insert id="putDeclared" arguments="id:long long, data:binary">insert into ${T} (id, data) values (#{id}, #{data})</insert>
          <insert id="putCounted" arguments="id, n">insert into ${T} (id, n) values (#{id}, #{n})</insert>
          <select id="kind" arguments="id" result="string">select typeof(data) from ${T} where id = #{id}</select>
          <select id="bytes" arguments="id" result="binary">select data from ${T} where id = #{id}</select>
          <select id="count" arguments="id" result="{}">select typeof(n) as type, n from ${T} where id = #{id}</select>
        </module>
        """

    @Test func aDeclaredBinaryArgumentSentAsBase64IsBoundAsABlob() throws {
        let engine = try fixture.engine(Self.module)
        _ = try engine.write("M", "putDeclared", #"[1, "AAEC/w=="]"#)
        #expect(try engine.value("M", "kind", "[1]") == "blob")
        #expect(try engine.value("M", "bytes", "[1]") == .blob([0, 1, 2, 255]))
    }

    /// An argument whose inferred shape is binary (a shape check, not a declared type): its base64 text becomes the
    /// bytes bound, as for a declared one (it was checked, decoded, thrown away, and the text bound as TEXT).
    @Test func anInferredBinaryShapeDecodesBase64OnceIntoTheBoundBytes() throws {
        let module = try fixture.module(Self.module)
        let method = try #require(module.methods.first { $0.name == "putCounted" })
        let description = MethodDescription(
            arguments: [ArgumentShape(name: "id", shape: .integer(bits: 64)), ArgumentShape(name: "n", shape: .binary)],
            resultColumns: nil)
        let checks = ArgumentChecks(modules: [module], descriptions: ["M": ["putCounted": description]])
        let positions = try #require(checks.checks(of: method))
        let frame = try method.frame(arguments: .array([.double(7), .string("AAEC/w==")])) { position, value throws(RenderError) in
            try checks.check(value, positions[position], path: method.arguments[position].name, method: method)
        }
        #expect(frame.locals[0] == .integer(7))
        #expect(frame.locals[1] == .blob([0, 1, 2, 255]))
        #expect(throws: RenderError.self) {
            _ = try method.frame(arguments: .array([.integer(1), .string("not base64!")])) { position, value throws(RenderError) in
                try checks.check(value, positions[position], path: method.arguments[position].name, method: method)
            }
        }
    }

    /// Inferred shapes are still checked in the one walk, by name and by position, and integral decimals made integers.
    @Test func inferredShapesAreCheckedByNameAndByPosition() throws {
        let engine = try fixture.engine(Self.module)
        #expect(engine.failure("M", "putCounted", #"[1, "three"]"#)?.render?.code == .wrongType)
        #expect(engine.failure("M", "putCounted", #"{"id": 1, "n": "three"}"#)?.render?.code == .wrongType)
        #expect(engine.failure("M", "putCounted", #"{"id": 1, "nope": 3}"#)?.render?.code == .unknownArgument)
        _ = try engine.write("M", "putCounted", #"{"id": 2, "n": 3.0}"#)
        _ = try engine.write("M", "putCounted", #"[3, 4.0]"#)
        #expect(try engine.value("M", "count", "[2]") == .object(["type": "integer", "n": 3]))
        #expect(try engine.value("M", "count", "[3]") == .object(["type": "integer", "n": 4]))
    }
}
