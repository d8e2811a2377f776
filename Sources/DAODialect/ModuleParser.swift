import ASCIIBytes
import DAOValue
import Foundation

/// Parses a `yes|no|true|false` attribute, any case.
func parseFlag(_ text: String) -> Bool? {
    switch text.trimmingCharacters(in: .whitespaces).lowercased() {
    case "true", "yes": true
    case "false", "no": false
    default: nil
    }
}

/// The module-level pass, MyBatis's `XMLMapperBuilder`: the attributes of `<module>`, its declarations
/// (`ModuleParser+Declarations.swift`), the cycles among them (`ModuleParser+Inclusions.swift`), then each
/// method and upgrade (`ModuleParser+Methods.swift`), whose bodies `BodyParser` reads.
struct ModuleParser {
    let file: String
    var errors: [LoadError] = []
    /// What the module's bodies may still expand to, handed from one body's parser to the next.
    var budget = ExpansionBudget()
    /// Whether any method or upgrade wrote `${T}` or `${t}`.
    var namesTable = false

    init(file: String) { self.file = file }

    mutating func error(_ line: Int, _ message: String) {
        errors.append(LoadError(file: file, line: line, message: message))
    }

    /// Reports attributes of `element` not in `allowed`.
    mutating func checkAttributes(_ element: XMLElement, _ allowed: Set<String>) {
        for attribute in element.attributes where !allowed.contains(attribute.name) {
            let list = allowed.sorted().joined(separator: ", ")
            error(element.line, "unknown attribute '\(attribute.name)' on <\(element.name)>"
                + (allowed.isEmpty ? " (it takes none)" : " (allowed: \(list))"))
        }
    }

    mutating func parse(_ root: XMLElement) -> Module? {
        guard root.name == "module" else {
            error(root.line, "the root element must be <module>, not <\(root.name)>")
            return nil
        }
        checkAttributes(root, ["name", "initializer", "tableName", "version", "resetOnUpgrade", "upgradeMinVersion",
                               "userDependent", "storage", "database", "globals", "access", "scan", "key"])
        let line = root.line
        let name = root.attribute("name")?.trimmingCharacters(in: .whitespaces) ?? ""
        if name.isEmpty {
            error(line, "<module> needs a name attribute")
        } else if !isIdentifier(name) {
            error(line, "module name '\(name)' must be an identifier (letters, digits, '_'; not starting with a digit)")
        }
        var tableName: String?
        if let table = root.attribute("tableName")?.trimmingCharacters(in: .whitespaces), !table.isEmpty {
            if let problem = tableNameProblem(table) { error(line, "tableName '\(table)': \(problem)") }
            tableName = table
        }
        var version = Version("1.0")!
        if let text = root.attribute("version") {
            if let parsed = Version(text.trimmingCharacters(in: .whitespaces)) { version = parsed } else {
                error(line, "version '\(text)' is not a version of the form x.x (numbers separated by dots)")
            }
        }
        var upgradeMinVersion: Version?
        if let text = root.attribute("upgradeMinVersion")?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            if let parsed = Version(text) {
                upgradeMinVersion = parsed
                if version < parsed {
                    error(line, "upgradeMinVersion \(parsed) is newer than the module's version \(version)")
                }
            } else {
                error(line, "upgradeMinVersion '\(text)' is not a version of the form x.x")
            }
        }
        let resetOnUpgrade = flag(root, "resetOnUpgrade") ?? false
        let userDependent = flag(root, "userDependent") ?? false
        let adminOnly = access(root)
        let scanAllowed = scan(root)
        var storage: String?
        if let text = root.attribute("storage")?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            if let problem = storageNameProblem(text) { error(line, "storage '\(text)': \(problem)") }
            storage = text
        }
        var database: String?
        if let text = root.attribute("database")?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            if let problem = databasePathProblem(text) { error(line, "database '\(text)': \(problem)") }
            database = text
            if storage != nil { error(line, "a module names either a storage or a database, not both") }
            if userDependent { error(line, "a module bound to one database file cannot be userDependent") }
        }
        var keyID: String?
        if let text = root.attribute("key") {
            let id = text.trimmingCharacters(in: .whitespaces)
            if let problem = keyIDProblem(id) { error(line, "key '\(id)': \(problem)") }
            keyID = id
        }
        var globals: [String] = []
        if let text = root.attribute("globals") {
            for part in text.split(separator: ",") {
                let global = part.trimmingCharacters(in: .whitespaces)
                if !isIdentifier(global) || reservedNames.contains(global.lowercased()) {
                    error(line, "global argument name '\(global)' must be an identifier and not a keyword")
                } else if global == Module.userIDGlobal {
                    error(line, "'\(global)' is built in (the caller's user id): every method may read it without declaring it")
                } else if globals.contains(global) {
                    error(line, "global argument '\(global)' is declared twice")
                } else {
                    globals.append(global)
                }
            }
        }

        var declarations = Declarations()
        collectDeclarations(root, into: &declarations)
        let cyclic = checkInclusionCycles(declarations)

        var context = ModuleContext(
            file: file, tableName: tableName, consts: declarations.consts, fragments: declarations.fragments,
            cyclic: cyclic, globals: Set(globals), encryptedProperties: declarations.encryptedProperties)
        var methods: [Method] = []
        var methodIndex: [String: Int] = [:]
        var adminOnlyMethods: Set<String> = []
        var scanAllowedMethods: Set<String> = []
        for (element, documentation) in declarations.methodElements {
            // Once the module's SQL is over its size, every further method would only say so again.
            if budget.isSpent { break }
            guard let method = parseMethod(element, moduleName: name, documentation: documentation, context: &context,
                                           maps: declarations.maps)
            else { continue }
            methodIndex[method.name] = methods.count
            methods.append(method)
            if access(element) { adminOnlyMethods.insert(method.name) }
            if scan(element) { scanAllowedMethods.insert(method.name) }
        }
        var upgrades: [Upgrade] = []
        for element in declarations.upgradeElements where !budget.isSpent {
            if let upgrade = parseUpgrade(element, moduleVersion: version, context: &context) {
                if upgrades.contains(where: { $0.toVersion == upgrade.toVersion }) {
                    error(element.line, "another <upgrade> already goes to version \(upgrade.toVersion)")
                } else {
                    upgrades.append(upgrade)
                }
            }
        }
        upgrades.sort { $0.toVersion < $1.toVersion }

        let initializer = (root.attribute("initializer")?.trimmingCharacters(in: .whitespaces)).flatMap { $0.isEmpty ? nil : $0 }
        if let initializer {
            if let index = methodIndex[initializer] {
                let method = methods[index]
                if method.kind == .select {
                    error(method.line, "the initializer '\(initializer)' must be an update (or insert/delete), not a select")
                }
                if let required = method.arguments.first(where: \.required) {
                    error(method.line, "the initializer '\(initializer)' runs without arguments, so it cannot require $\(required.name)")
                }
                if method.foreach != nil {
                    error(method.line, "the initializer '\(initializer)' runs without arguments, so it cannot have a foreach")
                }
            } else if !declarations.methodElements.contains(where: { $0.element.attribute("id")?.trimmingCharacters(in: .whitespaces) == initializer }) {
                error(line, "initializer '\(initializer)' is not a method of this module")
            }
        }

        return Module(
            name: name, file: file, line: line, tableName: tableName, isTemplate: tableName == nil && namesTable, version: version,
            resetOnUpgrade: resetOnUpgrade, upgradeMinVersion: upgradeMinVersion,
            initializer: initializer,
            userDependent: userDependent, adminOnly: adminOnly, adminOnlyMethods: adminOnlyMethods,
            scanAllowed: scanAllowed, scanAllowedMethods: scanAllowedMethods, storage: storage, database: database, globals: globals,
            usesUserID: context.userIDUse.used,
            methods: methods, maps: declarations.maps, upgrades: upgrades,
            encryptedProperties: declarations.encryptedProperties, methodIndex: methodIndex, keyID: keyID)
    }

    /// daogate's `access` attribute: `admin` (only admins may call), or `any` (the default).
    mutating func access(_ element: XMLElement) -> Bool { choice(element, "access", on: "admin", off: "any") }

    /// daogate's `scan` attribute: `allowed` (a full table scan is deliberate:
    /// `check --plans` does not report it), or `report` (the default).
    mutating func scan(_ element: XMLElement) -> Bool { choice(element, "scan", on: "allowed", off: "report") }

    /// An attribute of two words: `on` is true; `off`, empty or absent, false.
    mutating func choice(_ element: XMLElement, _ name: String, on: String, off: String) -> Bool {
        guard let value = element.attribute(name)?.trimmingCharacters(in: .whitespaces), !value.isEmpty, value != off else {
            return false
        }
        if value == on { return true }
        error(element.line, "\(name)=\"\(value)\" must be \(on) or \(off)")
        return false
    }

    mutating func flag(_ element: XMLElement, _ name: String) -> Bool? {
        guard let text = element.attribute(name) else { return nil }
        if text.trimmingCharacters(in: .whitespaces).isEmpty { return nil }
        guard let value = parseFlag(text) else {
            error(element.line, "\(name)=\"\(text)\" must be true, false, yes or no")
            return nil
        }
        return value
    }
}
