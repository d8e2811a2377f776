import CSQLite

/// An SQLite result code with a name, primary or extended, matched in a
/// `switch`: a primary code's pattern matches its extended codes too
/// (`case .busy` matches `SQLITE_BUSY_SNAPSHOT`), as GRDB's `ResultCode`.
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code of an extended one (itself for a primary code).
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

    /// "SQLITE_CONSTRAINT_UNIQUE"
    public var description: String { sqliteResultCodeName(rawValue) }

    /// A primary pattern matches every code with that primary part; an extended one, itself only.
    public static func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
        pattern.rawValue == code.rawValue || (pattern.rawValue == pattern.primary.rawValue && code.primary == pattern)
    }

    public static let ok = ResultCode(rawValue: SQLITE_OK)
    public static let error = ResultCode(rawValue: SQLITE_ERROR)
    public static let busy = ResultCode(rawValue: SQLITE_BUSY)
    public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
    public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    public static let full = ResultCode(rawValue: SQLITE_FULL)
    public static let cantOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    public static let schema = ResultCode(rawValue: SQLITE_SCHEMA)
    public static let tooBig = ResultCode(rawValue: SQLITE_TOOBIG)
    public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    public static let mismatch = ResultCode(rawValue: SQLITE_MISMATCH)
    public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
    public static let range = ResultCode(rawValue: SQLITE_RANGE)
    public static let row = ResultCode(rawValue: SQLITE_ROW)
    public static let done = ResultCode(rawValue: SQLITE_DONE)
}

extension SQLiteError {
    /// `extendedCode`, named.
    public var resultCode: ResultCode { ResultCode(rawValue: extendedCode) }
}
