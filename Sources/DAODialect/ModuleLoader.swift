import ASCIIBytes
import DAOValue
import Foundation

/// Loads module files: XML → a validated `Module`, or every problem found.
public enum ModuleLoader {
    /// Loads every `*.xml` file under `directory` (recursively, in path order).
    ///
    /// Returns the modules that loaded and the problems of those that did not,
    /// plus a problem for each module name declared twice.
    public static func loadDirectory(_ directory: String) -> (modules: [Module], errors: [LoadError]) {
        var modules: [Module] = []
        var errors: [LoadError] = []
        let files: [String]
        do {
            files = try moduleFiles(in: directory)
        } catch {
            return ([], [LoadError(file: directory, line: 0, message: "cannot read the folder: \(error.localizedDescription)")])
        }
        var firstFileOfName: [String: (String, Int)] = [:]
        for file in files {
            do {
                let module = try load(file: file)
                if let (otherFile, otherLine) = firstFileOfName[module.name] {
                    errors.append(LoadError(file: file, line: module.line, message:
                        "module name '\(module.name)' is already used by \(otherFile):\(otherLine)"))
                    continue
                }
                firstFileOfName[module.name] = (file, module.line)
                modules.append(module)
            } catch {
                errors += error.errors
            }
        }
        return (modules, errors)
    }

    /// The `*.xml` files under `directory`, sorted, as paths that start with `directory`.
    public static func moduleFiles(in directory: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: directory])
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        let paths = try FileManager.default.subpathsOfDirectory(atPath: directory)
        return paths.filter { $0.hasSuffix(".xml") }.sorted().map { base + $0 }
    }

    /// Loads one module file.
    public static func load(file: String) throws(LoadFailure) -> Module {
        // Reads one byte past the limit at most, so neither a huge file nor an
        // endless one (a link to /dev/zero) is read whole.
        guard let handle = FileHandle(forReadingAtPath: file),
              let data = try? handle.read(upToCount: ModuleLimits.fileSize + 1) ?? Data()
        else {
            throw LoadFailure(errors: [LoadError(file: file, line: 0, message: "cannot read the file")])
        }
        try? handle.close()
        guard data.count <= ModuleLimits.fileSize else {
            throw LoadFailure(errors: [LoadError(file: file, line: 0, message:
                "the file is larger than \(ModuleLimits.fileSize >> 20) MiB, the most a module file may be")])
        }
        return try load(bytes: [UInt8](data), file: file)
    }

    /// Loads a module from the bytes of its XML; `file` names it in messages.
    public static func load(bytes: [UInt8], file: String) throws(LoadFailure) -> Module {
        let root: XMLElement
        do {
            root = try XMLTree.parse(bytes)
        } catch {
            throw LoadFailure(errors: [LoadError(file: file, line: error.line, message: error.message)])
        }
        var parser = ModuleParser(file: file)
        let module = parser.parse(root)
        if let module, parser.errors.isEmpty { return module }
        // A problem in a fragment is found again by each method that includes it: report it once.
        var seen: Set<LoadError> = []
        let reported = parser.errors.filter { seen.insert($0).inserted }
        throw LoadFailure(errors: reported.isEmpty
            ? [LoadError(file: file, line: root.line, message: "the module could not be loaded")]
            : reported.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(\.element))
    }
}

/// Words an argument or item cannot be named, because expressions read them.
let reservedNames: Set<String> = ["nil", "and", "or", "not", "xor", "true", "false"]

/// Parses a `yes|no|true|false` attribute, any case.
func parseFlag(_ text: String) -> Bool? {
    switch text.trimmingCharacters(in: .whitespaces).lowercased() {
    case "true", "yes": true
    case "false", "no": false
    default: nil
    }
}

/// The module-level pass: attributes, declarations, then each method.
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

    /// Why `id` cannot name a key of the keyring (`ID.key` in the key folder), or nil.
    private func keyIDProblem(_ id: String) -> String? {
        let bytes = Array(id.utf8)
        let allowed = { (byte: UInt8) in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard (1...64).contains(bytes.count), bytes.allSatisfy(allowed), bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return "a key id is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-'"
        }
        return nil
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
                        if name == "T" || name == "t" {
                            error(element.line, "'\(name)' cannot be a constant name: ${T} and ${t} are the table")
                        } else if !isIdentifier(name) {
                            error(element.line, "constant name '\(name)' must be an identifier")
                        } else if declarations.consts[name] != nil || declarations.fragments[name] != nil {
                            error(element.line, "'\(name)' is already defined")
                        } else {
                            declarations.consts[name] = (value, element.line)
                        }
                    }
                    if !element.children.isEmpty { error(element.line, "<const> takes no content, only attributes") }
                case "sql":
                    checkAttributes(element, ["id"])
                    let id = element.attribute("id") ?? ""
                    if id == "T" || id == "t" {
                        error(element.line, "'\(id)' cannot be an sql fragment id: ${T} and ${t} are the table")
                    } else if !isIdentifier(id) {
                        error(element.line, "<sql> needs an id that is an identifier")
                    } else if declarations.consts[id] != nil || declarations.fragments[id] != nil {
                        error(element.line, "'\(id)' is already defined")
                    } else {
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

    // MARK: Methods

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

/// Why `name` cannot be a table name, or nil when it can.
public func tableNameProblem(_ name: String) -> String? {
    if name.utf8.count > 128 { return "a table name is at most 128 characters" }
    if !isIdentifier(name) { return "a table name must be an identifier (letters, digits, '_'; not starting with a digit)" }
    if name.lowercased().hasPrefix("sqlite_") { return "names starting with sqlite_ are reserved by SQLite" }
    if name.lowercased() == "tableversions" { return "TableVersions is where daogate keeps table versions" }
    if name.lowercased().hasPrefix("daogate_") { return "names starting with daogate_ are the key-value store's and the caches'" }
    if name.lowercased().hasPrefix("_litestream_") { return "names starting with _litestream_ are Litestream's (the replication of the data folder)" }
    if isSQLKeyword(name) { return "'\(name)' is an SQL keyword" }
    return nil
}

/// Why `name` cannot name a custom storage, or nil when it can.
public func storageNameProblem(_ name: String) -> String? {
    if name.isEmpty || name.utf8.count > 64 { return "a storage name is 1 to 64 characters" }
    guard name.utf8.allSatisfy({ isIdentifierByte($0) || $0 == UInt8(ascii: "-") }),
        let first = name.utf8.first, first != UInt8(ascii: "-")
    else { return "a storage name uses only letters, digits, '_' and '-', and does not start with '-'" }
    return nil
}

/// Why `path` cannot be a module's database file, or nil when it can.
func databasePathProblem(_ path: String) -> String? {
    if path.hasPrefix("/") { return "must be relative to the data folder" }
    let parts = path.split(separator: "/", omittingEmptySubsequences: false)
    for part in parts {
        if part.isEmpty || part == "." || part == ".." { return "must not contain empty, '.' or '..' parts" }
        if !part.utf8.allSatisfy({ isASCIILetter($0) || isASCIIDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) {
            return "use only letters, digits, '_', '-', '.' and '/'"
        }
    }
    return nil
}
