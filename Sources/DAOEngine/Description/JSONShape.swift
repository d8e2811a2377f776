import DAODialect

/// The JSON a value takes, as far as daogate can tell.
///
/// What the OpenAPI description turns into JSON Schemas: a shape is never a
/// guess, so anything daogate cannot be sure of is `.any`.
public indirect enum JSONShape: Sendable, Equatable {
    /// An integer of 32 (`int`) or 64 bits.
    case integer(bits: Int)
    case number
    case string
    case boolean
    /// Base64 text in JSON.
    case binary
    /// An object: its known properties in first-seen order (others allowed), and its class when one is known.
    case object(properties: [Property], className: String?)
    case array(JSONShape)
    case any

    /// Whether an object with known properties is in this shape (itself or its elements).
    var hasObjectProperties: Bool {
        switch self {
        case .object(let properties, _): !properties.isEmpty
        case .array(let element): element.hasObjectProperties
        default: false
        }
    }

    /// A property of an object.
    public struct Property: Sendable, Equatable {
        public var name: String
        public var shape: JSONShape

        public init(name: String, shape: JSONShape) {
            self.name = name
            self.shape = shape
        }
    }

    /// The shape of a value of a column of this declared type, by SQLite's
    /// affinity rules, and `BOOL` for booleans (JSON booleans bind as 1 and 0).
    ///
    /// `INT` → integer; `CHAR`, `CLOB`, `TEXT` → string; `BLOB` or no type →
    /// any; `REAL`, `FLOA`, `DOUB` → number; `BOOL` → boolean; `DATE`,
    /// `TIME` (`DATETIME`, `TIMESTAMP`) → any: SQLite keeps dates as ISO-8601
    /// text, Julian day numbers or Unix times alike; any other type
    /// (`NUMERIC`, `DECIMAL`) has numeric affinity → number.
    init(declaredType: String) {
        let type = declaredType.uppercased()
        if declaredTypeIsBoolean(type) { self = .boolean }
        else if type.contains("INT") { self = .integer(bits: 64) }
        else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { self = .string }
        else if type.contains("BLOB") || type.isEmpty { self = .any }
        else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { self = .number }
        else if type.contains("DATE") || type.contains("TIME") { self = .any }
        else { self = .number }
    }

    /// The shape of what a select reads from a column of this declared type
    /// (`sqlite3_column_decltype`; nil for an expression, whose values have
    /// any storage class): as `init(declaredType:)`, so a `BOOL` column reads
    /// back as the boolean it was written as.
    init(resultDeclaredType declaredType: String?) {
        self = declaredType.map(JSONShape.init(declaredType:)) ?? .any
    }
}

/// What a method takes and gives.
public struct MethodDescription: Sendable, Equatable {
    /// One shape per declared argument, in declaration order.
    public var arguments: [ArgumentShape]
    /// The columns a `{}`, `AType` or `:AMap` result (or their arrays) yields,
    /// after a map's renaming; nil for scalar results, writes, and when the
    /// statement cannot be prepared.
    ///
    /// A `select` without `result` gives `[{}]`, so it has columns too.
    public var resultColumns: [JSONShape.Property]?
    /// The collections a call cannot leave empty: an unconditional `<foreach>`
    /// whose statement SQLite refuses without elements (`in ()`).
    public var nonEmptyCollections: Set<String>

    public init(arguments: [ArgumentShape], resultColumns: [JSONShape.Property]?, nonEmptyCollections: Set<String> = []) {
        self.arguments = arguments
        self.resultColumns = resultColumns
        self.nonEmptyCollections = nonEmptyCollections
    }

    /// The shape of the argument named `name`, nil when there is none.
    public func argument(_ name: String) -> JSONShape? {
        arguments.first { $0.name == name }?.shape
    }
}

/// The shape of one argument of a method.
public struct ArgumentShape: Sendable, Equatable {
    /// As declared, without `$`.
    public var name: String
    public var shape: JSONShape

    public init(name: String, shape: JSONShape) {
        self.name = name
        self.shape = shape
    }
}
