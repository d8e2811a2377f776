import DAODialect
import DAOValue

/// Argument checks against the shapes the description infers, so that the
/// OpenAPI description and the server agree: a value the description says is
/// a string is refused as a number (`wrong_type`), as a declared type is, and an empty
/// array where the description says `minItems: 1` is refused before SQLite
/// would refuse its `in ()`.
struct ArgumentChecks: Sendable {
    /// What to check of one argument.
    struct Check: Sendable {
        /// The shape its value must have; nil where anything goes or a declared scalar type already checks it.
        var shape: JSONShape?
        /// Whether an empty array is refused (`MethodDescription.nonEmptyCollections`).
        var nonEmpty: Bool
    }

    /// For each method (by identity), the check at each argument position.
    let checks: [ObjectIdentifier: [Check]]

    init(modules: [Module], descriptions: [String: [String: MethodDescription]]) {
        var checks: [ObjectIdentifier: [Check]] = [:]
        for module in modules {
            for method in module.methods {
                guard let description = descriptions[module.name]?[method.name] else { continue }
                let methodChecks = method.arguments.map { argument in
                    var shape = description.argument(argument.name)
                    // A declared type checks itself, but not the properties of the objects it holds.
                    if shape == .any || (argument.type != nil && !(shape?.hasObjectProperties ?? false)) { shape = nil }
                    return Check(shape: shape, nonEmpty: description.nonEmptyCollections.contains(argument.name))
                }
                if methodChecks.contains(where: { $0.shape != nil || $0.nonEmpty }) {
                    checks[ObjectIdentifier(method)] = methodChecks
                }
            }
        }
        self.checks = checks
    }

    /// The checks of `method`'s arguments by position; nil when none checks anything.
    func checks(of method: Method) -> [Check]? {
        checks[ObjectIdentifier(method)]
    }

    /// Refuses a value that does not have its argument's inferred shape; returns
    /// its stored form when that differs (base64 text where binary goes decoded
    /// to the bytes bound as a BLOB; integral decimals where integers go made
    /// integers, as JSON Schema counts 2.0 as an integer), nil when it stands.
    /// The arguments' form itself (object, array, names) is the frame's to check.
    func check(_ value: Value, _ check: Check, path: String, method: Method) throws(RenderError) -> Value? {
        if check.nonEmpty, case .array(let elements) = value, elements.isEmpty {
            throw RenderError(code: .wrongType, method: method.qualifiedName,
                              message: "argument '\(path)' must not be empty: its statement needs at least one element",
                              argument: path)
        }
        guard let shape = check.shape else { return nil }
        var trail = Trail(argument: path)
        return try self.check(value, shape, trail: &trail, method: method)
    }

    /// Where in an argument a check is: its name, then properties and indices.
    /// A stack, spelled out only for an error, so that checking a large
    /// array allocates nothing per element.
    private struct Trail {
        enum Step { case property(String), index(Int) }
        let argument: String
        var steps: [Step] = []

        var text: String {
            steps.reduce(into: argument) { text, step in
                switch step {
                case .property(let name): text += "." + name
                case .index(let index): text += "[\(index)]"
                }
            }
        }
    }

    /// Checks one value; returns a replacement when its form changes.
    private func check(_ value: Value, _ shape: JSONShape, trail: inout Trail,
                       method: Method) throws(RenderError) -> Value? {
        func mismatch(_ expected: String) -> RenderError {
            RenderError(code: .wrongType, method: method.qualifiedName,
                        message: "argument '\(trail.text)' must be \(expected), not \(value.kindPhrase)", argument: trail.text)
        }
        switch (shape, value) {
        case (_, .null), (.any, _), (.number, .integer), (.number, .double), (.string, .string), (.boolean, .bool),
             (.binary, .blob):
            return nil
        case (.integer(let bits), .integer(let integer)):
            if bits == 32 && !(Int64(Int32.min)...Int64(Int32.max) ~= integer) {
                throw RenderError(code: .wrongType, method: method.qualifiedName,
                                  message: "argument '\(trail.text)' is a 32-bit integer, and \(integer) is outside its range", argument: trail.text)
            }
            return nil
        case (.integer, .double(let double)):
            guard let integer = Int64(exactly: double) else { throw mismatch("an integer") }
            return try check(.integer(integer), shape, trail: &trail, method: method) ?? .integer(integer)
        case (.binary, .string(let text)):
            // Decoded once, here: the bytes are what gets bound (a BLOB, as for a declared binary).
            guard let bytes = Base64.decode(text) else { throw mismatch("binary as base64 text") }
            return .blob(bytes)
        case (.object(let properties, _), .object(var members)):
            var changed = false
            for property in properties {
                guard let member = members[property.name] else { continue }
                trail.steps.append(.property(property.name))
                defer { trail.steps.removeLast() }
                if let replacement = try check(member, property.shape, trail: &trail, method: method) {
                    members[property.name] = replacement
                    changed = true
                }
            }
            return changed ? .object(members) : nil
        case (.array(let element), .array(var elements)):
            var changed = false
            for index in elements.indices {
                trail.steps.append(.index(index))
                defer { trail.steps.removeLast() }
                if let replacement = try check(elements[index], element, trail: &trail, method: method) {
                    elements[index] = replacement
                    changed = true
                }
            }
            return changed ? .array(elements) : nil
        case (.integer, _): throw mismatch("an integer")
        case (.number, _): throw mismatch("a number")
        case (.string, _): throw mismatch("a string")
        case (.boolean, _): throw mismatch("a boolean")
        case (.binary, _): throw mismatch("binary as base64 text")
        case (.object, _): throw mismatch("an object")
        case (.array, _): throw mismatch("an array")
        }
    }
}
