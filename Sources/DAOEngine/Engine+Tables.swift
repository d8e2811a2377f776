import SQLiteDatabase
import DAODialect
import Foundation
import DAOValue

/// A table's life in a database, as the reference's proxy event handler sees it.
public struct TableEvent: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        /// The stored version is older than the module's: an upgrade begins.
        case shouldUpgrade = "should_upgrade"
        /// The upgrade failed and was rolled back: the table keeps its data and version.
        case upgradeFailed = "upgrade_failed"
        /// The initializer created the table.
        case tableCreated = "table_created"
        /// The table was dropped (a reset on upgrade, or a delete operation).
        case tableDeleted = "table_deleted"
        /// The module was refused the table: another module made it in this storage (`error` names which),
        /// and it keeps its maker, rows and version.
        case tableOwned = "table_owned"
    }

    public var kind: Kind
    public var module: String
    public var table: String
    public var location: DatabaseLocation
    public var fromVersion: Version?
    public var toVersion: Version?
    public var error: String?

    public var description: String {
        var text = "\(kind.rawValue) \(module) table \(table) in \(location)"
        if let fromVersion, let toVersion { text += " \(fromVersion) → \(toVersion)" }
        if let error { text += ": \(error)" }
        return text
    }
}

/// Receives table events; the gateway logs and counts them. Called on the
/// thread of the call that caused the event.
public protocol EngineObserver: Sendable {
    func engine(_ engine: Engine, didEmit event: TableEvent)
}

/// The table where daogate keeps each table's version, as the reference's
/// `TableVersions` (keyed by table name), plus the module that owns it.
let tableVersionsSchema = "create table if not exists TableVersions (tableName text primary key, version text not null, module text)"

extension Engine {
    /// Brings a module's table up to date in a database before its first
    /// call there: runs the initializer once, or the upgrades (or a reset)
    /// when the stored version is older. Runs once per process, module,
    /// table and module version (a reload may change it); concurrent first
    /// calls wait on the writer.
    func prepareTable(_ module: Module, _ table: TableChoice, in database: OpenDatabase) throws(EngineError) {
        if database.isReady(module, table) { return }
        var readied = Readied()
        defer { publish(readied, in: database) }
        try withWriter(database, allOrNothing: true) { db throws(EngineError) in
            try readyTable(module, table, in: database, on: db, into: &readied)
        }
    }

    /// What readying tables under the writer leaves for after its release:
    /// the events to report, and the tables to record as ready.
    ///
    /// A table is recorded as ready only once the writer is released, never
    /// under it: a call that finds it ready skips the check and may read on
    /// a reader, and a reader's snapshot is renewed only after the write
    /// that holds the writer ends (`DatabasePool.read`). Recorded earlier,
    /// a call of a reloaded module set could read, in a snapshot taken
    /// before the upgrade, the table without its new columns.
    struct Readied {
        var events: [TableEvent] = []
        var tables: [(module: String, table: String, version: Version, drops: Int)] = []
        /// `migrateTableVersions` ran.
        var tableVersionsMigrated = false
    }

    /// `prepareTable` for a caller that holds the writer, as a write does: a
    /// table dropped under the writer (`deleteTable`) is then either dropped
    /// before this call is ready, and created again, or after it ran. Its
    /// events and readiness go into `readied`, to `publish` once the writer is released.
    func readyTable(_ module: Module, _ table: TableChoice, in database: OpenDatabase,
                    on db: Database, into readied: inout Readied) throws(EngineError) {
        if database.isReady(module, table) { return }
        try migrateTableVersions(in: database, on: db)
        readied.tableVersionsMigrated = true
        try claim(table, for: module, in: database.location, on: db)
        database.readiness.owners.withLock { $0[table.name.lowercased()] = module.name }
        readied.events += try bringUpToDate(module, table.name, database.location, on: db)
        // Drops happen under the writer: the count read here is the one the table was made ready under.
        readied.tables.append((module.name, table.name, module.version,
                               database.readiness.drops.load(ordering: .sequentiallyConsistent)))
    }

    /// Once the writer is released: records the readied tables as ready (unless one was dropped since), then
    /// reports the events.
    func publish(_ readied: Readied, in database: OpenDatabase) {
        if readied.tableVersionsMigrated { database.markReady(Self.tableVersionsMigrated) }
        for table in readied.tables {
            database.markReady(module: table.module, table: table.table, version: table.version, unlessDroppedSince: table.drops)
        }
        emit(readied.events)
    }

    func emit(_ events: [TableEvent]) {
        for event in events { observer?.engine(self, didEmit: event) }
    }

    /// Refuses a table that is not the module's own in this database: a
    /// table belongs to the module that made it, as `TableVersions` records.
    ///
    /// A table recorded as another module's is refused whoever names it (the
    /// module's `tableName`, or a caller through `X-Table-Name`):
    /// `table_owned`, reported as a `table_owned` event. A module added later
    /// with a `tableName` a template's caller chose first thus never reads the
    /// planted rows. A name in the schema that no module recorded (an index, a
    /// reference app's table, a bound file's) is refused to a caller who
    /// names it; a module whose own `tableName` it is adopts it, and records
    /// it as its own (unless not `adopting`: a reader's look, or a drop).
    func claim(_ table: TableChoice, for module: Module, in location: DatabaseLocation, on db: Database,
               adopting: Bool = true) throws(EngineError) {
        switch try owner(of: table.name, on: db) {
        case nil:
            return
        case .module(let owner) where owner == module.name:
            return
        case .module(let owner):
            let message = "table '\(table.name)' in this storage was made by module \(owner), and is that module's alone; module \(module.name) does not read or write it"
            var error = EngineError(.tableOwned, message)
            error.owner = owner
            observer?.engine(self, didEmit: TableEvent(kind: .tableOwned, module: module.name, table: table.name,
                                                       location: location, error: "made by module \(owner)"))
            throw error
        case .unrecorded where table.chosenByCaller:
            throw EngineError(.invalidTable, "'\(table.name)' already names something in this storage that is not module \(module.name)'s table")
        case .unrecorded:
            guard adopting else { return }
            try run(tableVersionsSchema, on: db)
            try run("update TableVersions set module = ? where tableName = ? collate nocase and module is null",
                    [.string(module.name), .string(table.name)], on: db)
        }
    }

    enum TableOwner: Equatable {
        case module(String)
        /// In the schema, or in `TableVersions` without a module, but recorded as no module's.
        case unrecorded
    }

    /// Who owns a name of the database's schema, nil when nothing has it.
    /// `TableVersions` must have its `module` column (`migrateTableVersions`).
    func owner(of table: String, on db: Database) throws(EngineError) -> TableOwner? {
        if try tableExists("TableVersions", on: db),
           let module = try queryText("select coalesce(module, '') from TableVersions where tableName = ? collate nocase", [.string(table)], on: db) {
            return module.isEmpty ? .unrecorded : .module(module)
        }
        let named = try queryText("select name from sqlite_master where name = ? collate nocase", [.string(table)], on: db)
        return named == nil ? nil : .unrecorded
    }

    /// Gives a `TableVersions` without the `module` column (the reference's,
    /// of a file made elsewhere) that column, its rows naming no module; on
    /// the writer, until it is recorded as done once the writer is released
    /// (as a table's readiness, `Readied`: a reader must not skip it in a
    /// snapshot taken before it).
    func migrateTableVersions(in database: OpenDatabase, on db: Database) throws(EngineError) {
        if database.isReady(Self.tableVersionsMigrated) { return }
        if try tableExists("TableVersions", on: db),
           try queryText("select name from pragma_table_info('TableVersions') where name = 'module'", on: db) == nil {
            try run("alter table TableVersions add column module text", on: db)
        }
    }

    /// `migrateTableVersions` for a caller without the writer: a read of the owners.
    func migrateTableVersions(in database: OpenDatabase) throws(EngineError) {
        if database.isReady(Self.tableVersionsMigrated) { return }
        try withWriter(database, allOrNothing: true) { db throws(EngineError) in try migrateTableVersions(in: database, on: db) }
        database.markReady(Self.tableVersionsMigrated)
    }

    static let tableVersionsMigrated = "TableVersions.module"

    /// Returns the events to report once the writer is released.
    private func bringUpToDate(_ module: Module, _ table: String, _ location: DatabaseLocation,
                               on db: Database) throws(EngineError) -> [TableEvent] {
        func event(_ kind: TableEvent.Kind, from: Version? = nil, error: String? = nil) -> TableEvent {
            TableEvent(kind: kind, module: module.name, table: table, location: location,
                       fromVersion: from, toVersion: from == nil ? nil : module.version, error: error)
        }
        let stored = try storedVersion(of: table, on: db)
        guard let stored else {
            let created = try transaction(db) { () throws(EngineError) -> Bool in
                let created = try runInitializer(module, table, location, on: db)
                try setVersion(module, table, on: db)
                return created
            }
            return created ? [event(.tableCreated)] : []
        }
        guard stored < module.version else { return [] }
        observer?.engine(self, didEmit: event(.shouldUpgrade, from: stored))
        do throws(EngineError) {
            let reset = module.resetOnUpgrade || module.upgradeMinVersion.map { stored < $0 } == true
            let created = try transaction(db) { () throws(EngineError) -> Bool in
                var created = false
                if reset {
                    try run("drop table if exists \(quoted(table))", on: db)
                    created = try runInitializer(module, table, location, on: db)
                } else {
                    for upgrade in module.upgrades where stored < upgrade.toVersion && upgrade.toVersion <= module.version {
                        let statements: [RenderedStatement]
                        do throws(RenderError) {
                            statements = try upgrade.render(table: table, globals: globalArguments(module: module.name))
                        } catch {
                            throw EngineError(error)
                        }
                        _ = try execute(statements, Origin(module: module, name: "\(module.name): upgrade to \(upgrade.toVersion)"), on: db)
                    }
                }
                try setVersion(module, table, on: db)
                return created
            }
            return reset ? [event(.tableDeleted, from: stored)] + (created ? [event(.tableCreated, from: stored)] : []) : []
        } catch {
            let message = "upgrading table \(table) of module \(module.name) from version \(stored) to \(module.version) failed, so the table keeps its data and version \(stored): \(error.message)"
            observer?.engine(self, didEmit: event(.upgradeFailed, from: stored, error: error.message))
            var failure = EngineError(.upgradeFailed, message, method: error.method, line: error.line, sqlite: error.sqlite)
            failure.render = error.render
            throw failure
        }
    }

    /// Runs the module's initializer for `table`; false when it has none.
    private func runInitializer(_ module: Module, _ table: String, _ location: DatabaseLocation,
                                on db: Database) throws(EngineError) -> Bool {
        guard let name = module.initializer, let initializer = module.method(named: name) else { return false }
        let target = Target(module: module, method: initializer, location: location,
                            table: TableChoice(name: table, chosenByCaller: false))
        let runs = try render(.null, target, nil)
        for run in runs { _ = try execute(run, target.origin, on: db) }
        return true
    }

    func storedVersion(of table: String, on db: Database) throws(EngineError) -> Version? {
        try run(tableVersionsSchema, on: db)
        return try recordedVersion(of: table, on: db)
    }

    /// The version `TableVersions` (which must exist) records for a table.
    func recordedVersion(of table: String, on db: Database) throws(EngineError) -> Version? {
        try queryText("select version from TableVersions where tableName = ? collate nocase", [.string(table)], on: db).flatMap(Version.init)
    }

    private func setVersion(_ module: Module, _ table: String, on db: Database) throws(EngineError) {
        try run("insert or replace into TableVersions (tableName, version, module) values (?, ?, ?)",
                [.string(table), .string(module.version.description), .string(module.name)], on: db)
    }

    // MARK: Bookkeeping SQL

    private func bookkeepingStatement(_ sql: String, on db: Database) throws(SQLiteError) -> Statement {
        try db.makeStatement(sql)
    }

    /// Runs daogate's own SQL (not a module's). Its statements are prepared each time, not kept in the
    /// connection's statement cache: they set a file up, once per file while this process runs, and
    /// kept they would cost every open file some 1.5 KB each for as long as it stays open.
    func run(_ sql: String, _ bindings: [Value] = [], on db: Database) throws(EngineError) {
        do {
            let statement = try bookkeepingStatement(sql, on: db)
            try statement.bind(bindings)
            try statement.run()
        } catch {
            throw EngineError(storage: error, "\(error.message) (in: \(sql))")
        }
    }

    /// The first column of the first row of daogate's own query, as text.
    func queryText(_ sql: String, _ bindings: [Value] = [], on db: Database) throws(EngineError) -> String? {
        do {
            let statement = try bookkeepingStatement(sql, on: db)
            defer { statement.reset() }
            try statement.bind(bindings)
            guard try statement.step() else { return nil }
            return statement.value(at: 0).stringValue
        } catch {
            throw EngineError(storage: error, "\(error.message) (in: \(sql))")
        }
    }
}

/// An identifier quoted for SQL.
func quoted(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
