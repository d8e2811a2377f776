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
        for (index, argument) in self.arguments.enumerated() {
            if argument.required && locals[index].isNull {
                throw RenderError(code: .missingArgument, method: qualifiedName,
                                  message: "argument '\(argument.name)' is required ($\(argument.name)) and was null or missing",
                                  argument: argument.name)
            }
            if let check, let replacement = try check(index, locals[index]) {
                locals[index] = replacement
            }
            if let type = argument.type, let replacement = try conform(locals[index], to: type, path: argument.name) {
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

    /// Checks `value` against a declared type; returns a replacement when the
    /// JSON form differs from the stored one (base64 text for `binary`, an
    /// integer for `double`), nil when the value stands as it is.
    private func conform(_ value: Value, to type: ArgumentType,
                         path: @autoclosure () -> String) throws(RenderError) -> Value? {
        func mismatch(_ expected: String) -> RenderError {
            RenderError(code: .wrongType, method: qualifiedName,
                        message: "argument '\(path())' must be \(expected), not \(value.kindPhrase)", argument: path())
        }
        switch (type, value) {
        case (.any, _), (_, .null):
            return nil
        case (.scalar(.int), .integer(let integer)):
            guard Int64(Int32.min)...Int64(Int32.max) ~= integer else {
                throw RenderError(code: .wrongType, method: qualifiedName,
                                  message: "argument '\(path())' is an int, and \(integer) is outside its 32-bit range", argument: path())
            }
            return nil
        case (.scalar(.longLong), .integer), (.scalar(.bool), .bool), (.scalar(.double), .double),
             (.scalar(.string), .string), (.scalar(.binary), .blob), (.object, .object):
            return nil
        case (.scalar(.double), .integer(let integer)):
            return .double(Double(integer))
        case (.scalar(let scalar), .double(let double)) where scalar == .int || scalar == .longLong:
            // JSON Schema counts 2.0 as an integer, so daogate does too.
            guard let integer = Int64(exactly: double) else { throw mismatch("an integer") }
            return try conform(.integer(integer), to: type, path: path()) ?? .integer(integer)
        case (.scalar(.binary), .string(let text)):
            guard let bytes = Base64.decode(text) else { throw mismatch("binary as base64 text") }
            return .blob(bytes)
        case (.array(let element), .array(let values)):
            var converted: [Value]?
            for index in values.indices {
                if let replacement = try conform(values[index], to: element, path: "\(path())[\(index)]") {
                    if converted == nil { converted = values }
                    converted![index] = replacement
                }
            }
            return converted.map { .array($0) }
        case (.scalar(let scalar), _):
            throw mismatch(scalar.jsonPhrase)
        case (.object(let className), _):
            throw mismatch(className.map { "an object (\($0))" } ?? "an object")
        case (.array, _):
            throw mismatch("an array")
        }
    }
}
