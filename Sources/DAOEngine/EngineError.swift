import SQLiteDatabase
import DAODialect

/// Why a call, a transaction or a proxy operation failed; nothing it did was kept.
///
/// `code` is stable and machine-readable; the gateway maps it to an HTTP
/// status (`isCallersFault` tells a 4xx from a 5xx).
public struct EngineError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        case unknownModule = "unknown_module"
        case unknownMethod = "unknown_method"
        /// The arguments do not fit the method (see `render`).
        case invalidArguments = "invalid_arguments"
        /// A transaction call's result reference (`{"$result": pointer}`) is malformed or points to nothing.
        case invalidReference = "invalid_reference"
        /// A user-dependent module was called without a user id.
        case userRequired = "user_required"
        case invalidUser = "invalid_user"
        case invalidTable = "invalid_table"
        case invalidStorage = "invalid_storage"
        /// A statement broke a constraint (UNIQUE, NOT NULL, CHECK, FOREIGN KEY).
        case constraintViolation = "constraint_violation"
        /// A value too large for SQLite.
        case tooBig = "too_big"
        /// A statement failed for another reason (the module's SQL, the data).
        case statementFailed = "statement_failed"
        /// The database stayed locked past the busy timeout.
        case busy = "busy"
        case upgradeFailed = "upgrade_failed"
        /// A value could not be read as the method's result type.
        case resultConversion = "result_conversion"
        /// An encrypted value could not be decrypted (wrong key, tampering) or encrypted.
        case encryption = "encryption"
        /// A value was encrypted with a key the server's keyring no longer holds (an operator's fault: restore the key).
        case keyMissing = "key_missing"
        case invalidRegex = "invalid_regex"
        /// Something outside a call's control: an unreadable file, a closed database.
        case storageFailed = "storage_failed"
        /// The server is out of file descriptors for now: the call may succeed later.
        case overloaded = "overloaded"
        /// What a user stores (all their storages together), or the common space, reached the size the
        /// operator allows (or the disk is full); nothing was written.
        case storageFull = "storage_full"
        /// The table is another module's in this storage: the module that made it (`owner`) alone uses it.
        case tableOwned = "table_owned"
        /// The user has as many custom storages as the operator allows; nothing was created.
        case tooManyStorages = "too_many_storages"
    }

    public var code: Code
    public var message: String
    /// `Module.method`, when a method was involved.
    public var method: String?
    /// Where in the module file the failing statement is.
    public var line: Int?
    public var sqlite: SQLiteError?
    public var render: RenderError?
    /// In a transaction of several calls, the index of the call that failed.
    public var callIndex: Int?
    /// For `unknownMethod`: the methods the module has, in the order it declares them.
    public var methods: [String]?
    /// For `tableOwned`: the module that made the table.
    public var owner: String?
    /// The key id of a `keyMissing` error.
    public var keyID: String?
    /// For `invalidReference`, the reference's JSON Pointer as sent (at most 200 characters).
    public var reference: String?

    public init(_ code: Code, _ message: String, method: String? = nil, line: Int? = nil,
                sqlite: SQLiteError? = nil, render: RenderError? = nil) {
        self.code = code
        self.message = message
        self.method = method
        self.line = line
        self.sqlite = sqlite
        self.render = render
    }

    /// The error of arguments that do not fit a method.
    init(_ render: RenderError) {
        let code: Code = render.code == .invalidTable ? .invalidTable : .invalidArguments
        self.init(code, render.message, method: render.method, render: render)
    }

    /// The error of a statement SQLite refused.
    ///
    /// `blamesCall` says whether what SQLite refused came from the call: the
    /// statement's text when the call shaped it (values inlined by `@{}`,
    /// dynamic tags that left, say, `id in` without a list), its values when
    /// it ran. SQLite's refusal (`SQLiteError.isRefusal`) is then the
    /// caller's, `invalid_arguments`; otherwise it is the module's,
    /// `statement_failed`. Constraints, lock timeouts, values too large and
    /// type mismatches are classified alike wherever they come from.
    init(_ sqlite: SQLiteError, method: String?, line: Int?, file: String?, blamesCall: Bool = false) {
        let code: Code = if sqlite.isOutOfDescriptors { .overloaded }
            else if sqlite.isConstraintViolation { .constraintViolation }
            else if sqlite.isBusy { .busy }
            else if sqlite.isTooBig { .tooBig }
            else if sqlite.isFull { .storageFull }
            else if sqlite.isDatatypeMismatch { .invalidArguments }
            else if sqlite.isRefusal && blamesCall { .invalidArguments }
            else { .statementFailed }
        let place = line.map { " (\(file.map { "\($0):" } ?? "line ")\($0))" } ?? ""
        let note = code == .overloaded ? Self.outOfDescriptors : ""
        self.init(code, "the statement\(place) failed: \(sqlite.message)\(note)", method: method, line: line, sqlite: sqlite)
    }

    /// The error of daogate's own SQL on a database (opening it, its
    /// bookkeeping, not a module's statements): the server's `storage_failed`,
    /// but for what passes: no file descriptor left (`overloaded`), a lock
    /// held past the busy timeout (`busy`), and a cap reached (`storage_full`:
    /// the first table of a user's new storage when the user's cap is spent).
    init(storage sqlite: SQLiteError, _ message: String) {
        let code: Code = if sqlite.isOutOfDescriptors { .overloaded } else if sqlite.isBusy { .busy }
            else if sqlite.isFull { .storageFull } else { .storageFailed }
        self.init(code, message + (code == .overloaded ? Self.outOfDescriptors : ""), sqlite: sqlite)
    }

    private static let outOfDescriptors = " (the server is out of file descriptors; try again shortly)"

    /// Whether the caller can fix it by sending something else (a 4xx).
    public var isCallersFault: Bool {
        switch code {
        case .unknownModule, .unknownMethod, .invalidArguments, .invalidReference, .userRequired, .invalidUser, .invalidTable,
             .invalidStorage, .constraintViolation, .tooBig, .invalidRegex, .tableOwned, .tooManyStorages:
            true
        case .statementFailed, .busy, .upgradeFailed, .resultConversion, .encryption, .keyMissing, .storageFailed, .overloaded, .storageFull:
            false
        }
    }

    /// The error of a value that could not be encrypted or decrypted: `keyMissing` naming the key
    /// when the ring lacks it, `invalidArguments` for a value the format cannot carry, `encryption` otherwise.
    public init(_ error: CipherError, _ message: String, method: String? = nil, line: Int? = nil) {
        let code: Code = switch error.kind {
        case .keyMissing: .keyMissing
        case .unsupportedValue: .invalidArguments
        default: .encryption
        }
        self.init(code, "\(message): \(error.message)", method: method, line: line)
        keyID = error.keyID
    }

    public var description: String {
        (method.map { "\($0): " } ?? "") + message
    }
}
