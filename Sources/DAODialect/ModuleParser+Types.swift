import ASCIIBytes
import DAOValue
import Foundation

/// The types a method declares: its `arguments` (names, `$` for required, `:type`) and its `result`.
extension ModuleParser {
    /// `arguments="$a, b:long long, c:[string]"`.
    mutating func parseArguments(_ text: String, line: Int) -> [MethodArgument] {
        var arguments: [MethodArgument] = []
        if text.trimmingCharacters(in: .whitespaces).isEmpty { return [] }
        for part in splitTopLevel(text) {
            var declaration = part.trimmingCharacters(in: .whitespacesAndNewlines)
            var type: ArgumentType?
            if let colon = declaration.firstIndex(of: ":") {
                let typeText = declaration[declaration.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                declaration = declaration[..<colon].trimmingCharacters(in: .whitespaces)
                type = parseArgumentType(typeText)
                if type == nil {
                    error(line, "argument '\(excerpt(declaration))': '\(excerpt(typeText))' is not a type (int, long long, bool, double, "
                        + "string, binary, json, {}, a class name, or [type], arrays at most \(ModuleLimits.typeNesting) deep)")
                }
            }
            let required = declaration.hasPrefix("$")
            let name = required ? String(declaration.dropFirst()) : declaration
            if !isIdentifier(name) {
                error(line, "argument '\(declaration)' must be an identifier, optionally with a $ prefix")
            } else if reservedNames.contains(name.lowercased()) {
                error(line, "an argument cannot be named '\(name)', a keyword of expressions")
            } else if name == Module.userIDGlobal {
                error(line, "an argument cannot be named '\(name)': it is the built-in global with the caller's user id, which no caller may set")
            } else if arguments.contains(where: { $0.name == name }) {
                error(line, "argument '\(name)' is declared twice")
            } else {
                arguments.append(MethodArgument(name: name, required: required, type: type))
            }
        }
        return arguments
    }

    /// Splits on commas outside brackets, so `a:[string], b` is two parts.
    func splitTopLevel(_ text: String) -> [Substring] {
        var parts: [Substring] = []
        var depth = 0
        var start = text.startIndex
        for index in text.indices {
            switch text[index] {
            case "[": depth += 1
            case "]": depth -= 1
            case "," where depth == 0:
                parts.append(text[start..<index])
                start = text.index(after: index)
            default: break
            }
        }
        parts.append(text[start...])
        return parts
    }

    mutating func parseResult(_ text: String, line: Int, maps: [String: ResultMap]) -> ResultType? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        func single(_ text: String) -> ResultType? {
            let text = text.trimmingCharacters(in: .whitespaces)
            let normalized = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if let scalar = ScalarType(rawValue: normalized) { return .scalar(scalar) }
            if text == "{}" || normalized == "{ }" { return .row }
            if text.hasPrefix(":") {
                let id = String(text.dropFirst())
                guard isIdentifier(id) else { return nil }
                return .mapped(mapID: id)
            }
            if isClassName(text) { return .object(className: text) }
            return nil
        }
        var type: ResultType?
        if trimmed.hasPrefix("["), trimmed.hasSuffix("]"), trimmed.count >= 2 {
            type = single(String(trimmed.dropFirst().dropLast())).map { .array($0) }
        } else {
            type = single(trimmed)
        }
        guard let type else {
            error(line, "result=\"\(text)\" is not a result type (int, long long, bool, double, string, binary, {}, AType, :AMap, or one of those in [])")
            return nil
        }
        var element = type
        if case .array(let inner) = type { element = inner }
        if case .mapped(let mapID) = element, maps[mapID] == nil {
            error(line, "result=\"\(text)\" refers to map '\(mapID)', which is not defined")
            return nil
        }
        return type
    }
}

/// `int`, `long long`, …, `json`, `{}`, `ClassName`, `[type]`.
/// Arrays nest at most ``ModuleLimits/typeNesting`` deep; a deeper type is nil.
func parseArgumentType(_ text: String) -> ArgumentType? {
    var text = text.trimmingCharacters(in: .whitespaces)
    var depth = 0
    while text.hasPrefix("["), text.hasSuffix("]"), text.count >= 2 {
        depth += 1
        guard depth <= ModuleLimits.typeNesting else { return nil }
        text = text.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
    }
    let normalized = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    var type: ArgumentType
    if let scalar = ScalarType(rawValue: normalized) {
        type = .scalar(scalar)
    } else if normalized == "json" {
        type = .any
    } else if normalized == "{}" {
        type = .object(className: nil)
    } else if isClassName(normalized) {
        type = .object(className: normalized)
    } else {
        return nil
    }
    for _ in 0..<depth { type = .array(type) }
    return type
}

/// A class name, as `AType` in `result` and types: an identifier starting
/// with an upper-case letter, so that a mistyped type (`integer`) is not
/// taken for one.
func isClassName(_ text: some StringProtocol) -> Bool {
    guard let first = text.utf8.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z") else { return false }
    return isIdentifier(text)
}

/// The class of the elements of a `[ClassName]` argument.
func elementClass(_ type: ArgumentType) -> String? {
    if case .array(.object(let className)) = type { return className }
    return nil
}
