import OrderedCollections

/// The one value type that travels through daogate: JSON arguments, expression
/// values, SQLite bindings and results are all `Value`s.
///
/// JSON `null` is the reference's `nil`; a JSON object is its "object with
/// properties" (an Objective-C model or an `NSDictionary`). Integers are exact
/// 64-bit values end to end: the JSON codec never routes them through `Double`.
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case blob([UInt8])
    case array([Value])
    case object(OrderedObject)
}

/// A JSON object: members keep the order they were written in.
public typealias OrderedObject = OrderedDictionary<String, Value>

extension Value {
    /// Whether this is `nil` in the reference's sense.
    @inlinable public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The name of this value's kind in the vocabulary of conditions, where
    /// JSON's `null` is `nil`: "cannot apply '-' to nil and integer".
    public var kindName: String {
        switch self {
        case .null: "nil"
        case .bool: "boolean"
        case .integer: "integer"
        case .double: "number"
        case .string: "string"
        case .blob: "binary"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The name of this value's kind with its article, in the vocabulary of
    /// JSON (what a caller sent), for messages: "an integer", "null".
    public var kindPhrase: String {
        switch self {
        case .null: "null"
        case .blob: "binary data"
        default: withIndefiniteArticle(kindName)
        }
    }

    /// The member `name` of an object, `nil` when absent.
    @inlinable public subscript(member name: String) -> Value? {
        if case .object(let members) = self { return members[name] }
        return nil
    }

    @inlinable public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    @inlinable public var integerValue: Int64? {
        if case .integer(let integer) = self { return integer }
        return nil
    }

    @inlinable public var arrayValue: [Value]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    @inlinable public var objectValue: OrderedDictionary<String, Value>? {
        if case .object(let members) = self { return members }
        return nil
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .object(OrderedDictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// `noun` after "a" or "an", as its first letter asks: "an integer", "a long
/// long". Every message that names a kind or a type takes its article here.
public func withIndefiniteArticle(_ noun: String) -> String {
    guard let first = noun.unicodeScalars.first else { return noun }
    return ("aeiouAEIOU".unicodeScalars.contains(first) ? "an " : "a ") + noun
}
