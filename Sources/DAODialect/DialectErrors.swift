/// A problem that keeps a module from loading, at a place in its file.
public struct LoadError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`, as `daogate check` prints it.
    public var description: String { "\(file):\(line): \(message)" }
}

/// Every problem found in a set of module files.
public struct LoadFailure: Error, Sendable, CustomStringConvertible {
    public var errors: [LoadError]

    public init(errors: [LoadError]) { self.errors = errors }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// Why a call could not be rendered; nothing ran. Always the caller's doing
/// (arguments, table name), never the module's, which loading has checked.
public struct RenderError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// A `$` argument is nil or missing.
        case missingArgument = "missing_argument"
        /// An argument the method does not declare, or too many positional ones.
        case unknownArgument = "unknown_argument"
        /// The arguments are neither an object, an array nor empty.
        case invalidArguments = "invalid_arguments"
        /// A value of the wrong kind: a collection that is not an array, a
        /// value against its declared type, an expression over incompatible types.
        case wrongType = "wrong_type"
        /// A value `@{}` refuses to inline.
        case unsafeInline = "unsafe_inline"
        /// A template module called without a (valid) table name.
        case invalidTable = "invalid_table"
    }

    public var code: Code
    /// `Module.method`.
    public var method: String
    public var message: String
    /// The argument involved, as a path (`model.content`), when there is one.
    public var argument: String?

    public init(code: Code, method: String, message: String, argument: String? = nil) {
        self.code = code
        self.method = method
        self.message = message
        self.argument = argument
    }

    public var description: String { "\(method): \(message)" }

    /// The message as a sentence of its own, for a caller who sees no `method` beside it: an unknown
    /// argument's message is said of the method ("has no argument named 'prio'"), so it names its subject.
    public var detail: String {
        code == .unknownArgument ? "method \(method) \(message)" : message
    }
}
