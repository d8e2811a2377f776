import CSQLite
import DAODialect
import DAOEngine
import DAOValue
import Foundation

/// The engine against raw prepared `sqlite3_step` loops on the same database,
/// in one run: Demo's getItem by primary key, and 10,000 rows inserted by a
/// `foreach` insert method against raw prepared inserts in one transaction.
struct EngineBenchmark {
    let modules: String
    let benchModules: String

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-bench-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let demo = try ModuleLoader.load(file: modules + "/Demo.xml")
        let bench = try ModuleLoader.load(file: benchModules + "/Bench.xml")
        let engine = try Engine(modules: [demo, bench], configuration: Engine.Configuration(dataDirectory: directory))
        defer { engine.shutdown() }

        // getItem: 1,000 rows, looked up round-robin.
        let rows = 1_000
        _ = try engine.transaction((0..<rows).map { Call(module: "Demo", method: "insertItem", arguments: [.string("content of row \($0)")]) })
        _ = try engine.call(Call(module: "Bench", method: "clearItems"))
        let path = directory + "/common.db"
        let raw = try RawSQLite(path: path)
        var key: Int64 = 0
        func next() -> Int64 { key = key % Int64(rows) + 1; return key }
        let only = ProcessInfo.processInfo.environment["DAOGATE_BENCH_ONLY"]
        if only != "insert" {
            // Interleaved rounds, medians. The raw loop runs per step in
            // autocommit, as a plain sqlite3_step loop does, and alone: an
            // engine write first ends the engine readers' open snapshots, which
            // would otherwise make its read locks cheaper (SQLite shares a
            // process's locks on the WAL index between connections). The
            // stricter baseline keeps one read transaction around all its
            // lookups, as the engine's readers do.
            var engineRates: [Double] = [], rawRates: [Double] = [], heldRates: [Double] = []
            for _ in 0..<7 {
                engineRates.append(try measure(rounds: 1, iterations: 50_000) {
                    let call = Call(module: "Demo", method: "getItem", arguments: [.integer(next())])
                    guard case .value(.string) = try engine.call(call) else { fatalError("getItem returned no string") }
                })
                _ = try engine.call(Call(module: "Bench", method: "clearItems"))
                rawRates.append(try measure(rounds: 1, iterations: 50_000) { consume(try raw.getItem(next())) })
                try raw.execute("begin")
                heldRates.append(try measure(rounds: 1, iterations: 50_000) { consume(try raw.getItem(next())) })
                try raw.execute("commit")
            }
            let engineRate = median(engineRates), rawRate = median(rawRates), heldRate = median(heldRates)
            print("getItem by primary key (medians of 7 interleaved rounds): engine \(Int(engineRate)) calls/s, "
                + "raw sqlite3_step loop \(Int(rawRate)) lookups/s, ratio \(String(format: "%.2f", engineRate / rawRate)); "
                + "raw loop in one read transaction \(Int(heldRate)) lookups/s, ratio \(String(format: "%.2f", engineRate / heldRate))")
        }
        if only == "getItem" { return }

        // 10,000 inserts: one foreach call against one raw transaction.
        let count = 10_000
        let items = Value.array((0..<count).map { ["content": .string("item \($0)"), "n": .integer(Int64($0))] })
        let insertCall = Call(module: "Bench", method: "insertItems", arguments: ["items": items])
        _ = try engine.call(Call(module: "Bench", method: "clearItems"))
        var engineInsertRates: [Double] = [], rawInsertRates: [Double] = []
        for _ in 0..<7 {
            engineInsertRates.append(try measure(rounds: 1, iterations: 1) {
                _ = try engine.call(insertCall)
                _ = try engine.call(Call(module: "Bench", method: "clearItems"))
            })
            rawInsertRates.append(try measure(rounds: 1, iterations: 1) {
                try raw.insertItems(count)
                try raw.execute("delete from bench_items")
            })
        }
        let engineInserts = median(engineInsertRates), rawInserts = median(rawInsertRates)
        print("insert \(count) rows in one transaction: engine foreach \(Int(engineInserts * Double(count))) rows/s, raw sqlite3 \(Int(rawInserts * Double(count))) rows/s, ratio \(String(format: "%.2f", engineInserts / rawInserts)) (medians of 7 interleaved rounds, each also deleting the rows)")
    }
}

/// The baseline: prepared statements driven directly through the C API.
final class RawSQLite {
    let db: OpaquePointer
    let select: OpaquePointer
    let insert: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            throw RawError.failed("open")
        }
        db = handle
        sqlite3_exec(db, "pragma journal_mode=wal; pragma synchronous=normal", nil, nil, nil)
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, #"select content from demoTable where "index" = ?"#, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
              let select = statement else { throw RawError.failed("prepare select") }
        self.select = select
        guard sqlite3_prepare_v3(db, "insert into bench_items (content, n) values (?, ?)", -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
              let insert = statement else { throw RawError.failed("prepare insert") }
        self.insert = insert
    }

    func getItem(_ key: Int64) throws -> String {
        defer { sqlite3_reset(select) }
        sqlite3_bind_int64(select, 1, key)
        guard sqlite3_step(select) == SQLITE_ROW, let text = sqlite3_column_text(select, 0) else { throw RawError.failed("step") }
        return String(cString: text)
    }

    func insertItems(_ count: Int) throws {
        try execute("begin immediate")
        for index in 0..<count {
            let content = "item \(index)"
            sqlite3_bind_text(insert, 1, content, -1, daogate_sqlite_transient())
            sqlite3_bind_int64(insert, 2, Int64(index))
            guard sqlite3_step(insert) == SQLITE_DONE else { throw RawError.failed("insert") }
            sqlite3_reset(insert)
        }
        try execute("commit")
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw RawError.failed(sql) }
    }

    deinit {
        sqlite3_finalize(select)
        sqlite3_finalize(insert)
        sqlite3_close(db)
    }

    enum RawError: Error { case failed(String) }
}
