import Foundation
import Testing

/// `daogate check`, `render` and `serve` as processes, on module files that
/// are hostile or valid-but-unusual: each answers, in bounded time, with the
/// problem's `file:line`, and none crashes.
@Suite struct ModuleCommandTests {
    /// A folder holding `m.xml` with `xml`.
    static func folder(_ xml: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-modules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(xml.utf8).write(to: folder.appendingPathComponent("m.xml"))
        return folder
    }

    /// Runs `daogate` with `arguments`, killing it after `limit`; its exit
    /// status (a signal shows as 128 + its number) and everything it printed.
    static func daogate(_ arguments: [String], limit: Duration = .seconds(15)) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LiveServer.binary)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(limit.components.seconds)), execute: killer)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return (status, String(decoding: data, as: UTF8.self))
    }

    static let hostile: [String: String] = [
        "10,000 chained fragments": "<module name=\"H\" tableName=\"t\">\n"
            + (0..<10_000).map { "<sql id=\"f\($0)\">${f\($0 + 1)}</sql>\n" }.joined()
            + "<sql id=\"f10000\">1</sql>\n<select id=\"a\">select ${f0}</select>\n</module>",
        "5,000 nested parentheses": "<module name=\"H\" tableName=\"t\">\n<select id=\"a\" arguments=\"a\">select 1 <if true=\""
            + String(repeating: "(", count: 5000) + "a" + String(repeating: ")", count: 5000) + "\">x</if></select>\n</module>",
        "fragments doubling 40 levels deep": "<module name=\"H\" tableName=\"t\">\n"
            + (0..<40).map { "<sql id=\"f\($0)\">${f\($0 + 1)} ${f\($0 + 1)}</sql>" }.joined()
            + "<sql id=\"f40\">1</sql>\n<select id=\"a\">select ${f0}</select>\n</module>",
    ]

    @Test(arguments: hostile.keys.sorted())
    func checkRefusesAHostileModuleWithItsLineAndDoesNotCrash(shape: String) throws {
        let folder = try Self.folder(Self.hostile[shape]!)
        defer { try? FileManager.default.removeItem(at: folder) }
        let started = ContinuousClock.now
        let (status, output) = try Self.daogate(["check", folder.path])
        #expect(status == 1, "\(shape): \(output.prefix(300))")
        #expect(output.contains(folder.appendingPathComponent("m.xml").path + ":"), "\(shape)")
        #expect(output.contains("1 problem"), "\(shape): \(output.prefix(300))")
        #expect(ContinuousClock.now - started < .seconds(10), "\(shape)")
    }

    @Test func checkAndRenderAgreeThatACryptPropertyCannotBeInlined() throws {
        // The issue's module, down to what matters.
        let folder = try Self.folder("""
            <module name="Cr" tableName="cr"><crypt class="Secret" property="s"/>
              <insert id="addInline" arguments="model:Secret">insert into ${T} (s) values (@{model.s})</insert></module>
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let problem = folder.appendingPathComponent("m.xml").path + ":2: @{model.s} would write the crypt property 's'"
        let check = try Self.daogate(["check", folder.path])
        #expect(check.status == 1)
        #expect(check.output.contains(problem), "\(check.output)")
        let render = try Self.daogate(["render", folder.path, "Cr", "addInline", "--args", #"{"model": {"s": "secret-text"}}"#])
        #expect(render.status != 0)
        #expect(render.output.contains(problem), "\(render.output)")
        #expect(!render.output.contains("'secret-text'"))
    }

    @Test func aModuleOfOptionalColumnsServes() throws {
        let folder = try Self.folder("""
            <module name="Books" initializer="create" tableName="books" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, title text, year integer)</update>
              <insert id="add" arguments="$title">insert into ${T} (title) values (#{title})</insert>
              <update id="patch" arguments="$id, title, year">
                update ${T} <set><if true="title != nil">title = #{title},</if><if true="year != nil">year = #{year},</if></set> where id = #{id}
              </update>
              <select id="get" arguments="$id" result="{}">select title, year from ${T} where id = #{id}</select>
            </module>
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try Self.daogate(["check", folder.path]).status == 0)
        let server = try LiveServer(modules: folder.path)
        #expect(try server.curl("/dao/Books/add", body: #"{"title": "SQLite"}"#).status == 200)
        #expect(try server.curl("/dao/Books/patch", body: #"{"id": 1, "year": 2000}"#).status == 200)
        #expect(try server.curl("/dao/Books/get", body: "[1]").body == #"{"result":{"title":"SQLite","year":2000}}"#)
        #expect(server.stop() == 0)
    }

    @Test func renderNeedsATableOnlyForATemplate() throws {
        let folder = try Self.folder(#"<module name="One"><select id="one" arguments="x">select #{x} + 1</select></module>"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let tableless = try Self.daogate(["render", folder.path, "One", "one", "--args", "[1]"])
        #expect(tableless.status == 0)
        #expect(tableless.output == #"{"statements":[{"sql":"select ? + 1","bindings":[1]}],"skipped":false}"# + "\n")
        let template = try Self.daogate(["render", LiveServer.root.appendingPathComponent("modules").path, "ChatMessages", "latest", "--args", "[1]"])
        #expect(template.status != 0)
        #expect(template.output.contains("is a template (no tableName, and its statements write ${T}): pass --table NAME"),
                "\(template.output)")
    }
}
