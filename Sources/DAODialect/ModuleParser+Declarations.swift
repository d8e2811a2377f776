import ASCIIBytes
import DAOValue
import Foundation

/// The children of `<module>` other than methods and upgrades: `<const>`, `<sql>` fragments, `<map>`s and
/// `<crypt>`s, gathered before any method is parsed (MyBatis's `XMLMapperBuilder` reading `sql` and
/// `resultMap` elements before the statements).
extension ModuleParser {
    /// What a module declares besides methods, gathered before any method is parsed.
    struct Declarations {
        var consts: [String: (value: String, line: Int)] = [:]
        var fragments: [String: XMLElement] = [:]
        var maps: [String: ResultMap] = [:]
        var encryptedProperties: [String: Set<String>] = [:]
        var methodElements: [(element: XMLElement, documentation: String?)] = []
        var upgradeElements: [XMLElement] = []
    }

    mutating func collectDeclarations(_ root: XMLElement, into declarations: inout Declarations) {
        var pendingComment: String?
        var methodIDs: [String: Int] = [:]
        for child in root.children {
            switch child {
            case .comment(let text, _):
                pendingComment = text.trimmingCharacters(in: .whitespacesAndNewlines)
                continue
            case .text(let text, let line):
                if !text.allSatisfy(\.isWhitespace) {
                    error(firstContentLine(text, line), "text directly inside <module> is not part of any method: '\(excerpt(text))'")
                }
                if text.contains("\n\n") || !text.allSatisfy(\.isWhitespace) { pendingComment = nil }
                continue
            case .element(let element):
                defer { pendingComment = nil }
                switch element.name {
                case "const":
                    if element.attributes.isEmpty { error(element.line, "<const> declares no constant") }
                    for (name, value) in element.attributes {
                        if isNewInclusion(name, in: declarations, line: element.line, as: "a constant name",
                                          notAnIdentifier: "constant name '\(name)' must be an identifier") {
                            declarations.consts[name] = (value, element.line)
                        }
                    }
                    if !element.children.isEmpty { error(element.line, "<const> takes no content, only attributes") }
                case "sql":
                    checkAttributes(element, ["id"])
                    let id = element.attribute("id") ?? ""
                    if isNewInclusion(id, in: declarations, line: element.line, as: "an sql fragment id",
                                      notAnIdentifier: "<sql> needs an id that is an identifier") {
                        declarations.fragments[id] = element
                    }
                case "select", "insert", "update", "delete":
                    let id = element.attribute("id") ?? ""
                    if let first = methodIDs[id] {
                        error(element.line, "duplicate method id '\(id)' (first defined at line \(first))")
                    } else {
                        methodIDs[id] = element.line
                        declarations.methodElements.append((element, pendingComment))
                    }
                case "map":
                    if let map = parseMap(element) {
                        if declarations.maps[map.id] != nil {
                            error(element.line, "duplicate map id '\(map.id)'")
                        } else {
                            declarations.maps[map.id] = map
                        }
                    }
                case "upgrade":
                    declarations.upgradeElements.append(element)
                case "crypt":
                    checkAttributes(element, ["class", "property"])
                    let className = element.attribute("class")?.trimmingCharacters(in: .whitespaces) ?? ""
                    let property = element.attribute("property")?.trimmingCharacters(in: .whitespaces) ?? ""
                    if !isIdentifier(className) || !isIdentifier(property) {
                        error(element.line, "<crypt> needs class and property attributes that are identifiers")
                    } else {
                        declarations.encryptedProperties[className, default: []].insert(property)
                    }
                    if !element.children.isEmpty { error(element.line, "<crypt> takes no content") }
                default:
                    error(element.line, "unknown element <\(element.name)> in <module> (expected const, sql, select, insert, update, delete, map, upgrade or crypt)")
                }
            }
        }
    }

    /// Whether `name` may name a new const or `<sql>` fragment, which share the names `${}` includes;
    /// reports why not (`T` and `t` are the table).
    mutating func isNewInclusion(_ name: String, in declarations: Declarations, line: Int, as what: String,
                                 notAnIdentifier: String) -> Bool {
        if name == "T" || name == "t" {
            error(line, "'\(name)' cannot be \(what): ${T} and ${t} are the table")
        } else if !isIdentifier(name) {
            error(line, notAnIdentifier)
        } else if declarations.consts[name] != nil || declarations.fragments[name] != nil {
            error(line, "'\(name)' is already defined")
        } else {
            return true
        }
        return false
    }

    mutating func parseMap(_ element: XMLElement) -> ResultMap? {
        checkAttributes(element, ["id", "result"])
        let id = element.attribute("id")?.trimmingCharacters(in: .whitespaces) ?? ""
        let className = element.attribute("result")?.trimmingCharacters(in: .whitespaces) ?? ""
        guard isIdentifier(id) else {
            error(element.line, "<map> needs an id that is an identifier")
            return nil
        }
        if !isIdentifier(className) {
            error(element.line, "<map id=\"\(id)\"> needs a result attribute naming its class")
        }
        var propertyForColumn: [String: String] = [:]
        var properties: Set<String> = []
        for child in element.children {
            switch child {
            case .comment: continue
            case .text(let text, let line):
                if !text.allSatisfy(\.isWhitespace) { error(firstContentLine(text, line), "<map> holds only <result> elements") }
            case .element(let result):
                guard result.name == "result" else {
                    error(result.line, "unknown element <\(result.name)> in <map> (expected <result property column/>)")
                    continue
                }
                checkAttributes(result, ["property", "column"])
                let property = result.attribute("property")?.trimmingCharacters(in: .whitespaces) ?? ""
                let column = result.attribute("column")?.trimmingCharacters(in: .whitespaces) ?? ""
                if property.isEmpty || column.isEmpty {
                    error(result.line, "<result> needs both property and column")
                } else if propertyForColumn[column] != nil {
                    error(result.line, "column '\(column)' is mapped twice in map '\(id)'")
                } else if properties.contains(property) {
                    error(result.line, "property '\(property)' is mapped twice in map '\(id)'")
                } else {
                    propertyForColumn[column] = property
                    properties.insert(property)
                }
            }
        }
        return ResultMap(id: id, className: className, propertyForColumn: propertyForColumn, line: element.line)
    }
}
