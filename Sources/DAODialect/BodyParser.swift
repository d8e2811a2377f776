import ASCIIBytes
import DAOValue

/// What every method of a module can refer to.
struct ModuleContext {
    let file: String
    /// The fixed table, or nil in a template module.
    let tableName: String?
    let consts: [String: (value: String, line: Int)]
    let fragments: [String: XMLElement]
    /// Consts and fragments on a cycle of inclusions, reported where the cycle closes.
    let cyclic: Set<String>
    let globals: Set<String>
    let encryptedProperties: [String: Set<String>]
    let anyEncryptedProperty: Set<String>
    /// Set when a method reads the built-in `userId` (`Module.usesUserID`).
    let userIDUse = Use()

    init(file: String, tableName: String?, consts: [String: (value: String, line: Int)],
         fragments: [String: XMLElement], cyclic: Set<String>, globals: Set<String>,
         encryptedProperties: [String: Set<String>]) {
        self.file = file
        self.tableName = tableName
        self.consts = consts
        self.fragments = fragments
        self.cyclic = cyclic
        self.globals = globals
        self.encryptedProperties = encryptedProperties
        self.anyEncryptedProperty = encryptedProperties.values.reduce(into: Set()) { $0.formUnion($1) }
    }
}

/// Whether something was used while parsing: shared by the scopes of a module's methods.
final class Use {
    var used = false
}

/// The names visible at a point of a method body, and the slots they live in.
struct Scope {
    var arguments: [MethodArgument]
    var globals: Set<String>
    /// Marked when the body reads the built-in `userId`; an upgrade's scope has none (it reads null).
    var userIDUse: Use?
    /// `foreach` items in scope, innermost last.
    var items: [(name: String, slot: Int, elementClass: String?)] = []
    var localCount: Int

    init(arguments: [MethodArgument], globals: Set<String>, userIDUse: Use? = nil) {
        self.arguments = arguments
        self.globals = globals
        self.userIDUse = userIDUse
        self.localCount = arguments.count
    }

    /// Brings a `foreach` item into scope in a new slot.
    mutating func push(item: String, elementClass: String?) -> Int {
        let slot = localCount
        localCount += 1
        items.append((item, slot, elementClass))
        return slot
    }

    mutating func pop() { items.removeLast() }

    func slot(for name: String) -> Slot? {
        if let item = items.last(where: { $0.name == name }) { return .local(item.slot) }
        if let index = arguments.firstIndex(where: { $0.name == name }) { return .local(index) }
        if globals.contains(name) { return .global(name) }
        if name == Module.userIDGlobal {
            userIDUse?.used = true
            return .global(name)
        }
        return nil
    }

    /// The declared class of the object `name` holds, when the module says.
    func className(of name: String) -> String? {
        if let item = items.last(where: { $0.name == name }) { return item.elementClass }
        if let argument = arguments.first(where: { $0.name == name }), case .object(let className)? = argument.type {
            return className
        }
        return nil
    }

    func isDeclared(_ name: String) -> Bool {
        items.contains { $0.name == name } || arguments.contains { $0.name == name }
    }

    var knownNames: String {
        let names = arguments.map(\.name) + items.map(\.name) + globals.sorted()
        return names.isEmpty ? "it has no arguments" : "known: " + names.joined(separator: ", ")
    }
}

/// Text accumulated into nodes: adjacent text merges, whitespace folds.
struct NodeList {
    private(set) var nodes: [SQLNode] = []
    private var text: [UInt8] = []

    mutating func appendSpace() {
        if text.last != UInt8(ascii: " ") { text.append(UInt8(ascii: " ")) }
    }

    mutating func append(byte: UInt8) { text.append(byte) }

    mutating func append(text string: String) { text += string.utf8 }

    mutating func append(_ node: SQLNode) {
        if case .text(let bytes) = node {
            text += bytes.first == UInt8(ascii: " ") && text.last == UInt8(ascii: " ") ? bytes.dropFirst() : bytes[...]
            return
        }
        flush()
        nodes.append(node)
    }

    mutating func flush() {
        guard !text.isEmpty else { return }
        nodes.append(.text(text))
        text.removeAll(keepingCapacity: true)
    }

    mutating func finish() -> [SQLNode] {
        flush()
        return nodes
    }
}

/// Parses method, step and upgrade bodies into SQL node trees.
///
/// Tracks the SQL lexical state across the text of a statement, so that `@{}`
/// inside quotes the module wrote is formatted for that place, `#{}` inside
/// quotes (which would bind nothing) is refused, comments are dropped and
/// whitespace outside quotes folds to single spaces.
struct BodyParser {
    enum Quote: Equatable {
        case none
        case string
        case identifier(UInt8)
    }

    let module: ModuleContext
    var scope: Scope
    let isWrite: Bool
    let method: String
    var quote: Quote = .none
    /// The consts and fragments being expanded, outermost first, each with the
    /// line of its `${}`: to refuse cycles, and to say where a limit was reached.
    var expanding: [(name: String, line: Int)] = []
    /// How many elements and `${}` inclusions enclose the current point
    /// (``ModuleLimits/nesting``).
    var nesting = 0
    /// What the module may still expand to (``ModuleLimits``).
    var budget = ExpansionBudget()
    /// How many `<if>`, `<when>` and `<otherwise>` enclose the current point.
    var conditionalDepth = 0
    /// Arguments that an unconditional `<foreach>` iterates: a call fails when they are nil.
    var unguardedCollections: Set<String> = []
    /// Arguments inlined as raw text (`@{x no ""}`).
    var rawTextArguments: Set<String> = []
    /// Whether a statement wrote `${T}` or `${t}`, directly or through a fragment or const.
    var namesTable = false

    init(module: ModuleContext, scope: Scope, isWrite: Bool, method: String) {
        self.module = module
        self.scope = scope
        self.isWrite = isWrite
        self.method = method
    }

    func failure(_ line: Int, _ message: String) -> LoadError {
        LoadError(file: module.file, line: line, message: message)
    }

    /// Enters a level of nesting at `line`: an element, or a `${}` inclusion.
    mutating func enter(line: Int) throws(LoadError) {
        nesting += 1
        guard nesting > ModuleLimits.nesting else { return }
        throw failure(expanding.first?.line ?? line, "SQL nests more than \(ModuleLimits.nesting) levels deep "
            + "(elements and ${} inclusions of fragments and consts together)\(expansionChain)")
    }

    /// Counts `bytes` of SQL and `inclusions` against the module's ``ModuleLimits``.
    mutating func spend(bytes: Int = 0, inclusions: Int = 0, line: Int) throws(LoadError) {
        budget.bytes -= bytes
        budget.inclusions -= inclusions
        guard budget.isSpent else { return }
        let what = budget.bytes < 0
            ? "comes to more than \(ModuleLimits.expandedSQL >> 20) MiB of SQL"
            : "makes more than \(ModuleLimits.inclusions) ${} inclusions of fragments and consts"
        throw failure(expanding.first?.line ?? line, "the module \(what) once they are expanded\(expansionChain)")
    }

    /// The inclusions being expanded, for messages: " through ${a} → ${b}".
    var expansionChain: String {
        guard !expanding.isEmpty else { return "" }
        let names = expanding.map { "${\($0.name)}" }
        let shown = names.count > 6 ? names.prefix(3) + ["…"] + names.suffix(2) : names
        return " through " + shown.joined(separator: " → ")
    }

    func checkAttributes(_ element: XMLElement, _ allowed: Set<String>) throws(LoadError) {
        for attribute in element.attributes where !allowed.contains(attribute.name) {
            throw failure(element.line, "unknown attribute '\(attribute.name)' on <\(element.name)>"
                + (allowed.isEmpty ? " (it takes none)" : " (allowed: \(allowed.sorted().joined(separator: ", ")))"))
        }
    }

    // MARK: Bodies

    mutating func parseMethodBody(_ element: XMLElement) throws(LoadError) -> Body {
        let significant = element.children.filter(isSignificant)
        if significant.contains(where: { if case .element(let child) = $0 { child.name == "try" } else { false } }) {
            guard significant.count == 1, case .element(let tryElement) = significant[0] else {
                throw failure(element.line, "<try> must be the whole body of method '\(method)': nothing may come before or after it")
            }
            return try parseTry(tryElement)
        }
        return .statements(try parseStatements(element, allowDynamic: true))
    }

    mutating func parseTry(_ element: XMLElement) throws(LoadError) -> Body {
        try checkAttributes(element, [])
        let significant = element.children.filter(isSignificant)
        let excepts = significant.compactMap { node -> XMLElement? in
            if case .element(let child) = node, child.name == "except" { child } else { nil }
        }
        guard excepts.count == 1, case .element(let last) = significant.last, last.name == "except" else {
            throw failure(element.line, excepts.count > 1
                ? "<try> takes one <except>, not \(excepts.count)"
                : "<try> needs an <except> block as its last element")
        }
        try checkAttributes(last, [])
        let tryChildren = Array(element.children.prefix { node in
            if case .element(let child) = node { child.name != "except" } else { true }
        })
        let tried = try parseStatements(children: tryChildren, line: element.line, owner: "<try>", allowDynamic: true)
        let excepted = try parseStatements(children: last.children, line: last.line, owner: "<except>", allowDynamic: true)
        return .tryExcept(try: tried, except: excepted)
    }

    /// A body of text, or of `<step>`s and nothing else.
    mutating func parseStatements(_ element: XMLElement, allowDynamic: Bool) throws(LoadError) -> [SQLStatement] {
        let owner = element.name == "upgrade" ? "<upgrade>" : "method '\(method)'"
        return try parseStatements(children: element.children, line: element.line, owner: owner, allowDynamic: allowDynamic)
    }

    mutating func parseStatements(children: [XMLNode], line: Int, owner: String,
                                  allowDynamic: Bool) throws(LoadError) -> [SQLStatement] {
        let hasSteps = children.contains { if case .element(let child) = $0 { child.name == "step" } else { false } }
        guard hasSteps else {
            let nodes = try parseStatementNodes(children, line: line, allowDynamic: allowDynamic)
            return [SQLStatement(line: line, resumable: false, template: try template(nodes, line: line, owner: owner))]
        }
        var statements: [SQLStatement] = []
        for child in children {
            switch child {
            case .comment: continue
            case .text(let text, let textLine):
                if !text.allSatisfy(\.isWhitespace) {
                    throw failure(firstContentLine(text, textLine),
                                  "\(owner) has <step>s, so no text may stand outside them: '\(excerpt(text))'")
                }
            case .element(let step):
                guard step.name == "step" else {
                    throw failure(step.line, "\(owner) has <step>s, so <\(step.name)> must be inside a <step>")
                }
                try checkAttributes(step, ["resumable"])
                var resumable = false
                if let text = step.attribute("resumable") {
                    guard let flag = parseFlag(text) else {
                        throw failure(step.line, "resumable=\"\(text)\" must be true, false, yes or no")
                    }
                    resumable = flag
                }
                let nodes = try parseStatementNodes(step.children, line: step.line, allowDynamic: allowDynamic)
                statements.append(SQLStatement(line: step.line, resumable: resumable,
                                            template: try template(nodes, line: step.line, owner: "a <step> of \(owner)")))
            }
        }
        return statements
    }

    /// The nodes of one statement; its quotes must all close.
    mutating func parseStatementNodes(_ children: [XMLNode], line: Int, allowDynamic: Bool) throws(LoadError) -> [SQLNode] {
        quote = .none
        let nodes = try parseNodes(children, allowDynamic: allowDynamic)
        if quote != .none {
            throw failure(line, "a quoted SQL literal or identifier is not closed by the end of the statement")
        }
        return nodes
    }

    /// Text and bindings only: the SQL is final now. Anything else renders per call.
    func template(_ nodes: [SQLNode], line: Int, owner: String) throws(LoadError) -> SQLTemplate {
        let hasSQL = nodes.contains { node in
            if case .text(let text) = node { !text.allSatisfy { $0 == UInt8(ascii: " ") } } else { true }
        }
        guard hasSQL else { throw failure(line, "\(owner) has no SQL") }
        var buffer = SQLBuffer()
        var bindings: [BindReference] = []
        var encrypted: [EncryptedBinding] = []
        for node in nodes {
            switch node {
            case .text(let text): buffer.append(text: text)
            case .bind(let reference):
                buffer.appendPlaceholder()
                if let property = reference.encryptedProperty {
                    encrypted.append(EncryptedBinding(index: bindings.count, property: property))
                }
                bindings.append(reference)
            default:
                return SQLTemplate(form: .dynamic(nodes))
            }
        }
        return SQLTemplate(form: .fixed(.init(sql: buffer.finish(), bindings: bindings, encrypted: encrypted)))
    }

    func isSignificant(_ node: XMLNode) -> Bool {
        switch node {
        case .comment: false
        case .text(let text, _): !text.allSatisfy(\.isWhitespace)
        case .element: true
        }
    }

    // MARK: Dynamic elements

    mutating func parseNodes(_ children: [XMLNode], allowDynamic: Bool) throws(LoadError) -> [SQLNode] {
        var list = NodeList()
        for child in children {
            switch child {
            case .comment: continue
            case .text(let text, let line):
                try scan(Array(text.utf8), line: line, into: &list)
            case .element(let element):
                guard quote == .none else {
                    throw failure(element.line, "a quoted SQL literal must close before <\(element.name)>")
                }
                list.append(try parseElement(element, allowDynamic: allowDynamic))
            }
        }
        return list.finish()
    }

    mutating func parseElement(_ element: XMLElement, allowDynamic: Bool) throws(LoadError) -> SQLNode {
        let line = element.line
        try enter(line: line)
        defer { nesting -= 1 }
        try spend(bytes: element.name.utf8.count, line: line)
        let dynamic: Set<String> = ["if", "choose", "foreach", "where", "set", "trim"]
        if dynamic.contains(element.name) && !allowDynamic {
            throw failure(line, "<\(element.name)> is not allowed in an <upgrade>, which runs without arguments")
        }
        switch element.name {
        case "if":
            try checkAttributes(element, ["true", "false"])
            let condition = try parseCondition(element)
            conditionalDepth += 1
            defer { conditionalDepth -= 1 }
            return .if(condition, try parseNodes(element.children, allowDynamic: true))
        case "choose":
            try checkAttributes(element, [])
            return try parseChoose(element)
        case "foreach":
            return try parseForeach(element)
        case "where", "set":
            try checkAttributes(element, ["onVoid"])
            let onVoid = try parseOnVoid(element)
            let body = try parseNodes(element.children, allowDynamic: true)
            return .trim(element.name == "where"
                ? .where(onVoid: onVoid, body: body, line: line)
                : .set(onVoid: onVoid, body: body, line: line))
        case "trim":
            try checkAttributes(element, ["prefix", "prefixOverrides", "suffix", "suffixOverrides", "onVoid"])
            let onVoid = try parseOnVoid(element)
            let body = try parseNodes(element.children, allowDynamic: true)
            return .trim(TrimNode(
                prefix: (element.attribute("prefix") ?? "").trimmingCharacters(in: .whitespaces),
                prefixOverrides: overrides(element.attribute("prefixOverrides")),
                suffix: (element.attribute("suffix") ?? "").trimmingCharacters(in: .whitespaces),
                suffixOverrides: overrides(element.attribute("suffixOverrides")),
                onVoid: onVoid, body: body, line: line))
        case "step":
            throw failure(line, "a <step> must be a direct child of its method or upgrade, and cannot contain another step")
        case "try", "except":
            throw failure(line, "<\(element.name)> must be the whole body of a method")
        case "when", "otherwise":
            throw failure(line, "<\(element.name)> belongs inside <choose>")
        default:
            throw failure(line, "unknown element <\(element.name)> in SQL (expected if, choose, foreach, where, set or trim)")
        }
    }

    func overrides(_ text: String?) -> [String] {
        guard let text else { return [] }
        return text.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).uppercased() }.filter { !$0.isEmpty }
    }

    func parseOnVoid(_ element: XMLElement) throws(LoadError) -> OnVoid? {
        guard let text = element.attribute("onVoid") else { return nil }
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "quit": return .quit
        case "ignoreafter": return .ignoreAfter
        default: throw failure(element.line, "onVoid=\"\(text)\" must be quit or ignoreAfter")
        }
    }

    func parseCondition(_ element: XMLElement) throws(LoadError) -> Condition {
        let whenTrue = element.attribute("true")
        let whenFalse = element.attribute("false")
        let source: String
        let expected: Bool
        switch (whenTrue, whenFalse) {
        case (let text?, nil): (source, expected) = (text, true)
        case (nil, let text?): (source, expected) = (text, false)
        case (.some, .some):
            throw failure(element.line, "<\(element.name)> takes true=\"…\" or false=\"…\", not both")
        case (nil, nil):
            throw failure(element.line, "<\(element.name)> needs true=\"…\" or false=\"…\"")
        }
        let attribute = expected ? "true" : "false"
        do {
            let parsed = try Expression.parse(source)
            let scope = self.scope
            return Condition(expression: try parsed.bound { scope.slot(for: $0) }, expected: expected, line: element.line)
        } catch {
            var message = "<\(element.name) \(attribute)=\"\(excerpt(source))\">: \(error.message) (column \(error.column))"
            if error.message.hasPrefix("unknown name") { message += "; method '\(method)' \(scope.knownNames)" }
            throw failure(element.line, message)
        }
    }

    mutating func parseChoose(_ element: XMLElement) throws(LoadError) -> SQLNode {
        conditionalDepth += 1
        defer { conditionalDepth -= 1 }
        var whens: [(Condition, [SQLNode])] = []
        var otherwise: [SQLNode]?
        for child in element.children {
            switch child {
            case .comment: continue
            case .text(let text, let line):
                if !text.allSatisfy(\.isWhitespace) {
                    throw failure(firstContentLine(text, line), "<choose> holds only <when> and <otherwise>, not text: '\(excerpt(text))'")
                }
            case .element(let branch):
                switch branch.name {
                case "when":
                    if otherwise != nil { throw failure(branch.line, "<when> cannot follow <otherwise>") }
                    try checkAttributes(branch, ["true", "false"])
                    let condition = try parseCondition(branch)
                    whens.append((condition, try parseNodes(branch.children, allowDynamic: true)))
                case "otherwise":
                    if otherwise != nil { throw failure(branch.line, "<choose> takes at most one <otherwise>") }
                    try checkAttributes(branch, [])
                    otherwise = try parseNodes(branch.children, allowDynamic: true)
                default:
                    throw failure(branch.line, "<choose> holds only <when> and <otherwise>, not <\(branch.name)>")
                }
            }
        }
        if whens.isEmpty { throw failure(element.line, "<choose> needs at least one <when>") }
        return .choose(whens, otherwise: otherwise)
    }

    mutating func parseForeach(_ element: XMLElement) throws(LoadError) -> SQLNode {
        try checkAttributes(element, ["item", "collection", "open", "separator", "close", "reverse"])
        let line = element.line
        guard let item = element.attribute("item")?.trimmingCharacters(in: .whitespaces), isIdentifier(item) else {
            throw failure(line, "<foreach> needs item=\"name\", an identifier")
        }
        if reservedNames.contains(item.lowercased()) {
            throw failure(line, "the foreach item cannot be named '\(item)', a keyword of expressions")
        }
        if item == Module.userIDGlobal {
            throw failure(line, "the foreach item cannot be named '\(item)': it is the built-in global with the caller's user id")
        }
        if scope.isDeclared(item) {
            throw failure(line, "the foreach item '\(item)' shadows an argument or an enclosing item of the same name")
        }
        guard let collectionText = element.attribute("collection") else {
            throw failure(line, "<foreach> needs collection=\"name\"")
        }
        let collection = try path(collectionText.trimmingCharacters(in: .whitespaces), line: line,
                                  what: "collection=\"\(collectionText)\"")
        var reverse = false
        if let text = element.attribute("reverse") {
            guard let flag = parseFlag(text) else { throw failure(line, "reverse=\"\(text)\" must be yes, no, true or false") }
            reverse = flag
        }
        var elementClass: String?
        if collection.members.isEmpty, let argument = scope.arguments.first(where: { $0.name == collection.root }),
           let type = argument.type {
            elementClass = DAODialect.elementClass(type)
        }
        if conditionalDepth == 0, collection.members.isEmpty, scope.arguments.contains(where: { $0.name == collection.root }) {
            unguardedCollections.insert(collection.root)
        }
        let slot = scope.push(item: item, elementClass: elementClass)
        defer { scope.pop() }
        let body = try parseNodes(element.children, allowDynamic: true)
        return .foreach(ForeachNode(
            collection: collection, item: item, itemSlot: slot,
            open: element.attribute("open") ?? "", separator: element.attribute("separator") ?? "",
            close: element.attribute("close") ?? "", reverse: reverse, body: body, line: line))
    }

    /// `name.property.property`, resolved in the current scope.
    func path(_ text: String, line: Int, what: String) throws(LoadError) -> ValuePath {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let root = parts.first, parts.allSatisfy({ isIdentifier($0) }) else {
            throw failure(line, "\(what): '\(excerpt(text))' is not a name or a chain of names (a.b.c)")
        }
        guard parts.count - 1 <= ModuleLimits.chainLength else {
            throw failure(line, "\(excerpt(what)) reads more than \(ModuleLimits.chainLength) properties in a chain")
        }
        guard let slot = scope.slot(for: root) else {
            throw failure(line, "\(what): '\(root)' is not an argument of method '\(method)' (\(scope.knownNames))")
        }
        return ValuePath(root: root, slot: slot, members: Array(parts.dropFirst()))
    }

}

/// The line of the first character of `text` that is not white space, when
/// `text` starts on `line`.
func firstContentLine(_ text: String, _ line: Int) -> Int {
    line + text.prefix { $0.isWhitespace }.filter { $0 == "\n" }.count
}

/// `text` folded to one line and cut short, for messages.
func excerpt(_ text: String) -> String {
    let folded = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    return folded.count > 40 ? String(folded.prefix(40)) + "…" : folded
}
