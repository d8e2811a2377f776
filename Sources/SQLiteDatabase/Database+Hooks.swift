#if canImport(Glibc)
import Glibc
#endif
import CSQLite

/// A row a committed transaction inserted, updated or deleted, as SQLite's update hook names it.
public struct RowChange: Sendable, Equatable {
    public enum Operation: String, Sendable {
        case insert, update, delete
    }

    /// The table as SQLite names it (the schema's spelling).
    public var table: String
    public var operation: Operation
    public var rowid: Int64

    public init(table: String, operation: Operation, rowid: Int64) {
        self.table = table
        self.operation = operation
        self.rowid = rowid
    }
}

/// Watches one connection's writes and reports each committed transaction's row changes, never rolled-back ones.
///
/// SQLite's update hook records each row (of `main`'s rowid tables) as it
/// changes (an empty preupdate hook makes `DELETE FROM t` go row by row, so
/// that it is seen too); the rollback hook forgets them; the WAL hook, which SQLite calls
/// once a commit is in the write-ahead log (visible to every reader), hands
/// them to `committed`. A savepoint rolled back forgets what was recorded
/// since it began (`Database.inSavepoint`). Recording is skipped entirely
/// (one call of `isWatched` per transaction) when nobody listens.
///
/// The WAL hook replaces SQLite's automatic checkpoint, which is itself a WAL
/// hook: this one checkpoints as it does, once the log holds
/// `autoCheckpointFrames` pages.
///
/// Not Sendable: it lives on its connection's thread; `committed` runs there,
/// inside the write, and must not use the connection.
public final class ChangeHooks {
    /// SQLite's default `wal_autocheckpoint`, in pages.
    public static let autoCheckpointFrames: Int32 = 1000
    /// The most rows one transaction records; beyond them it reports that it changed more (`overflowed`).
    public static let maximumRows = 100_000

    /// Whether anyone wants this database's changes now; asked once per transaction.
    let isWatched: () -> Bool
    /// Gets each committed transaction's changes, in order, and whether rows beyond `maximumRows` went unrecorded.
    let committed: (_ changes: [RowChange], _ overflowed: Bool) -> Void

    /// nil until the transaction's first change asks `isWatched`.
    var watching: Bool?
    var rows: [RowChange] = []
    var overflowed = false
    /// The rowid `Database.lastRowIDInserted(during:)` watches inserts of (the connection's last insert rowid
    /// when it began), and whether a row of that rowid was inserted since.
    var probedRowid: Int64?
    var probeHit = false

    public init(isWatched: @escaping () -> Bool, committed: @escaping (_ changes: [RowChange], _ overflowed: Bool) -> Void) {
        self.isWatched = isWatched
        self.committed = committed
    }

    func record(_ operation: Int32, table: UnsafePointer<CChar>?, rowid: Int64) {
        if operation == SQLITE_INSERT, rowid == probedRowid { probeHit = true }
        if watching == nil { watching = isWatched() }
        guard watching == true, let table else { return }
        guard rows.count < Self.maximumRows else {
            overflowed = true
            return
        }
        let kind: RowChange.Operation = switch operation {
        case SQLITE_INSERT: .insert
        case SQLITE_DELETE: .delete
        default: .update
        }
        // A transaction mostly changes one table: its name is made once.
        let name = rows.last.flatMap { last in strcmp(last.table, table) == 0 ? last.table : nil } ?? String(cString: table)
        rows.append(RowChange(table: name, operation: kind, rowid: rowid))
    }

    func forget() {
        rows.removeAll(keepingCapacity: rows.count <= 1024)
        overflowed = false
        watching = nil
    }

    func publish() {
        defer { forget() }
        guard !rows.isEmpty || overflowed else { return }
        committed(rows, overflowed)
    }
}

extension Database {
    /// Reports this connection's committed changes to `hooks` from now on (nil: stops, and restores SQLite's
    /// automatic checkpoint). The connection keeps `hooks`.
    public func observeChanges(_ hooks: ChangeHooks?) {
        guard let connection = try? requireConnection() else { return }
        changeHooks = hooks
        guard let hooks else {
            sqlite3_update_hook(connection, nil, nil)
            sqlite3_preupdate_hook(connection, nil, nil)
            sqlite3_rollback_hook(connection, nil, nil)
            sqlite3_wal_autocheckpoint(connection, ChangeHooks.autoCheckpointFrames)
            return
        }
        let context = Unmanaged.passUnretained(hooks).toOpaque()
        sqlite3_update_hook(connection, changeHookRow, context)
        sqlite3_preupdate_hook(connection, changeHookBeforeRow, nil)
        sqlite3_rollback_hook(connection, changeHookRollback, context)
        sqlite3_wal_hook(connection, changeHookCommitted, context)
    }

    /// Reports what the last transaction committed, when the connection is
    /// out of any transaction and a transaction changed rows: with a rollback
    /// journal, which calls no WAL hook, the pool calls it after each write
    /// body (a rolled-back transaction recorded nothing, its rollback hook
    /// forgot it). In WAL the WAL hook has reported everything already.
    func publishCommittedChanges() {
        // `watching` is set by a transaction's first change, whether or not anyone listened: that transaction ends here.
        guard let hooks = changeHooks, hooks.watching != nil, !isClosed, !isInTransaction else { return }
        hooks.publish()
    }

    /// Runs `body` and returns the rowid of the last row it inserted, 0 when it inserted none, leaving
    /// `last_insert_rowid()` as SQLite sets it: statements in `body` see the inserts before it, as in SQLite.
    ///
    /// A changed `lastInsertRowID` is `body`'s insert; an unchanged one is too when the update hook saw a row
    /// of that very rowid inserted (a child row numbered as its parent in another table), and otherwise means
    /// that `body` inserted nothing. A savepoint or transaction rolled back inside restores both
    /// (`inSavepoint`, `inTransaction`). Installs hooks that report to nobody when `observeChanges` has not.
    public func lastRowIDInserted<E: Error>(during body: () throws(E) -> Void) throws(E) -> Int64 {
        if changeHooks == nil { observeChanges(ChangeHooks(isWatched: { false }, committed: { _, _ in })) }
        guard let hooks = changeHooks else { try body(); return 0 }
        let before = lastInsertRowID
        hooks.probedRowid = before
        hooks.probeHit = false
        defer { hooks.probedRowid = nil; hooks.probeHit = false }
        try body()
        let after = lastInsertRowID
        return after != before || hooks.probeHit ? after : 0
    }

    /// The insert probe's state, to restore when a savepoint rolls back.
    var probeMark: Bool { changeHooks?.probeHit ?? false }

    func restoreProbe(_ hit: Bool) { changeHooks?.probeHit = hit }

    /// Whether `observeChanges` installed hooks on this connection.
    public var isObservingChanges: Bool { changeHooks != nil }

    /// How many changes the open transaction has recorded: a savepoint's start.
    var changeMark: Int { changeHooks?.rows.count ?? 0 }

    /// Forgets the changes recorded since `mark`: their savepoint was rolled back.
    func forgetChanges(since mark: Int) {
        guard let hooks = changeHooks, mark < hooks.rows.count else { return }
        hooks.rows.removeSubrange(mark...)
    }
}

// The C callbacks capture nothing: each reaches its `ChangeHooks` through the
// context pointer, which the connection keeps alive (`Database.changeHooks`).

/// `sqlite3_update_hook`: a row of a rowid table changed.
private func changeHookRow(_ context: UnsafeMutableRawPointer?, _ operation: Int32, _ database: UnsafePointer<CChar>?,
                           _ table: UnsafePointer<CChar>?, _ rowid: sqlite3_int64) {
    guard let context, let database, strcmp(database, "main") == 0 else { return }
    Unmanaged<ChangeHooks>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.record(operation, table: table, rowid: rowid) }
}

/// `sqlite3_preupdate_hook`, which does nothing: while one is set, SQLite deletes a whole table (`DELETE FROM t`
/// without `WHERE`) row by row, calling the update hook for each, instead of clearing it without a word.
private func changeHookBeforeRow(_ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ operation: Int32,
                                 _ database: UnsafePointer<CChar>?, _ table: UnsafePointer<CChar>?,
                                 _ oldRowid: sqlite3_int64, _ newRowid: sqlite3_int64) {}

/// `sqlite3_rollback_hook`: the transaction was rolled back, its changes never happened.
private func changeHookRollback(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<ChangeHooks>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.forget() }
}

/// `sqlite3_wal_hook`: a commit is in the log. Checkpoints as SQLite's automatic checkpoint would.
private func changeHookCommitted(_ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                                 _ database: UnsafePointer<CChar>?, _ frames: Int32) -> Int32 {
    if let context {
        Unmanaged<ChangeHooks>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.publish() }
    }
    if frames >= ChangeHooks.autoCheckpointFrames, let connection {
        sqlite3_wal_checkpoint(connection, database)
    }
    return SQLITE_OK
}
