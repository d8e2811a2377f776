import CSQLite

extension Database {
    /// How `BEGIN` takes locks: `.immediate` takes the write lock at once
    /// (no `SQLITE_BUSY` halfway through), `.deferred` at the first read or write.
    public enum TransactionKind: Sendable {
        case deferred
        case immediate
    }

    /// Runs `body` inside `BEGIN … COMMIT`; any error thrown rolls back and is rethrown.
    ///
    /// A rollback also puts `lastInsertRowID` back as it was at `BEGIN` (SQLite leaves it naming a row
    /// that was rolled back), so it names a row that exists. The same holds for `inSavepoint`.
    ///
    /// Inside a transaction already, `body` runs in a savepoint instead
    /// (`inSavepoint(_:)`), so nesting rolls back only the inner part. A
    /// failed `COMMIT` rolls back too and throws its `SQLiteError`.
    public func inTransaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        if sqlite3_get_autocommit(try requireConnection()) == 0 { return try inSavepoint(body) }
        let lastInsert = lastInsertRowID
        try cachedStatement(kind == .immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED").run()
        do {
            let result = try body()
            try cachedStatement("COMMIT").run()
            return result
        } catch {
            rollbackIfInTransaction()
            sqlite3_set_last_insert_rowid(handle, lastInsert)
            throw error
        }
    }

    /// Runs `body` inside `SAVEPOINT s_N … RELEASE s_N`; on a thrown error
    /// rolls back to the savepoint, releases it, and rethrows. Nestable.
    ///
    /// Outside a transaction, the savepoint is one (deferred) and its release commits.
    public func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "s_\(savepointDepth)"
        let changes = changeMark
        let lastInsert = lastInsertRowID
        let probe = probeMark
        try cachedStatement("SAVEPOINT \(name)").run()
        do {
            let result = try body()
            try cachedStatement("RELEASE \(name)").run()
            return result
        } catch {
            // After some errors (SQLITE_FULL, SQLITE_IOERR…) SQLite has rolled
            // the whole transaction back and the savepoint is gone: nothing to undo.
            if hasOpenTransaction {
                _ = try? cachedStatement("ROLLBACK TO \(name)").run()
                forgetChanges(since: changes)
                _ = try? cachedStatement("RELEASE \(name)").run()
            }
            sqlite3_set_last_insert_rowid(handle, lastInsert)
            restoreProbe(probe)
            throw error
        }
    }

    /// `ROLLBACK`, unless SQLite already ended the transaction; its own failure is ignored for the error that caused it.
    private func rollbackIfInTransaction() {
        guard hasOpenTransaction else { return }
        _ = try? cachedStatement("ROLLBACK").run()
    }
}
