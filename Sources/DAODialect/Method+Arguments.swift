import DAOValue

/// A check of one argument beyond its declared type (the engine's inferred
/// shapes): given the argument's position and value, nil when the value stands,
/// a replacement when its stored form differs (base64 text decoded to bytes, an
/// integral decimal made an integer), or a thrown refusal.
public typealias ArgumentCheck = (_ position: Int, _ value: Value) throws(RenderError) -> Value?

extension Method {
    /// The frame of a call from its JSON arguments, in one walk: each value is
    /// placed in its slot, then checked there (required, `check`, the declared
    /// type) and replaced in place by its stored form.
    ///
    /// `arguments` is an object of arguments by name (names as declared,
    /// without `$`), an array of them by position, or null for none. Unknown
    /// names, surplus positions, a nil `$` argument and values that do not fit
    /// an argument's declared type are refused; a `binary` argument may come
    /// as a base64 string, decoded here once into the bytes that are bound.
    public func frame(arguments: Value, globals: [String: Value] = [:],
                      check: ArgumentCheck? = nil) throws(RenderError) -> Frame {
        var locals: [Value]
        if case .array(let values) = arguments, values.count == localCount {
            // Every slot is an argument, given in order: the array is the frame's (copied only if a value is replaced).
            locals = values
        } else {
            locals = [Value](repeating: .null, count: localCount)
        }
        switch arguments {
        case .null:
            break
        case .array(let values):
            guard values.count <= self.arguments.count else {
                throw RenderError(code: .unknownArgument, method: qualifiedName, message: self.arguments.isEmpty
                    ? "takes no arguments, got \(values.count)"
                    : "takes \(self.arguments.count) argument\(self.arguments.count == 1 ? "" : "s") (\(argumentNames)), got \(values.count)")
            }
            if values.count != localCount {
                for (index, value) in values.enumerated() { locals[index] = value }
            }
        case .object(let members):
            for (name, value) in members {
                guard let index = self.arguments.firstIndex(where: { $0.name == name }) else {
                    throw RenderError(code: .unknownArgument, method: qualifiedName,
                                      message: "has no argument named '\(name.prefix(80))'; \(argumentList)", argument: name)
                }
                locals[index] = value
            }
        default:
            throw RenderError(code: .invalidArguments, method: qualifiedName,
                              message: "arguments must be a JSON object (by name) or array (by position), not \(arguments.kindPhrase)")
        }
        // By index, each argument's fields read where they are: no copy of each argument (its name, its type).
        for index in self.arguments.indices {
            if self.arguments[index].required && locals[index].isNull {
                let name = self.arguments[index].name
                throw RenderError(code: .missingArgument, method: qualifiedName,
                                  message: "argument '\(name)' is required ($\(name)) and was null or missing", argument: name)
            }
            if let check, let replacement = try check(index, locals[index]) {
                locals[index] = replacement
            }
            if let replacement = try conform(locals[index], to: self.arguments[index].type, path: self.arguments[index].name) {
                locals[index] = replacement
            }
        }
        return Frame(locals: locals, globals: globals)
    }

    /// "its arguments are a, b" (or "it takes none"): what an unknown argument's message ends with.
    private var argumentList: String {
        arguments.isEmpty ? "it takes none" : "its arguments are " + argumentNames
    }

    private var argumentNames: String { arguments.map(\.name).joined(separator: ", ") }

    /// Checks `value` against a declared type (none: any value); returns a replacement when the
    /// JSON form differs from the stored one (base64 text for `binary`, an
    /// integer for `double`), nil when the value stands as it is.
    private func conform(_ value: Value, to type: ArgumentType?,
                         path: @autoclosure () -> String) throws(RenderError) -> Value? {
        func mismatch(_ expected: String) -> RenderError {
            RenderError(code: .wrongType, method: qualifiedName,
                        message: "argument '\(path())' must be \(expected), not \(value.kindPhrase)", argument: path())
        }
        // A switch on the type, then on the value: a switch on the pair `(type, value)` copies both into a tuple,
        // a retain and release of each (every argument of every call passes here).
        // The type is matched where it is, its payload's scalar read out: not bound whole (a retain of its box).
        if value.isNull { return nil }
        switch type {
        case nil, .any?:
            return nil
        case .scalar(let scalar)?:
            return try conform(value, to: scalar, type, path: path(), mismatch)
        case .object(let className)?:
            if case .object = value { return nil }
            throw mismatch(className.map { "an object (\($0))" } ?? "an object")
        case .array(let element)?:
            guard case .array(let values) = value else { throw mismatch("an array") }
            var converted: [Value]?
            for index in values.indices {
                if let replacement = try conform(values[index], to: element, path: "\(path())[\(index)]") {
                    if converted == nil { converted = values }
                    converted![index] = replacement
                }
            }
            return converted.map { .array($0) }
        }
    }

    /// `conform(_:to:path:)` for a scalar type (`type` is `.scalar(scalar)`).
    private func conform(_ value: Value, to scalar: ScalarType, _ type: ArgumentType?, path: @autoclosure () -> String,
                         _ mismatch: (String) -> RenderError) throws(RenderError) -> Value? {
        switch value {
        case .integer(let integer):
            switch scalar {
            case .int:
                guard Int64(Int32.min)...Int64(Int32.max) ~= integer else {
                    throw RenderError(code: .wrongType, method: qualifiedName,
                                      message: "argument '\(path())' is an int, and \(integer) is outside its 32-bit range", argument: path())
                }
                return nil
            case .longLong: return nil
            case .double: return .double(Double(integer))
            default: throw mismatch(scalar.jsonPhrase)
            }
        case .double(let double):
            switch scalar {
            case .double: return nil
            case .int, .longLong:
                // JSON Schema counts 2.0 as an integer, so daogate does too.
                guard let integer = Int64(exactly: double) else { throw mismatch("an integer") }
                return try conform(.integer(integer), to: type, path: path()) ?? .integer(integer)
            default: throw mismatch(scalar.jsonPhrase)
            }
        case .bool:
            guard scalar == .bool else { throw mismatch(scalar.jsonPhrase) }
            return nil
        case .string(let text):
            switch scalar {
            case .string: return nil
            case .binary:
                guard let bytes = Base64.decode(text) else { throw mismatch("binary as base64 text") }
                return .blob(bytes)
            default: throw mismatch(scalar.jsonPhrase)
            }
        case .blob:
            guard scalar == .binary else { throw mismatch(scalar.jsonPhrase) }
            return nil
        case .null, .array, .object:
            throw mismatch(scalar.jsonPhrase)
        }
    }
}
