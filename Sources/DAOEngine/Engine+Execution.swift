import SQLiteDatabase
import DAODialect
import DAOValue

/// Where statements come from, for error messages and encryption.
struct Origin {
    let module: Module
    /// `Module.method`, or `Module: upgrade to 1.2`.
    let name: String
}

extension Target {
    var origin: Origin { Origin(module: module, name: method.qualifiedName) }
}

extension ResultType {
    /// A select's result when it reads no rows: null, or an empty array.
    var noRows: Value { isArray ? .array([]) : .null }
}

extension Engine {
    // MARK: Selects

    /// A select's result: one value, or for a method-level `foreach` an
    /// array of them read in one snapshot.
    func select(_ target: Target, _ runs: [RenderedRun], on db: Database) throws(EngineError) -> Value {
        let type = target.method.result ?? .array(.row)
        guard target.method.foreach != nil else { return try select(runs[0], type, target.origin, on: db) }
        var results: [Value] = []
        results.reserveCapacity(runs.count)
        if db.isInTransaction {
            for run in runs { results.append(try select(run, type, target.origin, on: db)) }
        } else {
            try snapshot(db) { () throws(EngineError) in
                for run in runs { results.append(try select(run, type, target.origin, on: db)) }
            }
        }
        return .array(results)
    }

    private func select(_ run: RenderedRun, _ type: ResultType, _ origin: Origin, on db: Database) throws(EngineError) -> Value {
        guard let statement = run.statements.last else { return type.noRows }
        guard let except = run.except else { return try query(statement, type, origin, on: db) }
        do {
            return try query(statement, type, origin, on: db)
        } catch let tried {
            guard let alternative = except.last else { return type.noRows }
            do {
                return try query(alternative, type, origin, on: db)
            } catch {
                throw bothFailed(tried, error)
            }
        }
    }

    func query(_ statement: RenderedStatement, _ type: ResultType, _ origin: Origin,
                       on db: Database) throws(EngineError) -> Value {
        let prepared = try prepare(statement, origin, on: db)
        defer { prepared.reset() }
        try bind(statement, to: prepared, origin)
        let reader = ResultReader(module: origin.module, method: origin.name, line: statement.line, cipher: configuration.cipher)
        do {
            return try reader.read(prepared, as: type)
        } catch let error where error.sqlite != nil {
            throw failure(error.sqlite!, statement, origin, runningOn: db)
        }
    }

    /// `body` inside one read transaction: every statement sees the same snapshot.
    private func snapshot(_ db: Database, _ body: () throws(EngineError) -> Void) throws(EngineError) {
        try adapting { try db.inTransaction(.deferred) { try body() } }
    }

    // MARK: Writes

    /// Runs a write method's runs on the writer, inside the caller's transaction.
    ///
    /// Its `lastInsertRowID` is the last row it inserted, 0 for none, while `last_insert_rowid()` in its SQL
    /// names the connection's previous insert, as in SQLite: in a transaction, the earlier call's row.
    func write(_ target: Target, _ runs: [RenderedRun], on db: Database) throws(EngineError) -> WriteResult {
        var changes = 0
        let inserted = try db.lastRowIDInserted { () throws(EngineError) in
            for run in runs {
                changes += try execute(run, target.origin, on: db)
            }
        }
        return WriteResult(changes: changes, lastInsertRowID: inserted)
    }

    /// One run: its statements, or for `<try>` its except branch when they fail.
    func execute(_ run: RenderedRun, _ origin: Origin, on db: Database) throws(EngineError) -> Int {
        guard let except = run.except else { return try execute(run.statements, origin, on: db) }
        do {
            return try savepoint(db) { () throws(EngineError) in try execute(run.statements, origin, on: db) }
        } catch let tried {
            do {
                return try savepoint(db) { () throws(EngineError) in try execute(except, origin, on: db) }
            } catch {
                throw bothFailed(tried, error)
            }
        }
    }

    /// Statements in order; a failing `resumable` step is rolled back and skipped.
    func execute(_ statements: [RenderedStatement], _ origin: Origin, on db: Database) throws(EngineError) -> Int {
        var changes = 0
        for statement in statements {
            if statement.resumable {
                do {
                    changes += try savepoint(db) { () throws(EngineError) in try execute(statement, origin, on: db) }
                } catch {
                    continue
                }
            } else {
                changes += try execute(statement, origin, on: db)
            }
        }
        return changes
    }

    /// One statement, run to completion; returns the rows it changed.
    private func execute(_ statement: RenderedStatement, _ origin: Origin, on db: Database) throws(EngineError) -> Int {
        let before = db.totalChanges
        let prepared = try prepare(statement, origin, on: db)
        try bind(statement, to: prepared, origin)
        do {
            try prepared.run()
        } catch {
            throw failure(error, statement, origin, runningOn: db)
        }
        return db.totalChanges - before
    }

    // MARK: Statements

    /// The prepared statement, from the connection's cache unless caller
    /// values are written into its text (which would only churn the cache).
    private func prepare(_ statement: RenderedStatement, _ origin: Origin, on db: Database) throws(EngineError) -> Statement {
        do {
            return statement.inlinesValues ? try db.makeStatement(statement.sql) : try db.cachedStatement(statement.sql)
        } catch {
            throw failure(error, statement, origin, runningOn: nil)
        }
    }

    /// Binds the statement's values, encrypting those written to `crypt` properties.
    private func bind(_ statement: RenderedStatement, to prepared: Statement, _ origin: Origin) throws(EngineError) {
        var values = statement.bindings
        if !statement.encrypted.isEmpty {
            guard let cipher = configuration.cipher else {
                throw EngineError(.encryption, "no encryption key is configured", method: origin.name, line: statement.line)
            }
            for binding in statement.encrypted where !values[binding.index].isNull {
                do {
                    values[binding.index] = .blob(try cipher.encrypt(values[binding.index], context: binding.property,
                                                                     keyID: origin.module.keyID))
                } catch {
                    // A value the format cannot carry (a nested binary) is the caller's to fix.
                    throw EngineError(error, "cannot encrypt \(binding.property)", method: origin.name, line: statement.line)
                }
            }
        }
        do {
            try prepared.bind(values)
        } catch {
            throw failure(error, statement, origin, runningOn: nil)
        }
    }

    /// The error of SQLite's failure on a statement: the caller's fault when
    /// SQLite refused what the call made (see `EngineError.init(_:method:line:file:blamesCall:)`).
    ///
    /// Compiling (`runningOn` nil), the call is to blame when it shaped the
    /// text (`@{}`, dynamic tags). Running, also when it gave values to bind
    /// and the SQL still compiles: SQLite's runtime refusals (malformed JSON to
    /// `json_each(#{ids})`, an integer overflow) come from the values a
    /// statement computes with, while a cached statement that no longer
    /// compiles (its table dropped behind the engine's back) is not the
    /// caller's doing. A statement with neither, failing, is the module's or
    /// its data's.
    private func failure(_ error: SQLiteError, _ statement: RenderedStatement, _ origin: Origin,
                         runningOn db: Database?) -> EngineError {
        var blamesCall = statement.dependsOnCall
        if !blamesCall, let db, !statement.bindings.isEmpty, error.isRefusal {
            blamesCall = (try? db.makeStatement(statement.sql)) != nil
        }
        return EngineError(error, method: origin.name, line: statement.line, file: origin.module.file, blamesCall: blamesCall)
    }

    /// The error of a `<try>` whose except branch failed too.
    private func bothFailed(_ tried: EngineError, _ excepted: EngineError) -> EngineError {
        var error = excepted
        error.message = "the try branch failed (\(tried.message)), and so did the except branch: \(excepted.message)"
        return error
    }
}
