import DAOSQLite
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
    }

    public var kind: Kind
    public var module: String
    public var table: String
    public var location: StorageLocation
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
        if database.isReady(module: module.name, table: table.name, version: module.version) { return }
        var events: [TableEvent] = []
        defer { emit(events) }
        try withWriter(database, allOrNothing: true) { db throws(EngineError) in
            events = try readyTable(module, table, in: database, on: db)
        }
    }

    /// `prepareTable` for a caller that holds the writer, as a write does: a
    /// table dropped under the writer (`deleteTable`) is then either dropped
    /// before this call is ready, and created again, or after it ran.
    /// Returns the events to report once the writer is released.
    func readyTable(_ module: Module, _ table: TableChoice, in database: OpenDatabase,
                    on db: Database) throws(EngineError) -> [TableEvent] {
        if database.isReady(module: module.name, table: table.name, version: module.version) { return [] }
        if table.chosenByCaller { try claim(table.name, for: module, on: db) }
        let events = try bringUpToDate(module, table.name, database.location, on: db)
        database.markReady(module: module.name, table: table.name, version: module.version)
        return events
    }

    func emit(_ events: [TableEvent]) {
        for event in events { observer?.engine(self, didEmit: event) }
    }

    /// Refuses a table the caller named unless it is the module's own in this
    /// database: recorded as the module's in `TableVersions`, or not there at
    /// all (the module's first call creates it). A table, view, index or
    /// trigger of that name that the module did not record is someone else's.
    func claim(_ table: String, for module: Module, on db: Database) throws(EngineError) {
        switch try owner(of: table, on: db) {
        case nil:
            return
        case .module(let owner) where owner == module.name:
            return
        case .module(let owner):
            throw EngineError(.invalidTable, "table '\(table)' is module \(owner)'s in this storage; module \(module.name) may only use tables of its own")
        case .unrecorded:
            throw EngineError(.invalidTable, "'\(table)' already names something in this storage that is not module \(module.name)'s table")
        }
    }

    enum TableOwner: Equatable {
        case module(String)
        /// In the schema, but recorded as no module's.
        case unrecorded
    }

    /// Who owns a name of the database's schema, nil when nothing has it.
    func owner(of table: String, on db: Database) throws(EngineError) -> TableOwner? {
        if try tableExists("TableVersions", on: db),
           let module = try queryText("select coalesce(module, '') from TableVersions where tableName = ? collate nocase", [.string(table)], on: db) {
            return .module(module)
        }
        let named = try queryText("select name from sqlite_master where name = ? collate nocase", [.string(table)], on: db)
        return named == nil ? nil : .unrecorded
    }

    /// Returns the events to report once the writer is released.
    private func bringUpToDate(_ module: Module, _ table: String, _ location: StorageLocation,
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
    private func runInitializer(_ module: Module, _ table: String, _ location: StorageLocation,
                                on db: Database) throws(EngineError) -> Bool {
        guard let name = module.initializer, let initializer = module.method(named: name) else { return false }
        let target = Target(module: module, method: initializer, location: location,
                            table: TableChoice(name: table, chosenByCaller: false))
        let runs = try render(Call(module: module.name, method: name, table: table), target, nil)
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

    /// Runs daogate's own SQL (not a module's).
    func run(_ sql: String, _ bindings: [Value] = [], on db: Database) throws(EngineError) {
        do {
            let statement = try db.cachedStatement(sql)
            try statement.bind(bindings)
            try statement.run()
        } catch {
            throw EngineError(storage: error, "\(error.message) (in: \(sql))")
        }
    }

    /// The first column of the first row of daogate's own query, as text.
    func queryText(_ sql: String, _ bindings: [Value] = [], on db: Database) throws(EngineError) -> String? {
        do {
            let statement = try db.cachedStatement(sql)
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
