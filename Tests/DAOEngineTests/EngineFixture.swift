import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Synchronization
import Testing

/// A data folder and module files in a fresh temporary folder, and engines over them.
final class EngineFixture: Sendable {
    let root: URL
    var dataDirectory: String { root.appendingPathComponent("data").path }
    let events = Mutex<[TableEvent]>([])

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-engine-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// Loads a module from XML written to a file.
    func module(_ xml: String, file: String = "module.xml") throws -> Module {
        let url = root.appendingPathComponent("modules").appendingPathComponent(file)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(xml.utf8).write(to: url)
        return try ModuleLoader.load(file: url.path)
    }

    /// The example modules shipped in `modules/`.
    static func exampleModules() throws -> [Module] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("modules").path
        let (modules, errors) = ModuleLoader.loadDirectory(directory)
        guard errors.isEmpty else { throw LoadFailure(errors: errors) }
        return modules
    }

    func engine(_ modules: [Module], cipher: Cipher? = nil, maximumOpenDatabases: Int = 128,
                maximumOpenDescriptors: Int = 4096, maximumOpenBytes: Int = 256 << 20) throws -> Engine {
        try Engine(modules: modules,
                   configuration: Engine.Configuration(dataDirectory: dataDirectory, maximumOpenDatabases: maximumOpenDatabases,
                                                       maximumOpenDescriptors: maximumOpenDescriptors,
                                                       maximumOpenBytes: maximumOpenBytes, cipher: cipher),
                   observer: Recorder(fixture: self))
    }

    func engine(_ xml: String, cipher: Cipher? = nil) throws -> Engine {
        try engine([module(xml)], cipher: cipher)
    }

    /// The events recorded so far, and forgets them.
    func takeEvents() -> [TableEvent] {
        events.withLock { events in
            defer { events.removeAll() }
            return events
        }
    }

    /// Every file under the data folder, relative to it.
    func dataFiles() -> [String] {
        (FileManager.default.enumerator(atPath: dataDirectory)?.allObjects as? [String] ?? [])
            .filter { path in
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: dataDirectory + "/" + path, isDirectory: &isDirectory)
                return !isDirectory.boolValue
            }
            .sorted()
    }

    private struct Recorder: EngineObserver {
        let fixture: EngineFixture
        func engine(_ engine: Engine, didEmit event: TableEvent) {
            fixture.events.withLock { $0.append(event) }
        }
    }
}

extension Engine {
    /// Calls a method with JSON arguments; returns the select value or the write result.
    @discardableResult
    func call(_ module: String, _ method: String, _ arguments: String = "null", user: String? = nil,
              table: String? = nil, storage: String? = nil) throws -> CallResult {
        try call(Call(module: module, method: method,
                      arguments: Value(parsingJSON: arguments, options: JSONParseOptions(binaryMarkers: true)), table: table),
                 context: CallContext(user: user, storage: storage))
    }

    /// A select's value.
    func value(_ module: String, _ method: String, _ arguments: String = "null", user: String? = nil,
               table: String? = nil, storage: String? = nil) throws -> Value {
        guard case .value(let value) = try call(module, method, arguments, user: user, table: table, storage: storage) else {
            throw EngineError(.statementFailed, "\(module).\(method) is not a select")
        }
        return value
    }

    /// A write's result.
    @discardableResult
    func write(_ module: String, _ method: String, _ arguments: String = "null", user: String? = nil,
               table: String? = nil, storage: String? = nil) throws -> WriteResult {
        guard case .write(let result) = try call(module, method, arguments, user: user, table: table, storage: storage) else {
            throw EngineError(.statementFailed, "\(module).\(method) is not a write")
        }
        return result
    }

    /// The engine error of a call, failing the test when it succeeds.
    func failure(_ module: String, _ method: String, _ arguments: String = "null", user: String? = nil,
                 table: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) -> EngineError? {
        do {
            let result = try call(module, method, arguments, user: user, table: table)
            Issue.record("expected \(module).\(method) to fail, got \(result)", sourceLocation: sourceLocation)
        } catch let error as EngineError {
            return error
        } catch {
            Issue.record("expected an EngineError, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}
