import CSQLite
import DAODialect
import DAOEngine
import DAOValue
import Foundation

/// The cost of a user's first call after their file was closed: open +
/// version check + first statement, in microseconds, through the engine
/// (a files cap of 1, so each call closes the previous user's file and opens
/// its own), against the floor SQLite sets: a raw open + PK select + close of
/// the same files through the C API.
///
/// - "re-open": the version check remembered (the file was open before in
///   this process): what a user pays when the budget closed their file.
/// - "first open in this process": the version check run (a fresh engine
///   over existing files): what each user pays once after a restart.
struct FirstCallBenchmark {
    let benchModules: String

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-bench-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let module = try ModuleLoader.load(file: benchModules + "/UserItems.xml")
        let users = 2_000
        do {
            let engine = try Engine(modules: [module], configuration: Engine.Configuration(dataDirectory: directory))
            for user in 0..<users {
                _ = try engine.call(Call(module: "UserItems", method: "putItem", arguments: [.integer(1), .string("item of \(user)")]),
                                    context: CallContext(user: "user\(user)"))
            }
            engine.shutdown()
        }
        func engine() throws -> Engine {
            try Engine(modules: [module], configuration: Engine.Configuration(dataDirectory: directory, maximumOpenDatabases: 1))
        }
        func read(_ engine: Engine, _ user: Int) throws {
            let call = Call(module: "UserItems", method: "getItem", arguments: [.integer(1)])
            guard case .value(.string) = try engine.call(call, context: CallContext(user: "user\(user)")) else {
                fatalError("getItem returned no string")
            }
        }
        var firstOpen: [Double] = [], reopen: [Double] = [], raw: [Double] = []
        for _ in 0..<5 {
            let fresh = try engine()
            firstOpen.append(try microseconds(users) { user in try read(fresh, user) })
            reopen.append(try microseconds(users) { user in try read(fresh, user) })
            fresh.shutdown()
            raw.append(try microseconds(users) { user in
                try RawSQLite.readOnce(path: directory + "/users/p-user\(user).db")
            })
        }
        print(String(format: "first call after the file was closed (medians of 5 rounds of %d users, µs per call): "
            + "re-open %.0f µs, first open in this process (version check) %.0f µs; "
            + "raw SQLite open + PK select + close %.0f µs (ratio re-open/raw %.2f)",
            users, median(reopen), median(firstOpen), median(raw), median(reopen) / median(raw)))
    }

    /// The mean microseconds of `body(user)` over `count` users.
    private func microseconds(_ count: Int, _ body: (Int) throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        for user in 0..<count { try body(user) }
        return (ContinuousClock.now - start).seconds * 1e6 / Double(count)
    }
}

extension RawSQLite {
    /// Open, one PK select, close: SQLite's own floor for a cold read.
    static func readOnce(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db = handle else {
            throw RawError.failed("open")
        }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "select content from user_items where id = 1", -1, &statement, nil) == SQLITE_OK else {
            throw RawError.failed("prepare")
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw RawError.failed("step") }
    }
}
