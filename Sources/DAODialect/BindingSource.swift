import DAOValue

/// Where a bound value comes from, for tools that describe a method (the
/// OpenAPI description infers argument types from the columns values go to).
///
/// `foreach` items are traced back to their collections: in
/// `<foreach item="id" collection="idList">#{id}</foreach>` the source is
/// `idList[]`, and with `foreach="messages.model"`, `#{model.content}` is
/// `messages[].content`.
public struct BindingSource: Sendable, Hashable, CustomStringConvertible {
    public enum Step: Sendable, Hashable {
        case member(String)
        /// An element of an array.
        case element
    }

    /// The argument (or global argument) the value starts from.
    public var argument: String
    public var steps: [Step]

    public init(argument: String, steps: [Step] = []) {
        self.argument = argument
        self.steps = steps
    }

    public var description: String {
        steps.reduce(argument) { text, step in
            switch step {
            case .member(let name): text + "." + name
            case .element: text + "[]"
            }
        }
    }
}

extension SQLStatement {
    /// The statement's SQL for `frame`, with the source of each `?` in order;
    /// nil when `onVoid="quit"` skips it or it comes to no SQL.
    public func renderWithSources(frame: Frame, table: String?, method: Method) throws(RenderError)
        -> (sql: String, sources: [BindingSource])? {
        var context = RenderContext(frame: frame, table: table, method: method.qualifiedName)
        context.sources = []
        if let foreach = method.foreach {
            context.itemSources[foreach.itemSlot] = BindingSource(argument: method.arguments[foreach.collection].name, steps: [.element])
        }
        switch template.form {
        case .fixed(let fixed):
            return (fixed.sql, fixed.bindings.map { context.source(of: $0.path) })
        case .dynamic(let nodes):
            try context.render(nodes)
            let sql = context.buffer.finish()
            if context.quit || sql.isEmpty { return nil }
            return (sql, context.sources ?? [])
        }
    }
}

extension RenderContext {
    /// The source of a path, items traced back to their collections.
    func source(of path: ValuePath) -> BindingSource {
        let members = path.members.map(BindingSource.Step.member)
        if case .local(let slot) = path.slot, let item = itemSources[slot] {
            return BindingSource(argument: item.argument, steps: item.steps + members)
        }
        return BindingSource(argument: path.root, steps: members)
    }
}

/// A statement as some call may render it, whatever the arguments' values:
/// what `SQLStatement.outlines(table:method:)` gives.
public struct StatementOutline: Sendable {
    /// The SQL, meant to be read, not run: branches that exclude one
    /// another may all be in it.
    public var sql: String
    /// The source of each `?`, in order.
    public var sources: [BindingSource]
    /// The `?`s encrypted before they are bound (`crypt`), by position in `sources`.
    public var encrypted: [EncryptedBinding]
    /// The elements of each inner `<foreach>`, traced as `sources` are (`idList[]`).
    public var elements: [BindingSource]
}

extension SQLStatement {
    /// The statement with every `<if>` taken as holding and each `<foreach>`
    /// written once, one outline per way through its `<choose>`s: the n-th
    /// takes the n-th `<when>` of each, its `<otherwise>` past the last.
    ///
    /// No condition is evaluated and no value is needed (every value is nil,
    /// so `@{}` writes `NULL`): every `#{}` the statement holds is in some
    /// outline, with the SQL around it.
    public func outlines(table: String?, method: Method) -> [StatementOutline] {
        var context = RenderContext(frame: Frame(locals: Array(repeating: .null, count: method.localCount)),
                                    table: table, method: method.qualifiedName)
        context.sources = []
        if let foreach = method.foreach {
            context.itemSources[foreach.itemSlot] = BindingSource(argument: method.arguments[foreach.collection].name, steps: [.element])
        }
        switch template.form {
        case .fixed(let fixed):
            return [StatementOutline(sql: fixed.sql, sources: fixed.bindings.map { context.source(of: $0.path) },
                                     encrypted: fixed.encrypted, elements: [])]
        case .dynamic(let nodes):
            var elements: [BindingSource] = []
            context.traceItems(of: nodes, into: &elements)
            return (0..<max(1, Self.wayCount(nodes))).compactMap { way in
                var outline = context
                guard (try? outline.render(Self.outline(nodes, way: way))) != nil, !outline.quit else { return nil }
                let sql = outline.buffer.finish()
                guard !sql.isEmpty else { return nil }
                return StatementOutline(sql: sql, sources: outline.sources ?? [], encrypted: outline.encrypted, elements: elements)
            }
        }
    }

    /// The most ways any `<choose>` of `nodes` offers.
    private static func wayCount(_ nodes: [SQLNode]) -> Int {
        nodes.reduce(0) { count, node in
            switch node {
            case .text, .bind, .inline, .table: count
            case .if(_, let body): max(count, wayCount(body))
            case .choose(let whens, let otherwise):
                max(count, whens.count + (otherwise == nil ? 0 : 1), (whens.map(\.1) + [otherwise ?? []]).map(wayCount).max() ?? 0)
            case .foreach(let foreach): max(count, wayCount(foreach.body))
            case .trim(let trim): max(count, wayCount(trim.body))
            }
        }
    }

    /// `nodes` without conditions: `<if>`s hold, `<choose>`s take their
    /// `way`-th branch, `<foreach>` bodies are written once between their
    /// `open` and `close`.
    private static func outline(_ nodes: [SQLNode], way: Int) -> [SQLNode] {
        nodes.flatMap { node -> [SQLNode] in
            switch node {
            case .text, .bind, .inline, .table:
                return [node]
            case .if(_, let body):
                return outline(body, way: way)
            case .choose(let whens, let otherwise):
                return outline(way < whens.count ? whens[way].1 : otherwise ?? [], way: way)
            case .foreach(let foreach):
                return [.text(Array(foreach.open.utf8))] + outline(foreach.body, way: way) + [.text(Array(foreach.close.utf8))]
            case .trim(var trim):
                trim.body = outline(trim.body, way: way)
                return [.trim(trim)]
            }
        }
    }
}

extension RenderContext {
    /// Sets the source of every `<foreach>` item in `nodes`, outer ones first,
    /// and collects them.
    mutating func traceItems(of nodes: [SQLNode], into elements: inout [BindingSource]) {
        for node in nodes {
            switch node {
            case .text, .bind, .inline, .table:
                break
            case .if(_, let body):
                traceItems(of: body, into: &elements)
            case .choose(let whens, let otherwise):
                for body in whens.map(\.1) + [otherwise ?? []] { traceItems(of: body, into: &elements) }
            case .foreach(let foreach):
                var element = source(of: foreach.collection)
                element.steps.append(.element)
                itemSources[foreach.itemSlot] = element
                elements.append(element)
                traceItems(of: foreach.body, into: &elements)
            case .trim(let trim):
                traceItems(of: trim.body, into: &elements)
            }
        }
    }
}
