import DAOValue

/// Where a name used by a method lives, decided once at load.
///
/// Arguments and `foreach` items are numbered locals of the method (so a call
/// looks them up by index, not by hashing a name); anything else is one of the
/// module's declared global arguments, the reference's `globalArguments`.
public enum Slot: Sendable, Hashable {
    case local(Int)
    case global(String)
}

/// The values one call of a method sees.
public struct Frame: Sendable {
    /// Arguments first, in declaration order, then one slot per `foreach` item.
    public var locals: [Value]
    /// The proxy's global arguments; a method's own argument of the same name wins.
    public var globals: [String: Value]

    public init(locals: [Value], globals: [String: Value] = [:]) {
        self.locals = locals
        self.globals = globals
    }

    @inlinable public subscript(slot: Slot) -> Value {
        switch slot {
        case .local(let index): locals[index]
        case .global(let name): globals[name] ?? .null
        }
    }
}

/// Why chained access (`a.b.c`) failed.
public struct AccessError: Error, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

extension Value {
    /// Chained access, the reference's `valueForKey:`.
    ///
    /// - `nil.anything` is `nil`, as messaging nil is in Objective-C.
    /// - On an object, a member's value, `nil` when absent; `count` is the number
    ///   of members unless the object has a member named `count`.
    /// - On an array, only `count`.
    /// - Anything else has no properties: an error.
    public func member(_ name: String) throws(AccessError) -> Value {
        switch self {
        case .null:
            return .null
        case .object(let members):
            if let value = members[name] { return value }
            return name == "count" ? .integer(Int64(members.count)) : .null
        case .array(let elements):
            if name == "count" { return .integer(Int64(elements.count)) }
            throw AccessError("an array has no property '\(name)' (only 'count')")
        default:
            throw AccessError("\(kindPhrase) has no property '\(name)'")
        }
    }
}

/// A name followed by chained properties, as in `#{model.author.name}`.
public struct ValuePath: Sendable, Hashable, CustomStringConvertible {
    /// The name as written, for messages.
    public var root: String
    public var slot: Slot
    public var members: [String]

    public init(root: String, slot: Slot, members: [String]) {
        self.root = root
        self.slot = slot
        self.members = members
    }

    public var description: String { ([root] + members).joined(separator: ".") }

    /// The value at this path in `frame`.
    @inlinable public func resolve(in frame: Frame) throws(AccessError) -> Value {
        var value = frame[slot]
        if members.isEmpty { return value }
        for (index, name) in members.enumerated() {
            do { value = try value.member(name) } catch {
                let prefix = ([root] + members[..<index]).joined(separator: ".")
                throw AccessError("\(prefix): \(error.message)")
            }
        }
        return value
    }
}
