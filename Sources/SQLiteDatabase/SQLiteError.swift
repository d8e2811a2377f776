import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// An SQLite failure: the result code, the message, the SQL (never the bound values).
///
/// Connections run with extended result codes on, so `extendedCode` is as
/// precise as SQLite can say (`SQLITE_CONSTRAINT_UNIQUE`); `code` is its
/// primary part (`SQLITE_CONSTRAINT`).
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    public var extendedCode: Int32
    /// `sqlite3_errmsg` at the time, or this layer's own words for its misuse errors.
    public var message: String
    /// The statement that failed, when there is one.
    public var sql: String?
    /// The `errno` of the system call that failed under SQLite
    /// (`sqlite3_system_errno`), 0 when none did or it is unknown.
    public var systemErrno: Int32

    /// An error with `extendedCode` (a primary code is an extended code too).
    public init(extendedCode: Int32, message: String, sql: String? = nil, systemErrno: Int32 = 0) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
    }

    /// The primary result code: `extendedCode & 0xFF`.
    public var code: Int32 { extendedCode & 0xFF }

    /// A `SQLITE_CONSTRAINT` failure: unique, not null, check, foreign key….
    public var isConstraintViolation: Bool { if case .constraint = resultCode { true } else { false } }

    /// `SQLITE_BUSY` or `SQLITE_LOCKED`: another connection held the lock past the busy timeout.
    public var isBusy: Bool {
        switch resultCode {
        case .busy, .locked: true
        default: false
        }
    }

    /// A file could not be opened (`SQLITE_CANTOPEN`, or an I/O error)
    /// because the process or the system has no file descriptor left
    /// (`EMFILE`, `ENFILE`): the server is out of a resource, not broken.
    public var isOutOfDescriptors: Bool {
        switch resultCode {
        case .cantOpen, .ioError: systemErrno == EMFILE || systemErrno == ENFILE
        default: false
        }
    }

    /// `SQLITE_TOOBIG`: a string, blob or statement over SQLite's limits.
    public var isTooBig: Bool { if case .tooBig = resultCode { true } else { false } }
    /// The database reached its `max_page_count` (or the disk is full).
    public var isFull: Bool { if case .full = resultCode { true } else { false } }

    /// `SQLITE_MISMATCH`: a value of the wrong type where SQLite insists on one
    /// (an `INTEGER PRIMARY KEY`, a `LIMIT`).
    public var isDatatypeMismatch: Bool { if case .mismatch = resultCode { true } else { false } }

    /// SQLite refused the statement itself or what it computed, rather than
    /// failing to store or reach data: `SQLITE_ERROR` (syntax, unknown names,
    /// a function's error such as malformed JSON or an integer overflow),
    /// `SQLITE_SCHEMA` (such a compile error met while the connection's copy of
    /// the schema was out of date: `select abc` on a connection that never
    /// read the schema fails so, with "no such column: abc") and `SQLITE_RANGE`
    /// (parameters that do not match the values).
    public var isRefusal: Bool {
        switch resultCode {
        case .error, .schema, .range: true
        default: false
        }
    }

    /// "SQLite error 19 (SQLITE_CONSTRAINT_UNIQUE): UNIQUE constraint failed: t.id — in: insert into t …"
    public var description: String {
        var text = "SQLite error \(code) (\(sqliteResultCodeName(extendedCode))): \(message)"
        if let sql { text += " — in: \(sql)" }
        return text
    }
}

extension SQLiteError {
    /// The error for `resultCode` just returned by a call on `connection`.
    ///
    /// The connection's message is used when its error code is the one
    /// returned; otherwise (a misuse SQLite refused without recording it) the
    /// code's generic text from `sqlite3_errstr`.
    init(resultCode: Int32, connection: SQLiteConnection?, sql: String?) {
        let message: String
        if let connection, sqlite3_extended_errcode(connection) == resultCode {
            message = String(cString: sqlite3_errmsg(connection))
        } else {
            message = String(cString: sqlite3_errstr(resultCode))
        }
        self.init(extendedCode: resultCode, message: message, sql: sql,
                  systemErrno: connection.map(sqlite3_system_errno) ?? 0)
    }

    /// `SQLITE_MISUSE` with this layer's own message: a programming error, not SQLite's.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }

    /// The error for any use of a closed connection or pool.
    static let closed = SQLiteError.misuse("the database is closed")
}

/// Throws unless `resultCode` is `SQLITE_OK`: the one way C calls that can fail report it.
@inline(__always)
func check(_ resultCode: Int32, _ connection: SQLiteConnection?, sql: String? = nil) throws(SQLiteError) {
    guard resultCode == SQLITE_OK else {
        throw SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
    }
}
