import ASCIIBytes
import DAOValue
import Foundation

/// One `<select>`, `<insert>`, `<update>` or `<delete>` (a method), or one `<upgrade>`: MyBatis's
/// `XMLStatementBuilder`. The element's attributes are read here; its body is `BodyParser`'s.
extension ModuleParser {
    mutating func parseMethod(_ element: XMLElement, moduleName: String, documentation: String?, context: inout ModuleContext,
                              maps: [String: ResultMap]) -> Method? {
        let kind = MethodKind(rawValue: element.name)!
        checkAttributes(element, kind == .select
            ? ["id", "arguments", "result", "foreach", "access", "scan"] : ["id", "arguments", "foreach", "access", "scan"])
        let line = element.line
        let id = element.attribute("id")?.trimmingCharacters(in: .whitespaces) ?? ""
        guard isIdentifier(id) else {
            error(line, id.isEmpty ? "<\(element.name)> needs an id" : "method id '\(id)' must be an identifier")
            return nil
        }
        let errorCount = errors.count
        let arguments = parseArguments(element.attribute("arguments") ?? "", line: line)
        var scope = Scope(arguments: arguments, globals: context.globals, userIDUse: context.userIDUse)

        var foreach: MethodForeach?
        if let text = element.attribute("foreach") {
            let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
            if parts.count != 2 || !isIdentifier(parts[0]) || !isIdentifier(parts[1]) {
                error(line, "foreach=\"\(text)\" must be of the form collection.item")
            } else if let collection = arguments.firstIndex(where: { $0.name == parts[0] }) {
                let item = String(parts[1])
                if arguments.contains(where: { $0.name == item }) {
                    error(line, "the foreach item '\(item)' has the name of an argument")
                } else if reservedNames.contains(item.lowercased()) {
                    error(line, "the foreach item cannot be named '\(item)', a keyword of expressions")
                } else if item == Module.userIDGlobal {
                    error(line, "the foreach item cannot be named '\(item)': it is the built-in global with the caller's user id")
                } else {
                    let slot = scope.push(item: item, elementClass: arguments[collection].type.flatMap(elementClass))
                    foreach = MethodForeach(collection: collection, item: item, itemSlot: slot)
                }
            } else {
                error(line, "foreach=\"\(text)\": '\(parts[0])' is not an argument of method '\(id)'")
            }
        }

        var result: ResultType?
        if kind == .select {
            if let text = element.attribute("result") {
                result = parseResult(text, line: line, maps: maps)
            } else {
                result = .array(.row)
            }
        }

        var bodyParser = BodyParser(module: context, scope: scope, isWrite: kind != .select, method: id)
        bodyParser.budget = budget
        defer {
            budget = bodyParser.budget
            namesTable = namesTable || bodyParser.namesTable
        }
        let body: Body
        do {
            body = try bodyParser.parseMethodBody(element)
        } catch {
            errors.append(error)
            return nil
        }
        guard errors.count == errorCount else { return nil }
        if kind == .select {
            let counts: [Int] = switch body {
            case .statements(let statements): [statements.count]
            case .tryExcept(let tried, let excepted): [tried.count, excepted.count]
            }
            if counts.contains(where: { $0 != 1 }) {
                error(line, "select '\(id)' must run exactly one statement: <step> is for insert, update, delete and upgrade")
                return nil
            }
        }
        scope = bodyParser.scope
        var requiredCollections = bodyParser.unguardedCollections
        if let foreach { requiredCollections.insert(arguments[foreach.collection].name) }
        return Method(name: id, moduleName: moduleName, qualifiedName: moduleName + "." + id, kind: kind, line: line,
                      documentation: documentation, arguments: arguments, result: result, foreach: foreach, body: body,
                      localCount: scope.localCount, requiredCollections: requiredCollections,
                      rawTextArguments: bodyParser.rawTextArguments)
    }

    mutating func parseUpgrade(_ element: XMLElement, moduleVersion: Version, context: inout ModuleContext) -> Upgrade? {
        checkAttributes(element, ["toVersion"])
        guard let text = element.attribute("toVersion"), let toVersion = Version(text.trimmingCharacters(in: .whitespaces)) else {
            error(element.line, "<upgrade> needs toVersion=\"x.x\"")
            return nil
        }
        if moduleVersion < toVersion {
            error(element.line, "<upgrade toVersion=\"\(toVersion)\"> goes past the module's version \(moduleVersion), so it would never run")
        }
        var parser = BodyParser(module: context, scope: Scope(arguments: [], globals: context.globals),
                                isWrite: true, method: "upgrade to \(toVersion)")
        parser.budget = budget
        defer {
            budget = parser.budget
            namesTable = namesTable || parser.namesTable
        }
        do {
            let statements = try parser.parseStatements(element, allowDynamic: false)
            return Upgrade(toVersion: toVersion, statements: statements, line: element.line)
        } catch {
            errors.append(error)
            return nil
        }
    }
}
