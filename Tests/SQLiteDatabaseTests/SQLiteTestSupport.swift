import SQLiteDatabase
import DAOEngine
import Dispatch
import DAOValue
import Foundation
import Testing

/// A fresh folder under the temporary directory for SQLite files, removed with the value.
final class TemporaryFolder {
    let path: String

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-sqlite-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A path for `name` inside the folder.
    func file(_ name: String = "test.sqlite") -> String { path + "/" + name }

    /// A writable connection to a new file in the folder.
    func database(_ name: String = "test.sqlite", configuration: DatabaseConfiguration = .init()) throws -> Database {
        try Database(path: file(name), readOnly: false, configuration: configuration)
    }
}

extension Database {
    /// Every row of `sql`, each as its column values.
    func rows(_ sql: String, _ bindings: [Value] = []) throws -> [[Value]] {
        let statement = try cachedStatement(sql)
        try statement.bind(bindings)
        var rows: [[Value]] = []
        while try statement.step() {
            rows.append((0..<statement.columnCount).map { statement.value(at: $0) })
        }
        return rows
    }

    /// The first column of the first row of `sql`.
    func scalar(_ sql: String, _ bindings: [Value] = []) throws -> Value {
        try rows(sql, bindings).first?.first ?? .null
    }

    /// Runs a write statement with `bindings`.
    func run(_ sql: String, _ bindings: [Value] = []) throws {
        let statement = try cachedStatement(sql)
        try statement.bind(bindings)
        try statement.run()
    }
}

/// Runs `body` and returns the `SQLiteError` it throws; records an issue if it throws none.
func sqliteError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> SQLiteError? {
    do {
        try body()
        Issue.record("expected an SQLiteError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as SQLiteError {
        return error
    } catch {
        Issue.record("expected an SQLiteError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// An error of the test's own, to see it rethrown unchanged.
struct Rejected: Error, Equatable {}

/// Whether `body` throws `Rejected`.
///
/// Not `#expect(throws:)`: nested in a closure passed to a generic function,
/// this toolchain compiles it into code that never runs its body.
func throwsRejected(_ body: () throws -> Void) -> Bool {
    do {
        try body()
        return false
    } catch {
        return error is Rejected
    }
}

extension DatabasePool {
    /// Runs `body` while `count` reads hold a reader each (each having run
    /// `read` first); false if they did not all finish within 30 s.
    func holdingReaders(_ count: Int, read: @escaping @Sendable (Database) throws -> Void = { _ in },
                        _ body: () -> Void) -> Bool {
        // A read goes to the writer when it is free: hold it, so that every read takes a reader.
        holdingWriter { holdingReadersWhileTheWriterIsBusy(count, read: read, body) }
    }

    /// Runs `body` while another thread holds the writer in a write body.
    func holdingWriter<T>(_ body: () throws -> T) rethrows -> T {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = try? self.write { _ in
                entered.signal()
                release.wait()
            }
            done.signal()
        }.start()
        entered.wait()
        defer {
            release.signal()
            done.wait()
        }
        return try body()
    }

    private func holdingReadersWhileTheWriterIsBusy(_ count: Int, read: @escaping @Sendable (Database) throws -> Void,
                                                    _ body: () -> Void) -> Bool {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            Thread {
                _ = try? self.read { db in
                    try read(db)
                    entered.signal()
                    release.wait()
                }
                group.leave()
            }.start()
        }
        for _ in 0..<count { entered.wait() }
        body()
        for _ in 0..<count { release.signal() }
        return group.wait(timeout: .now() + 30) == .success
    }
}
