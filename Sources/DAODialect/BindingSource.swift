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
        case .fixed(let sql, let references, _):
            return (sql, references.map { context.source(of: $0.path, method: method) })
        case .dynamic(let nodes):
            context.describedMethod = method
            try context.render(nodes)
            let sql = context.buffer.finish()
            if context.quit || sql.isEmpty { return nil }
            return (sql, context.sources ?? [])
        }
    }
}

extension RenderContext {
    /// The source of a path, items traced back to their collections.
    func source(of path: ValuePath, method: Method) -> BindingSource {
        let members = path.members.map(BindingSource.Step.member)
        if case .local(let slot) = path.slot, let item = itemSources[slot] {
            return BindingSource(argument: item.argument, steps: item.steps + members)
        }
        return BindingSource(argument: path.root, steps: members)
    }
}
