import DAOValue
import Synchronization

/// A loaded DAO module: one XML file, the reference's `daoWithPath:` config.
public final class Module: Sendable {
    /// The `name` attribute: the `{module}` of `POST /dao/{module}/{method}`.
    public let name: String
    /// The file it was loaded from, as given to the loader.
    public let file: String
    public let line: Int
    /// The table `${T}` stands for; `nil` for a template module, whose table
    /// each call names, and for a module that names no table at all.
    public let tableName: String?
    /// Whether each call names the table: the module has no `tableName` and
    /// its statements write `${T}` (the reference's `setTableName` case). A
    /// module with neither names no table (`select 1`, or tables its SQL
    /// names itself), and its calls need no table name.
    public let isTemplate: Bool
    public let version: Version
    public let resetOnUpgrade: Bool
    public let upgradeMinVersion: Version?
    /// The method run once per database (and per table) before any other.
    public let initializer: String?
    /// daogate's `userDependent` attribute: calls need a user id and run in
    /// that user's database (the reference passes this to `daoWithPath:`).
    public let userDependent: Bool
    /// daogate's `access="admin"` attribute on the module: only an admin may call
    /// its methods or its proxy operations (for shared tables users must not write).
    public let adminOnly: Bool
    /// Methods declared `access="admin"` themselves.
    public let adminOnlyMethods: Set<String>
    /// daogate's `scan="allowed"` on the module: its full table scans are
    /// deliberate, and `check --plans` does not report them.
    public let scanAllowed: Bool
    /// The methods declaring `scan="allowed"`.
    public let scanAllowedMethods: Set<String>
    /// daogate's `storage` attribute: the named custom storage (the
    /// reference's `APCustomStorage`) whose databases the module uses.
    public let storage: String?
    /// daogate's `database` attribute: one specific database file (the
    /// reference's `daoWithPath:databasePath:`), relative to the data folder.
    public let database: String?
    /// Names declared by daogate's `globals` attribute: the global arguments
    /// (`globalArguments`) the module's methods may read.
    public let globals: [String]
    /// Whether a method of the module reads `userId`, the built-in global with the caller's user id.
    public let usesUserID: Bool
    /// The built-in global every method may read: the caller's user id (a string), null when the call has no
    /// user. Set by the engine from the call's context, never from arguments: no argument, `foreach` item
    /// or declared global may take its name (a load error).
    public static let userIDGlobal = "userId"
    /// Methods in file order.
    public let methods: [Method]
    public let maps: [String: ResultMap]
    /// `upgrade` blocks in ascending `toVersion` order.
    public let upgrades: [Upgrade]
    /// `crypt` declarations: class → encrypted properties.
    public let encryptedProperties: [String: Set<String>]
    /// daogate's `key` attribute: the id of the key in the keyring this
    /// module's `crypt` properties are written with (the reference's
    /// `setEncryptMethod`, a cipher per DAO); nil: the keyring's current key.
    public let keyID: String?
    /// This module object's number, unique in the process and never 0: it stands for the module, its one
    /// version and its own table where the engine records which tables are ready (a reload makes new objects,
    /// with new numbers).
    package let serial = Module.serials.add(1, ordering: .relaxed).newValue
    private static let serials = Atomic<UInt64>(0)

    init(name: String, file: String, line: Int, tableName: String?, isTemplate: Bool, version: Version, resetOnUpgrade: Bool, upgradeMinVersion: Version?, initializer: String?, userDependent: Bool, adminOnly: Bool = false, adminOnlyMethods: Set<String> = [], scanAllowed: Bool = false, scanAllowedMethods: Set<String> = [], storage: String?, database: String?, globals: [String], usesUserID: Bool = false, methods: [Method], maps: [String: ResultMap], upgrades: [Upgrade], encryptedProperties: [String: Set<String>], methodIndex: [String: Int], keyID: String? = nil) {
        self.name = name
        self.file = file
        self.line = line
        self.tableName = tableName
        self.isTemplate = isTemplate
        self.version = version
        self.resetOnUpgrade = resetOnUpgrade
        self.upgradeMinVersion = upgradeMinVersion
        self.initializer = initializer
        self.userDependent = userDependent
        self.adminOnly = adminOnly
        self.adminOnlyMethods = adminOnlyMethods
        self.scanAllowed = scanAllowed
        self.scanAllowedMethods = scanAllowedMethods
        self.storage = storage
        self.database = database
        self.globals = globals
        self.usesUserID = usesUserID
        self.methods = methods
        self.maps = maps
        self.upgrades = upgrades
        self.encryptedProperties = encryptedProperties
        self.keyID = keyID
        self.methodIndex = methodIndex
    }

    /// Whether a call of `method` (nil: the module's proxy operations) is an admin's only.
    public func isAdminOnly(method: String?) -> Bool {
        adminOnly || method.map(adminOnlyMethods.contains) == true
    }

    /// Whether a full table scan by `method` is deliberate (`scan="allowed"` on it or on the module).
    public func allowsScan(method: String) -> Bool {
        scanAllowed || scanAllowedMethods.contains(method)
    }

    public func method(named name: String) -> Method? {
        guard let index = methodIndex[name] else { return nil }
        return methods[index]
    }

    let methodIndex: [String: Int]
}

/// A module version, `x.x`, compared numerically per component (so 1.10 > 1.9).
public struct Version: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var components: [Int]

    /// Parses one or more dot-separated decimal numbers, e.g. `1.0` or `2.10.1`.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        var components: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 9, part.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(part)
            else { return nil }
            components.append(number)
        }
        self.components = components
    }

    public var description: String { components.map(String.init).joined(separator: ".") }

    public static func < (lhs: Version, rhs: Version) -> Bool {
        for index in 0..<max(lhs.components.count, rhs.components.count) {
            let left = index < lhs.components.count ? lhs.components[index] : 0
            let right = index < rhs.components.count ? rhs.components[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    public static func == (lhs: Version, rhs: Version) -> Bool { !(lhs < rhs) && !(rhs < lhs) }

    public func hash(into hasher: inout Hasher) {
        var trimmed = components
        while trimmed.last == 0 { trimmed.removeLast() }
        hasher.combine(trimmed)
    }
}

public enum MethodKind: String, Sendable, CaseIterable {
    case select, insert, update, delete
}

/// One `select|insert|update|delete` element.
public final class Method: Sendable {
    public let name: String
    /// The name of the module it belongs to.
    public let moduleName: String
    /// `Module.method`, as errors name it.
    public let qualifiedName: String
    public let kind: MethodKind
    public let line: Int
    /// The XML comment right before the method, if any.
    public let documentation: String?
    public let arguments: [MethodArgument]
    /// What a `select` returns; `nil` for the write kinds, which return the
    /// reference's `APDAOResult`.
    public let result: ResultType?
    /// The method-level `foreach="collection.item"`.
    public let foreach: MethodForeach?
    public let body: Body
    /// The method's one statement, when it has exactly one and no `<try>`: kept, so that a call reads it where it
    /// is (worked out from `body` on each call, it was a copy of the statement and its template).
    public let singleStatement: SQLStatement?
    /// How many local slots a call needs: arguments, then `foreach` items.
    public let localCount: Int
    /// Arguments a call cannot leave nil although they have no `$`: the
    /// method-level `foreach` collection, and those an unconditional
    /// `<foreach>` iterates.
    public let requiredCollections: Set<String>
    /// Arguments inlined as raw text (`@{x no ""}`) somewhere in the body:
    /// SQL text, whose validity SQLite alone can tell.
    public let rawTextArguments: Set<String>

    init(name: String, moduleName: String, qualifiedName: String, kind: MethodKind, line: Int, documentation: String?,
         arguments: [MethodArgument], result: ResultType?, foreach: MethodForeach?, body: Body, localCount: Int,
         requiredCollections: Set<String>, rawTextArguments: Set<String>) {
        self.requiredCollections = requiredCollections
        self.rawTextArguments = rawTextArguments
        self.name = name
        self.moduleName = moduleName
        self.qualifiedName = qualifiedName
        self.kind = kind
        self.line = line
        self.documentation = documentation
        self.arguments = arguments
        self.result = result
        self.foreach = foreach
        self.body = body
        if case .statements(let statements) = body, statements.count == 1 {
            self.singleStatement = statements[0]
        } else {
            self.singleStatement = nil
        }
        self.localCount = localCount
    }
}

/// A declared argument: `$name` forbids nil; daogate's optional `name:type`
/// annotation types it for checks and the OpenAPI description.
public struct MethodArgument: Sendable, Hashable {
    public var name: String
    public var required: Bool
    public var type: ArgumentType?
}

/// An argument's declared type, written after a colon in `arguments`.
public indirect enum ArgumentType: Sendable, Hashable, CustomStringConvertible {
    case scalar(ScalarType)
    /// A JSON object (`{}`), or an object of a named class (`MessageModel`).
    case object(className: String?)
    case array(ArgumentType)
    /// Any JSON value (`json`).
    case any

    public var description: String {
        switch self {
        case .scalar(let scalar): scalar.rawValue
        case .object(let className): className ?? "{}"
        case .array(let element): "[\(element)]"
        case .any: "json"
        }
    }
}

public struct MethodForeach: Sendable {
    /// The collection argument's index among the arguments.
    public var collection: Int
    public var item: String
    public var itemSlot: Int
}

/// The scalar result types of the reference.
public enum ScalarType: String, Sendable, CaseIterable {
    case int
    case longLong = "long long"
    case bool
    case double
    case string
    case binary

    /// What a caller sends for it, in JSON's words: "an integer", "a boolean".
    public var jsonPhrase: String {
        switch self {
        case .int, .longLong: "an integer"
        case .bool: "a boolean"
        case .double: "a number"
        case .string: "a string"
        case .binary: "binary data as base64 text"
        }
    }
}

/// The eighteen `result` forms.
public enum ResultType: Sendable, Hashable, CustomStringConvertible {
    case scalar(ScalarType)
    /// `{}`: column → value.
    case row
    /// `AType`: an object of the named class.
    case object(className: String)
    /// `:AMap`: an object shaped by a `<map>`.
    case mapped(mapID: String)
    indirect case array(ResultType)

    public var isArray: Bool { if case .array = self { true } else { false } }

    public var description: String {
        switch self {
        case .scalar(let scalar): scalar.rawValue
        case .row: "{}"
        case .object(let className): className
        case .mapped(let mapID): ":" + mapID
        case .array(let element): "[\(element)]"
        }
    }
}

/// A `<map id result>`: renamed columns of a class.
public struct ResultMap: Sendable {
    public var id: String
    public var className: String
    /// column → property; unlisted columns keep their names.
    public var propertyForColumn: [String: String]
    public var line: Int
}

/// An `<upgrade toVersion>` block.
public struct Upgrade: Sendable {
    public var toVersion: Version
    public var statements: [SQLStatement]
    public var line: Int
}

/// What a method runs.
public enum Body: Sendable {
    /// One statement, or several `<step>`s in one transaction.
    case statements([SQLStatement])
    /// `<try>…<except>…</except></try>`: the except branch runs only when the
    /// try branch fails.
    case tryExcept(try: [SQLStatement], except: [SQLStatement])
}

/// One SQL statement (a whole method body, or one `<step>`).
public struct SQLStatement: Sendable {
    public var line: Int
    /// The reference's `resumable`: a failure does not fail the method.
    public var resumable: Bool
    public var template: SQLTemplate
}

extension Method {
    /// Whether every statement was rendered at load (no dynamic tags, no
    /// `@{}`, a fixed table), so a call does no string work: it only resolves
    /// the `#{}` values.
    public var isPrecomputed: Bool {
        let statements: [SQLStatement] = switch body {
        case .statements(let statements): statements
        case .tryExcept(let tried, let excepted): tried + excepted
        }
        return statements.allSatisfy(\.template.isPrecomputed)
    }
}
