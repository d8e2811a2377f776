import DAODialect
import DAOEngine
import SQLiteDatabase
import DAOValue
import Foundation

/// What a rekey did: counts over every database file it visited.
public struct RekeyReport: Sendable {
    /// A value left as it was: it did not decrypt (its key is not in the ring, or altered bytes).
    public struct Failure: Sendable {
        public var location: String
        public var table: String
        public var column: String
        public var message: String
    }

    /// The keyring's current key when the rekey started.
    public var currentKey: String
    public var databases = 0
    /// Ciphertexts written again with their target key.
    public var reencrypted = 0
    /// Plaintext values of `crypt` columns encrypted (written before the property was declared `crypt`).
    public var encrypted = 0
    public var failed = 0
    /// The first failures (at most `RekeyJob.failuresKept`).
    public var failures: [Failure] = []

    /// One JSON object, the summary `daogate rekey` prints.
    public var value: Value {
        var object: OrderedObject = [
            "currentKey": .string(currentKey), "databases": .integer(Int64(databases)),
            "reencrypted": .integer(Int64(reencrypted)), "encrypted": .integer(Int64(encrypted)),
            "failed": .integer(Int64(failed)),
        ]
        object["failures"] = .array(failures.map {
            ["database": .string($0.location), "table": .string($0.table), "column": .string($0.column), "message": .string($0.message)]
        })
        return .object(object)
    }
}

/// `daogate rekey`: re-encrypts every encrypted value of every database file
/// to its target key — a module's own (`key="…"`) for its table, the ring's
/// current key for everything else — and encrypts the plaintext left in
/// `crypt` columns.
///
/// What it visits: for each storage (the default one and every custom one),
/// its common file and every user's; and the files modules are bound to
/// (`database=`). In each, every table and column: a blob that is a
/// ciphertext (`Cipher.isCiphertext`) not already written with its target
/// key is decrypted with the context it was written under and encrypted
/// again under the same context. The contexts: `kv:<business>/<key>` in
/// `daogate_kv`, `lru:<cache>/<key>` in a disk cache's table, and for module
/// tables the column's name, then every `crypt` property of the modules (as
/// a read tries them). A column of a module's table named as one of its
/// `crypt` properties also has its plaintext values encrypted.
///
/// It works in batches of `batchSize` rows: read without the write lock,
/// then written in one `BEGIN IMMEDIATE` transaction through the database's
/// one writer, each row only if it still holds what was read (a call of the
/// server in the same process may have written it meanwhile, with the
/// current key). Calls interleave with it and nothing is lost; a value it
/// already moved is not selected again, so running it again continues where
/// an interrupted run stopped.
public struct RekeyJob {
    public let engine: Engine
    public let cipher: Cipher
    public var batchSize = 500
    public static let failuresKept = 20

    public init(engine: Engine, cipher: Cipher) {
        self.engine = engine
        self.cipher = cipher
    }

    /// Runs over every database; `progress` is called after each file with the report so far and the file
    /// (what it throws stops the run: a later run continues).
    public func run(progress: (RekeyReport, String) throws -> Void = { _, _ in }) throws -> RekeyReport {
        let ring = cipher.keyring.snapshot
        var report = RekeyReport(currentKey: ring.current)
        for location in locations() {
            let visited = try engine.withExistingDatabase(location) { database in
                try rekey(database, location: location, current: ring.current, report: &report)
                return true
            }
            if visited == true {
                report.databases += 1
                try progress(report, location.description)
            }
        }
        return report
    }

    /// Every database file that exists: each storage's common and users' files, and the bound files.
    func locations() -> [DatabaseLocation] {
        var locations: [DatabaseLocation] = []
        for storage in [nil] + engine.customStorages().map(Optional.some) {
            locations += engine.existingLocations(storage: storage)
        }
        let bound = Set(engine.modules.values.compactMap(\.database)).sorted()
        for path in bound where engine.exists(.file(path)) { locations.append(.file(path)) }
        return locations
    }

    /// What the tables of modules are: their `crypt` properties and their own key.
    private struct ModuleTable {
        var properties: Set<String> = []
        var keyID: String?
    }

    private func rekey(_ database: OpenDatabase, location: DatabaseLocation, current: String,
                       report: inout RekeyReport) throws {
        let tables = try database.pool.read { db in
            let statement = try db.makeStatement(
                "SELECT name, sql LIKE '%WITHOUT ROWID%' FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")
            var tables: [(String, Bool)] = []
            while try statement.step() { tables.append((statement.string(at: 0), statement.int64(at: 1) != 0)) }
            return tables
        }
        var moduleTables: [String: ModuleTable] = [:]
        for module in engine.modules.values {
            guard let table = module.tableName?.lowercased() else { continue }
            moduleTables[table, default: ModuleTable()].properties.formUnion(module.encryptedProperties.values.flatMap(\.self))
            if let key = module.keyID { moduleTables[table]?.keyID = key }
        }
        let allProperties = Set(engine.modules.values.flatMap { $0.encryptedProperties.values.flatMap(\.self) }).sorted()
        for (table, withoutRowID) in tables {
            let columns = try database.pool.read { db in
                let statement = try db.makeStatement("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid")
                try statement.bind([.string(table)])
                var columns: [(name: String, pk: Int64)] = []
                while try statement.step() { columns.append((statement.string(at: 0), statement.int64(at: 1))) }
                return columns
            }
            let keyColumns = withoutRowID ? columns.filter { $0.pk > 0 }.sorted { $0.pk < $1.pk }.map(\.name) : ["rowid"]
            let owner = moduleTables[table.lowercased()]
            let isCache = table.hasPrefix("daogate_lru_") && table != "daogate_lru_caches"
            let target = owner?.keyID ?? current
            for column in columns.map(\.name) {
                let contexts: (OrderedObject) -> [String]
                var encryptsPlaintext = false
                if table == "daogate_kv" {
                    guard column == "value" else { continue }
                    contexts = { row in ["kv:\(row["business"]?.stringValue ?? "")/\(row["key"]?.stringValue ?? "")"] }
                } else if isCache {
                    guard column == "value" else { continue }
                    let cache = String(table.dropFirst("daogate_lru_".count))
                    contexts = { row in ["lru:\(cache)/\(row["key"]?.stringValue ?? "")"] }
                } else {
                    contexts = { _ in [column] + allProperties.filter { $0 != column } }
                    encryptsPlaintext = owner?.properties.contains(column) == true
                }
                let extra = table == "daogate_kv" ? ["business", "key"] : isCache ? ["key"] : []
                try rekey(database, location: location, table: table, column: column, keyColumns: keyColumns,
                          extraColumns: extra, target: target, contexts: contexts, encryptsPlaintext: encryptsPlaintext,
                          report: &report)
            }
        }
    }

    /// Moves one column's values, batch by batch, in the order of the table's key.
    private func rekey(_ database: OpenDatabase, location: DatabaseLocation, table: String, column: String,
                       keyColumns: [String], extraColumns: [String], target: String,
                       contexts: (OrderedObject) -> [String], encryptsPlaintext: Bool,
                       report: inout RekeyReport) throws {
        let quote = { (name: String) in "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        let keyList = keyColumns.map { $0 == "rowid" ? "rowid" : quote($0) }.joined(separator: ", ")
        let placeholders = keyColumns.map { _ in "?" }.joined(separator: ", ")
        let header = Cipher.header(keyID: target).map { String(format: "%02x", $0) }.joined()
        let targetLength = header.count / 2
        let onTarget = "substr(\(quote(column)), 1, \(targetLength)) = x'\(header)'"
        let isCiphertext = "typeof(\(quote(column))) = 'blob' AND substr(\(quote(column)), 1, 2) = x'4447'"
        let needsWork = encryptsPlaintext
            ? "\(quote(column)) IS NOT NULL AND NOT (typeof(\(quote(column))) = 'blob' AND \(onTarget))"
            : "\(isCiphertext) AND NOT \(onTarget)"
        let selected = ([keyList, quote(column)] + extraColumns.map(quote)).joined(separator: ", ")
        let select = "SELECT \(selected) FROM \(quote(table)) WHERE \(needsWork) AND (\(keyList)) > (\(placeholders)) ORDER BY \(keyList) LIMIT \(batchSize)"
        let first = "SELECT \(selected) FROM \(quote(table)) WHERE \(needsWork) ORDER BY \(keyList) LIMIT \(batchSize)"
        let update = "UPDATE \(quote(table)) SET \(quote(column)) = ? WHERE (\(keyList)) = (\(placeholders)) AND \(quote(column)) IS ?"
        var cursor: [Value]?
        while true {
            // Read without the write lock: a scan of a large table never holds the server's writes back.
            let rows = try database.pool.read { db in
                let statement = try db.makeStatement(cursor == nil ? first : select)
                if let cursor { try statement.bind(cursor) }
                var rows: [(key: [Value], stored: Value, row: OrderedObject)] = []
                while try statement.step() {
                    let key = (0..<keyColumns.count).map { statement.value(at: $0) }
                    var row: OrderedObject = [:]
                    for (index, name) in extraColumns.enumerated() { row[name] = statement.value(at: keyColumns.count + 1 + index) }
                    rows.append((key, statement.value(at: keyColumns.count), row))
                }
                return rows
            }
            guard let last = rows.last else { break }
            cursor = last.key
            var updates: [(values: [Value], wasPlaintext: Bool)] = []
            for row in rows {
                guard let value = try moved(row.stored, contexts: contexts(row.row), target: target,
                                            encryptsPlaintext: encryptsPlaintext, failure: { message in
                    report.failed += 1
                    if report.failures.count < Self.failuresKept {
                        report.failures.append(.init(location: location.description, table: table, column: column, message: message))
                    }
                }) else { continue }
                updates.append(([value.bytes] + row.key + [row.stored], value.wasPlaintext))
            }
            // One transaction per batch; a row written since it was read (by then with the current key) is left alone.
            try database.pool.write { db in
                try db.inTransaction {
                    let writer = try db.makeStatement(update)
                    for update in updates {
                        writer.reset()
                        try writer.bind(update.values)
                        guard try writer.run() == 1 else { continue }
                        if update.wasPlaintext { report.encrypted += 1 } else { report.reencrypted += 1 }
                    }
                }
            }
            if rows.count < batchSize { break }
        }
    }

    /// The value written again with `target`, or nil (after reporting it) when it cannot be.
    private func moved(_ stored: Value, contexts: [String], target: String, encryptsPlaintext: Bool,
                       failure: (String) -> Void) throws -> (bytes: Value, wasPlaintext: Bool)? {
        if case .blob(let bytes) = stored, Cipher.isCiphertext(bytes) {
            var lastError: CipherError?
            for context in contexts {
                do throws(CipherError) {
                    let value = try cipher.decrypt(bytes, context: context)
                    return (.blob(try cipher.encrypt(value, context: context, keyID: target)), false)
                } catch {
                    lastError = error
                    if error.kind != .authenticationFailed { break }
                }
            }
            failure(lastError?.message ?? "the value does not decrypt")
            return nil
        }
        guard encryptsPlaintext, !stored.isNull else { return nil }
        do throws(CipherError) {
            return (.blob(try cipher.encrypt(stored, context: contexts[0], keyID: target)), true)
        } catch {
            failure(error.message)
            return nil
        }
    }
}
