import SQLiteDatabase
import DAODialect
import DAOValue
import Foundation

/// The reference's `APDAOProtocol` operations, for a module in a caller's storage.
extension Engine {
    /// What `deleteTables` removed.
    public struct DeletedTables: Sendable, Equatable {
        public var tables: [String]
        public var vacuumed: Bool
    }

    /// A table a module has created in a database, with its stored version.
    public struct TableInfo: Sendable, Equatable {
        public var table: String
        public var version: Version?

        public init(table: String, version: Version?) {
            self.table = table
            self.version = version
        }
    }

    /// The rowid of the last row inserted by the last write method in the
    /// module's database (`lastInsertRowId`); 0 when it inserted none. Calls
    /// of other callers of the same database come in between: prefer the
    /// `lastInsertRowID` of a call's own result. A database with no file
    /// yet is not created: its answer is 0.
    public func lastInsertRowID(module name: String, context: CallContext) throws(EngineError) -> Int64 {
        let module = try self.module(name)
        return try withDatabaseIfExists(try location(of: module, context: context)) { database throws(EngineError) in
            try withWriter(database) { db throws(EngineError) in db.lastInsertRowID }
        } ?? 0
    }

    /// The module's method ids, in file order (`allMethodsList`).
    public func methodNames(module name: String) throws(EngineError) -> [String] {
        try module(name).methods.map(\.name)
    }

    /// The stored version of the module's table in the caller's database, nil
    /// when the table has not been created there (or the database has no file).
    public func storedVersion(module name: String, table requested: String? = nil,
                              context: CallContext) throws(EngineError) -> Version? {
        let module = try self.module(name)
        let table = try self.table(of: module, requested: requested)
        return try withDatabaseIfExists(try location(of: module, context: context)) { database throws(EngineError) in
            try migrateTableVersions(in: database)
            return try withReader(database) { db throws(EngineError) in
                try claim(table, for: module, in: database.location, on: db, adopting: false)
                guard try tableExists("TableVersions", on: db) else { return nil }
                return try recordedVersion(of: table.name, on: db)
            }
        } ?? nil
    }

    /// The tables the module has created in the caller's database (several
    /// for a template module), with their versions.
    public func tables(module name: String, context: CallContext) throws(EngineError) -> [TableInfo] {
        let module = try self.module(name)
        return try withDatabaseIfExists(try location(of: module, context: context)) { database throws(EngineError) in
            try migrateTableVersions(in: database)
            return try withReader(database) { db throws(EngineError) in try tables(of: module, on: db) }
        } ?? []
    }

    /// Drops the module's table (`deleteTable`); false when it did not exist.
    /// The module stays usable: its next call creates the table again. A
    /// database with no file is left without one.
    ///
    /// A table another module made is refused (`table_owned`), unless
    /// `whoeverMadeIt` (the admin's) and the table is the module's `tableName`:
    /// then it is dropped whoever made it, which frees the name for the
    /// module's next call. A template's table named by the caller never is.
    @discardableResult
    public func deleteTable(module name: String, table requested: String? = nil,
                            context: CallContext, whoeverMadeIt: Bool = false) throws(EngineError) -> Bool {
        let module = try self.module(name)
        let table = try self.table(of: module, requested: requested)
        let location = try location(of: module, context: context)
        let existed = try withDatabaseIfExists(location) { database throws(EngineError) -> Bool in
            try withWriter(database) { db throws(EngineError) -> Bool in
                try migrateTableVersions(in: database, on: db)
                if !whoeverMadeIt || table.chosenByCaller { try claim(table, for: module, in: location, on: db, adopting: false) }
                // Before the drop, under the writer: a call that saw the table
                // ready and reads meanwhile is tried again (`reading`).
                database.forget(module: module.name, table: table.name)
                return try transaction(db) { () throws(EngineError) -> Bool in
                    let existed = try tableExists(table.name, on: db)
                    try run("drop table if exists \(quoted(table.name))", on: db)
                    try run(tableVersionsSchema, on: db)
                    try run("delete from TableVersions where tableName = ? collate nocase", [.string(table.name)], on: db)
                    return existed
                }
            }
        } ?? false
        if existed {
            emit([TableEvent(kind: .tableDeleted, module: module.name, table: table.name, location: location)])
        }
        return existed
    }

    /// Drops the module's tables whose whole name matches a caller's regular
    /// expression (`deleteTablesWithRegex:autovacuum:progress:`; the dialect
    /// is `CallerRegex`'s).
    ///
    /// Only tables the module created are considered, so no caller can drop
    /// another module's tables. `progress` receives the fraction done after
    /// each table. Matching is linear in each name and bounded in all.
    /// A database with no file has no tables: nothing is dropped, nothing
    /// vacuumed, and no file created.
    public func deleteTables(module name: String, matching pattern: String, vacuum: Bool, context: CallContext,
                             progress: ((Double) -> Void)? = nil) throws(EngineError) -> DeletedTables {
        let module = try self.module(name)
        let expression = try CallerRegex(pattern)
        let location = try location(of: module, context: context)
        let result = try withDatabaseIfExists(location) { database throws(EngineError) -> [String] in
            try withWriter(database) { db throws(EngineError) -> [String] in
                try migrateTableVersions(in: database, on: db)
                // Not a table another module's tableName names now: that module's name covers it (and it does not use it).
                let own = try tables(of: module, on: db).filter { table in
                    !modules.values.contains { $0.name != module.name && sameTable(table.table, $0.tableName) }
                }
                let matching = try expression.selecting(own, name: \.table).map(\.table)
                for table in matching { database.forget(module: module.name, table: table) }
                try transaction(db) { () throws(EngineError) in
                    for (index, table) in matching.enumerated() {
                        try run("drop table if exists \(quoted(table))", on: db)
                        try run("delete from TableVersions where tableName = ?", [.string(table)], on: db)
                        progress?(Double(index + 1) / Double(matching.count))
                    }
                }
                if vacuum { try run("vacuum", on: db) }
                return matching
            }
        }
        let dropped = result ?? []
        for table in dropped {
            observer?.engine(self, didEmit: TableEvent(kind: .tableDeleted, module: module.name, table: table, location: location))
        }
        if dropped.isEmpty { progress?(1) }
        return DeletedTables(tables: dropped, vacuumed: vacuum && result != nil)
    }

    /// Rebuilds the module's database file, returning free pages to the file
    /// system (`vacuumDatabase`). A database with no file is left without one.
    public func vacuum(module name: String, context: CallContext) throws(EngineError) {
        let module = try self.module(name)
        try withDatabaseIfExists(try location(of: module, context: context)) { database throws(EngineError) in
            try withWriter(database) { db throws(EngineError) in try run("vacuum", on: db) }
        }
    }

    // MARK: Helpers

    func module(_ name: String) throws(EngineError) -> Module {
        guard let module = modules[name] else { throw EngineError(.unknownModule, "no module is named '\(name)'") }
        return module
    }

    func tableExists(_ table: String, on db: Database) throws(EngineError) -> Bool {
        try queryText("select name from sqlite_master where type = 'table' and name = ? collate nocase", [.string(table)], on: db) != nil
    }

    private func tables(of module: Module, on db: Database) throws(EngineError) -> [TableInfo] {
        guard try tableExists("TableVersions", on: db) else { return [] }
        do {
            let statement = try db.cachedStatement("select tableName, version from TableVersions where module = ? order by tableName")
            defer { statement.reset() }
            try statement.bind([.string(module.name)])
            var tables: [TableInfo] = []
            while try statement.step() {
                tables.append(TableInfo(table: statement.string(at: 0), version: Version(statement.string(at: 1))))
            }
            return tables
        } catch {
            throw EngineError(storage: error, error.message)
        }
    }
}
