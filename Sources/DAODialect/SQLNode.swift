import DAOValue

/// A statement's SQL as loaded: rendered once at load when nothing in it
/// depends on a call, a node tree otherwise (MyBatis's `scripting/xmltags`).
public struct SQLTemplate: Sendable {
    enum Form: Sendable {
        /// No dynamic tags, no `@{}`: the SQL text is final; a call only
        /// resolves the `#{}` bindings.
        case fixed(FixedSQL)
        case dynamic([SQLNode])
    }

    /// A fixed form's parts, in one object: a call's switch over the form copies its payload, which is then one
    /// reference to retain, not three (every call of such a statement).
    final class FixedSQL: Sendable {
        let sql: String
        let bindings: [BindReference]
        let encrypted: [EncryptedBinding]

        init(sql: String, bindings: [BindReference], encrypted: [EncryptedBinding]) {
            self.sql = sql
            self.bindings = bindings
            self.encrypted = encrypted
        }
    }

    var form: Form

    /// Whether a call renders this without any string work.
    public var isPrecomputed: Bool {
        if case .fixed = form { return true }
        return false
    }
}

/// `#{path}` / `#{path or ""}`: a bound parameter, `?` in the SQL.
struct BindReference: Sendable {
    var path: ValuePath
    /// `or ""`: nil binds an empty string instead of NULL.
    var orEmpty: Bool
    /// The `crypt` property this writes, when the value must be encrypted.
    var encryptedProperty: String?
    var line: Int
}

/// `@{path}`, `@{path or ""}`, `@{path no ""}`: a value inlined into the SQL text.
struct InlineReference: Sendable {
    enum Mode: Sendable, Equatable {
        /// Outside quotes: a formatted SQL literal (strings quoted).
        case literal
        /// Inside a `'…'` the module wrote: string content, quotes doubled.
        case insideString
        /// Inside a `"…"` or `` `…` `` the module wrote: identifier content,
        /// that quote character doubled.
        case insideIdentifier(UInt8)
        /// `no ""`: raw text, held to the raw-text rule.
        case raw
    }

    var path: ValuePath
    var orEmpty: Bool
    var mode: Mode
    var line: Int
}

/// A `true="…"` or `false="…"` condition.
struct Condition: Sendable {
    var expression: Expression
    /// `true=` holds when the expression holds, `false=` when it does not.
    var expected: Bool
    var line: Int
}

/// The reference's `onVoid`.
public enum OnVoid: String, Sendable {
    /// Skip the statement, and succeed.
    case quit
    /// Stop rendering the statement here and run what has been generated.
    case ignoreAfter
}

struct ForeachNode: Sendable {
    var collection: ValuePath
    var item: String
    var itemSlot: Int
    var open: String
    var separator: String
    var close: String
    var reverse: Bool
    var body: [SQLNode]
    var line: Int
}

/// `<trim>`; `<where>` and `<set>` are presets of it.
struct TrimNode: Sendable {
    var prefix: String
    /// Upper-cased, trimmed override tokens.
    var prefixOverrides: [String]
    var suffix: String
    var suffixOverrides: [String]
    var onVoid: OnVoid?
    var body: [SQLNode]
    var line: Int

    static func `where`(onVoid: OnVoid?, body: [SQLNode], line: Int) -> TrimNode {
        TrimNode(prefix: "WHERE", prefixOverrides: ["AND", "OR"], suffix: "", suffixOverrides: [],
                 onVoid: onVoid, body: body, line: line)
    }

    /// As MyBatis's `SetSqlNode`: strips a leading and a trailing comma.
    static func set(onVoid: OnVoid?, body: [SQLNode], line: Int) -> TrimNode {
        TrimNode(prefix: "SET", prefixOverrides: [","], suffix: "", suffixOverrides: [","],
                 onVoid: onVoid, body: body, line: line)
    }
}

indirect enum SQLNode: Sendable {
    /// SQL text (UTF-8), whitespace already folded to single spaces outside quotes.
    case text([UInt8])
    case bind(BindReference)
    case inline(InlineReference)
    /// `${T}` of a template module.
    case table
    case `if`(Condition, [SQLNode])
    case choose([(Condition, [SQLNode])], otherwise: [SQLNode]?)
    case foreach(ForeachNode)
    case trim(TrimNode)
}
