import DAODialect
import DAOValue
import Foundation
import Testing

/// Module files written to a fresh temporary folder, loaded the way `daogate` loads them.
struct Fixture {
    let directory: URL

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-dialect-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Writes `xml` to `name` in the folder and returns its path.
    @discardableResult
    func write(_ xml: String, to name: String = "module.xml") -> String {
        let url = directory.appendingPathComponent(name)
        try! FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! Data(xml.utf8).write(to: url)
        return url.path
    }

    /// Loads `xml` from a file on disk; fails the test on a load error.
    func load(_ xml: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Module {
        let path = write(xml)
        do {
            return try ModuleLoader.load(file: path)
        } catch {
            Issue.record("unexpected load errors:\n\(error)", sourceLocation: sourceLocation)
            throw error
        }
    }

    /// The load errors of `xml`, with the file path stripped to `module.xml`.
    func errors(_ xml: String, sourceLocation: SourceLocation = #_sourceLocation) -> [LoadError] {
        let path = write(xml)
        do {
            _ = try ModuleLoader.load(file: path)
            Issue.record("expected load errors, the module loaded", sourceLocation: sourceLocation)
            return []
        } catch {
            return error.errors.map { LoadError(file: "module.xml", line: $0.line, message: $0.message) }
        }
    }
}

/// A rendered statement reduced to what tests compare.
struct SQL: Equatable, CustomStringConvertible {
    var sql: String
    var bindings: [Value]

    init(_ sql: String, _ bindings: [Value] = []) {
        self.sql = sql
        self.bindings = bindings
    }

    var description: String { "\(sql) \(bindings)" }
}

extension Module {
    /// Renders `method` with JSON `arguments` into flat statements (every run,
    /// every step; except branches left out).
    func render(_ method: String, _ arguments: String = "null", table: String? = nil,
                globals: [String: Value] = [:]) throws -> [SQL] {
        try runs(method, arguments, table: table, globals: globals).flatMap { run in
            run.statements.map { SQL($0.sql, $0.bindings) }
        }
    }

    func runs(_ method: String, _ arguments: String = "null", table: String? = nil,
              globals: [String: Value] = [:]) throws -> [RenderedRun] {
        guard let found = self.method(named: method) else {
            throw RenderError(code: .unknownArgument, method: method, message: "no such method in the test module")
        }
        let value = try Value(parsingJSON: arguments, options: JSONParseOptions(binaryMarkers: true))
        let frame = try found.frame(arguments: value, globals: globals)
        return try found.render(frame: frame, table: table ?? tableName)
    }

    /// The render error of a call, failing the test when it renders.
    func renderError(_ method: String, _ arguments: String = "null", table: String? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) -> RenderError? {
        do {
            let statements = try render(method, arguments, table: table)
            Issue.record("expected a render error, got \(statements)", sourceLocation: sourceLocation)
            return nil
        } catch let error as RenderError {
            return error
        } catch {
            Issue.record("expected a RenderError, got \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }
}

/// A module around method XML, with the reference's usual header.
func module(_ body: String, attributes: String = #"name="demo" tableName="tableDemo" version="1.0""#) -> String {
    "<module \(attributes)>\n\(body)\n</module>\n"
}
