import ASCIIBytes
import DAOValue

/// A bound parameter that must be encrypted before it is written: the
/// reference's `crypt`.
public struct EncryptedBinding: Sendable, Equatable {
    /// Its position in `bindings`.
    public var index: Int
    /// The `crypt` property it writes.
    public var property: String

    public init(index: Int, property: String) {
        self.index = index
        self.property = property
    }
}

/// One SQL statement ready to run: text and bound values.
public struct RenderedStatement: Sendable {
    public var sql: String
    public var bindings: [Value]
    public var encrypted: [EncryptedBinding]
    /// The reference's `resumable`: a failure does not fail the method.
    public var resumable: Bool
    /// Where the statement is in the module file.
    public var line: Int
    /// Whether caller values were inlined into the SQL text (`@{}`).
    public var inlinesValues: Bool = false
    /// Whether the SQL text depends on the call (dynamic tags or `@{}`).
    public var dependsOnCall: Bool = false
}

/// One run of a method body: its statements, and for `<try>` the statements
/// of `<except>`, which run only if these fail.
public struct RenderedRun: Sendable {
    public var statements: [RenderedStatement]
    public var except: [RenderedStatement]?
    /// Statements that `onVoid="quit"` skipped.
    public var quitCount: Int
}

extension Method {
    /// Renders every run of a call: one per element of the method-level
    /// `foreach`, or one. Nothing runs when this throws.
    public func render(frame: Frame, table: String?) throws(RenderError) -> [RenderedRun] {
        var frame = frame
        guard let elements = try foreachElements(in: frame) else { return [try renderRun(frame: &frame, table: table)] }
        var runs: [RenderedRun] = []
        runs.reserveCapacity(elements.count)
        for element in elements {
            frame.locals[foreach!.itemSlot] = element
            runs.append(try renderRun(frame: &frame, table: table))
        }
        return runs
    }

    /// The elements of the method-level `foreach`, or nil when there is none.
    public func foreachElements(in frame: Frame) throws(RenderError) -> [Value]? {
        guard let foreach else { return nil }
        let argument = arguments[foreach.collection]
        switch frame.locals[foreach.collection] {
        case .array(let elements): return elements
        case .null:
            throw RenderError(code: .missingArgument, method: qualifiedName,
                              message: "the foreach collection '\(argument.name)' is null or missing; pass an array", argument: argument.name)
        case let other:
            throw RenderError(code: .wrongType, method: qualifiedName,
                              message: "the foreach collection '\(argument.name)' must be an array, not \(other.kindPhrase)",
                              argument: argument.name)
        }
    }

    /// Renders the body once, with the frame as it is (the `foreach` item set).
    public func renderRun(frame: inout Frame, table: String?) throws(RenderError) -> RenderedRun {
        switch body {
        case .statements(let statements):
            return try Self.render(statements, frame: &frame, table: table, method: qualifiedName, except: nil)
        case .tryExcept(let tried, let excepted):
            return try Self.render(tried, frame: &frame, table: table, method: qualifiedName, except: excepted)
        }
    }

    static func render(_ statements: [SQLStatement], frame: inout Frame, table: String?, method: String,
                       except: [SQLStatement]?) throws(RenderError) -> RenderedRun {
        var run = RenderedRun(statements: [], except: nil, quitCount: 0)
        run.statements.reserveCapacity(statements.count)
        for statement in statements {
            switch try statement.render(frame: &frame, table: table, method: method) {
            case .run(let rendered): run.statements.append(rendered)
            case .quit: run.quitCount += 1
            case .nothing: break
            }
        }
        if let except {
            let excepted = try render(except, frame: &frame, table: table, method: method, except: nil)
            run.except = excepted.statements
            run.quitCount += excepted.quitCount
        }
        return run
    }
}

extension Upgrade {
    /// The upgrade's statements for `table`.
    public func render(table: String, globals: [String: Value] = [:]) throws(RenderError) -> [RenderedStatement] {
        var frame = Frame(locals: [], globals: globals)
        return try Method.render(statements, frame: &frame, table: table, method: "upgrade to \(toVersion)", except: nil).statements
    }
}

extension SQLStatement {
    /// What a statement comes to for one frame.
    public enum Rendering: Sendable {
        case run(RenderedStatement)
        /// `onVoid="quit"` skipped it.
        case quit
        /// Its dynamic tags left no SQL (an `<if>` around all of it, say).
        case nothing
    }

    /// The statement for this frame.
    public func render(frame: inout Frame, table: String?, method: String) throws(RenderError) -> Rendering {
        switch template.form {
        case .fixed(let fixed):
            // A statement that binds each of the frame's slots once, in order, binds the frame's array itself:
            // the arguments' array, as the call's JSON made it, is the bindings' (no array made per call).
            if bindsEverySlotInOrder(fixed.bindings, frame) {
                return .run(RenderedStatement(sql: fixed.sql, bindings: frame.locals, encrypted: fixed.encrypted,
                                              resumable: resumable, line: line))
            }
            var bindings: [Value] = []
            bindings.reserveCapacity(fixed.bindings.count)
            for reference in fixed.bindings {
                bindings.append(try bindingValue(reference, frame: frame, method: method))
            }
            return .run(RenderedStatement(sql: fixed.sql, bindings: bindings, encrypted: fixed.encrypted, resumable: resumable, line: line))
        case .dynamic(let nodes):
            var context = RenderContext(frame: frame, table: table, method: method)
            try context.render(nodes)
            if context.quit { return .quit }
            let sql = context.buffer.finish()
            if sql.isEmpty { return .nothing }
            return .run(RenderedStatement(sql: sql, bindings: context.bindings, encrypted: context.encrypted,
                                          resumable: resumable, line: line, inlinesValues: context.inlined, dependsOnCall: true))
        }
    }
}

/// Whether `references` are `#{a}`, `#{b}`, … for the frame's slots in order, each once, read as they are (no
/// member, no `or ""`): then the frame's slots are the statement's bindings.
@inline(__always)
private func bindsEverySlotInOrder(_ references: [BindReference], _ frame: Frame) -> Bool {
    guard references.count == frame.locals.count else { return false }
    for index in references.indices {
        guard case .local(index) = references[index].path.slot, references[index].path.members.isEmpty,
              !references[index].orEmpty else { return false }
    }
    return true
}

@inline(__always)
func bindingValue(_ reference: BindReference, frame: Frame, method: String) throws(RenderError) -> Value {
    let value: Value
    do { value = try reference.path.resolve(in: frame) } catch {
        throw RenderError(code: .wrongType, method: method, message: "#{\(reference.path)}: \(error.message)",
                          argument: reference.path.description)
    }
    if reference.orEmpty, value.isNull { return .string("") }
    return value
}

/// The state of rendering one dynamic statement.
struct RenderContext {
    var buffer = SQLBuffer()
    var bindings: [Value] = []
    var encrypted: [EncryptedBinding] = []
    var frame: Frame
    let table: String?
    let method: String
    /// `onVoid="ignoreAfter"` fired: render nothing more, run what there is.
    var stopped = false
    /// `onVoid="quit"` fired: skip the statement.
    var quit = false
    /// An `@{}` wrote a caller's value into the text.
    var inlined = false
    /// When describing a method: the source of each binding, in order.
    var sources: [BindingSource]?
    /// When describing a method: what each `foreach` item slot holds.
    var itemSources: [Int: BindingSource] = [:]
    /// Where the run of raw `@{x no ""}` text that ends the buffer starts, so
    /// adjacent raw values are checked together.
    var rawRunStart: Int?
    var rawRunEnd = -1

    init(frame: Frame, table: String?, method: String) {
        self.frame = frame
        self.table = table
        self.method = method
    }

    func failure(_ code: RenderError.Code, _ message: String, argument: String? = nil) -> RenderError {
        RenderError(code: code, method: method, message: message, argument: argument)
    }

    mutating func render(_ nodes: [SQLNode]) throws(RenderError) {
        for node in nodes {
            if stopped || quit { return }
            switch node {
            case .text(let text):
                buffer.append(text: text)
            case .bind(let reference):
                let value = try bindingValue(reference, frame: frame, method: method)
                if let property = reference.encryptedProperty {
                    encrypted.append(EncryptedBinding(index: bindings.count, property: property))
                }
                bindings.append(value)
                buffer.appendPlaceholder()
                if sources != nil { sources!.append(source(of: reference.path)) }
            case .inline(let reference):
                try inline(reference)
            case .table:
                guard let table else { throw failure(.invalidTable, "this template module needs a table name for each call") }
                buffer.append(raw: table.utf8)
            case .if(let condition, let body):
                if try holds(condition) { try render(body) }
            case .choose(let whens, let otherwise):
                var chosen: [SQLNode]? = otherwise
                for (condition, body) in whens where try holds(condition) {
                    chosen = body
                    break
                }
                if let chosen { try render(chosen) }
            case .foreach(let foreach):
                try render(foreach)
            case .trim(let trim):
                try render(trim)
            }
        }
    }

    func holds(_ condition: Condition) throws(RenderError) -> Bool {
        do {
            return try condition.expression.holds(in: frame) == condition.expected
        } catch {
            throw failure(.wrongType, "\(condition.expected ? "true" : "false")=\"\(condition.expression.source)\": \(error.message)",
                          argument: error.name)
        }
    }

    mutating func inline(_ reference: InlineReference) throws(RenderError) {
        inlined = true
        let value: Value
        do { value = try reference.path.resolve(in: frame) } catch {
            throw failure(.wrongType, "@{\(reference.path)}: \(error.message)", argument: reference.path.description)
        }
        switch Inline.format(value, mode: reference.mode, orEmpty: reference.orEmpty, after: buffer.bytes.last) {
        case .failure(let refusal):
            throw failure(.unsafeInline, "@{\(reference.path)}: \(refusal.message)", argument: reference.path.description)
        case .success(let text):
            guard reference.mode == .raw else {
                buffer.append(raw: text)
                return
            }
            let start = rawRunStart.flatMap { rawRunEnd == buffer.count ? $0 : nil } ?? buffer.count
            buffer.append(raw: text)
            if start < buffer.count - text.count, let problem = Inline.rawTextProblem(Array(buffer.bytes[start...])) {
                throw failure(.unsafeInline, "@{\(reference.path)} joins the raw text before it: \(problem)",
                              argument: reference.path.description)
            }
            rawRunStart = start
            rawRunEnd = buffer.count
        }
    }

    mutating func render(_ foreach: ForeachNode) throws(RenderError) {
        let elements: [Value]
        let collection: Value
        do { collection = try foreach.collection.resolve(in: frame) } catch {
            throw failure(.wrongType, "foreach collection \(foreach.collection): \(error.message)",
                          argument: foreach.collection.description)
        }
        switch collection {
        case .array(let array): elements = foreach.reverse ? array.reversed() : array
        case .null:
            throw failure(.missingArgument, "the foreach collection '\(foreach.collection)' is null or missing; pass an array",
                          argument: foreach.collection.description)
        default:
            throw failure(.wrongType, "the foreach collection '\(foreach.collection)' must be an array, not \(collection.kindPhrase)",
                          argument: foreach.collection.description)
        }
        guard !elements.isEmpty else { return }
        buffer.append(markup: foreach.open)
        let outerItemStart = buffer.itemStart
        defer { buffer.itemStart = outerItemStart }
        for (index, element) in elements.enumerated() {
            if stopped || quit { break }
            if index > 0 { buffer.append(markup: foreach.separator) }
            frame.locals[foreach.itemSlot] = element
            if sources != nil {
                var collection = source(of: foreach.collection)
                collection.steps.append(.element)
                itemSources[foreach.itemSlot] = collection
            }
            let start = buffer.count
            buffer.itemStart = start
            try render(foreach.body)
            buffer.itemStart = outerItemStart
            buffer.trimTrailingSpaces(after: start)
        }
        buffer.append(markup: foreach.close)
    }

    mutating func render(_ trim: TrimNode) throws(RenderError) {
        let start = buffer.count
        try render(trim.body)
        if quit { return }
        buffer.trimTrailingSpaces(after: start)
        var body = Array(buffer.bytes[start...])
        buffer.bytes.removeSubrange(start...)
        rawRunStart = nil
        while body.first == UInt8(ascii: " ") { body.removeFirst() }
        removePrefix(trim.prefixOverrides, from: &body)
        removeSuffix(trim.suffixOverrides, from: &body)
        guard !body.isEmpty else {
            switch trim.onVoid {
            case .quit?: quit = true
            case .ignoreAfter?: stopped = true
            case nil: break
            }
            return
        }
        buffer.appendSeparator()
        if !trim.prefix.isEmpty {
            buffer.append(markup: trim.prefix)
            buffer.append(raw: [UInt8(ascii: " ")])
        }
        buffer.append(raw: body)
        if !trim.suffix.isEmpty {
            buffer.append(raw: [UInt8(ascii: " ")])
            buffer.append(markup: trim.suffix)
        }
        buffer.append(raw: [UInt8(ascii: " ")])
    }

    /// Strips the first override that starts `body` (any case); an override
    /// ending in a letter must be followed by a space or the end, so `AND`
    /// does not strip the start of `ANDROID = 1`.
    func removePrefix(_ overrides: [String], from body: inout [UInt8]) {
        for token in overrides {
            let token = Array(token.utf8)
            guard body.count >= token.count, zip(body, token).allSatisfy({ asciiUpper($0) == $1 }) else { continue }
            if let last = token.last, isIdentifierByte(last), body.count > token.count, body[token.count] != UInt8(ascii: " ") {
                continue
            }
            body.removeFirst(token.count)
            while body.first == UInt8(ascii: " ") { body.removeFirst() }
            return
        }
    }

    func removeSuffix(_ overrides: [String], from body: inout [UInt8]) {
        for token in overrides {
            let token = Array(token.utf8)
            guard body.count >= token.count,
                  zip(body.suffix(token.count), token).allSatisfy({ asciiUpper($0) == $1 }) else { continue }
            if let first = token.first, isIdentifierByte(first), body.count > token.count,
               body[body.count - token.count - 1] != UInt8(ascii: " ") {
                continue
            }
            body.removeLast(token.count)
            while body.last == UInt8(ascii: " ") { body.removeLast() }
            return
        }
    }
}

@inline(__always) private func asciiUpper(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") ? byte - 32 : byte
}
