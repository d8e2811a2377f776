import SQLiteDatabase
import DAODialect
import DAOValue

/// Infers the JSON shapes methods take and give, for the OpenAPI description.
///
/// An argument's declared type wins; otherwise its shape comes from the
/// columns its values meet in the method's SQL (`SQLColumnMatcher`), typed by
/// the tables the modules' initializers and upgrades create, in one in-memory
/// database as `SQLCheck` builds it. Every `#{}` is found: each statement is
/// read with all its conditions holding (`SQLStatement.outlines`) and as
/// sample calls render it. Uses that disagree, and values that meet no
/// column, are `.any`.
///
/// A select's result columns come from SQLite: the statement is prepared
/// and its columns' declared types read.
public enum MethodDescriber {
    /// Every method of every module: module name → method name → description.
    public static func describe(_ modules: [Module]) -> [String: [String: MethodDescription]] {
        let sandbox = try? SQLCheck.Sandbox(modules)
        defer { sandbox?.database.close() }
        let catalog = sandbox.map { ColumnCatalog($0.database) } ?? ColumnCatalog()
        let tables = sandbox?.tables ?? modules.map { $0.tableName ?? SQLCheck.templateTable }
        let uses = zip(modules, tables).map { module, table in
            module.methods.map { BindingUses(of: $0, table: table, catalog: catalog) }
        }
        let encryptedColumns = uses.joined().reduce(into: Set<String>()) { $0.formUnion($1.encryptedColumns) }
        var descriptions: [String: [String: MethodDescription]] = [:]
        for (index, module) in modules.enumerated() {
            let written = uses[index].reduce(into: [String: InferredShape]()) { written, uses in
                written.merge(uses.encryptedWrites) { $0.joined(with: $1) }
            }
            var methods: [String: MethodDescription] = [:]
            for (method, uses) in zip(module.methods, uses[index]) {
                let arguments = method.arguments.enumerated().map { index, argument in
                    // The engine takes nothing but an array for a foreach collection, whatever `json` allows.
                    let declared = method.foreach?.collection == index && argument.type == .any ? nil : argument.type
                    return ArgumentShape(name: argument.name,
                                         shape: (uses.arguments[argument.name] ?? .unknown).resolved(declared: declared))
                }
                let columns = sandbox.flatMap {
                    resultColumns(of: method, in: module, table: tables[index], database: $0.database,
                                  encryptedWrites: written, encryptedColumns: encryptedColumns)
                }
                let nonEmpty = sandbox.map { nonEmptyCollections(of: method, table: tables[index], database: $0.database) } ?? []
                methods[method.name] = MethodDescription(arguments: arguments, resultColumns: columns, nonEmptyCollections: nonEmpty)
            }
            descriptions[module.name] = methods
        }
        return descriptions
    }

    /// The columns of a select's `{}`, `AType` or `:AMap` rows, nil for other
    /// results and writes, and when no rendering of its statement prepares.
    ///
    /// A class's `crypt` properties are decrypted values: the shape of what
    /// the module's writes encrypt into them (`encryptedWrites`, by
    /// property), else `.any`. Any other column of a name that some write
    /// encrypts into (`encryptedColumns`, lower-cased) may hold ciphertexts: `.any`.
    static func resultColumns(of method: Method, in module: Module, table: String, database: Database,
                              encryptedWrites: [String: InferredShape], encryptedColumns: Set<String>) -> [JSONShape.Property]? {
        guard method.kind == .select else { return nil }
        var row = method.result ?? .array(.row)
        if case .array(let element) = row { row = element }
        let className: String?
        var rename: [String: String] = [:]
        switch row {
        case .row: className = nil
        case .object(let name): className = name
        case .mapped(let mapID):
            guard let map = module.maps[mapID] else { return nil }
            className = map.className
            rename = map.propertyForColumn
        case .scalar, .array: return nil
        }
        let samples = SQLCheck.sampleRuns(of: method, table: table).flatMap { runs in
            runs.flatMap { [$0.statements.last, $0.except?.last].compactMap(\.self) }
        }
        let inlines = samples.contains(where: \.inlinesValues)
        var candidates = samples.map(\.sql)
        if samples.isEmpty || inlines {
            let (tried, excepted) = method.body.branches
            candidates += [tried.last, excepted.last].compactMap(\.self).flatMap { statement in
                statement.outlines(table: table, method: method).map(\.sql)
            }
        }
        candidates += rawTextRenderings(of: method, table: table)
        var seen: Set<String> = []
        let prepared = candidates.filter { seen.insert($0).inserted }.compactMap {
            preparedColumns($0, database: database, rename: rename, encryptedColumns: encryptedColumns)
        }
        // Inlined values may name columns: they must be seen not to, in two renderings at least.
        guard !prepared.isEmpty, !inlines || (prepared.count >= 2 && Set(prepared.map { $0.map(\.name) }).count == 1)
        else { return nil }
        var columns = merged(prepared)
        let encrypted = className.flatMap { module.encryptedProperties[$0] } ?? []
        for index in columns.indices where encrypted.contains(columns[index].name) {
            columns[index].shape = encryptedWrites[columns[index].name]?.resolved ?? .any
        }
        return columns
    }

    /// Renderings with raw-text arguments (`@{x no ""}`) that SQL takes in
    /// most places a name goes (`order by @{column no ""}`): each such argument
    /// `1`, then each `rowid`, the optional ones also left out. The sample
    /// calls' `a` is rarely a column, so without these a select that sorts by a
    /// caller's column has no rows described; two of them giving the same
    /// columns show that the raw text names none of them.
    static func rawTextRenderings(of method: Method, table: String) -> [String] {
        guard !method.rawTextArguments.isEmpty, let base = SQLCheck.sampleArguments(of: method).first else { return [] }
        var calls: [[Value]] = []
        for text in ["1", "rowid"] {
            for leaveOut in [false, true] {
                calls.append(method.arguments.enumerated().map { index, argument in
                    guard method.rawTextArguments.contains(argument.name) else { return base[index] }
                    return leaveOut && !argument.required ? .null : .string(text)
                })
            }
        }
        return calls.compactMap { arguments -> String? in
            guard let frame = try? method.frame(arguments: .array(arguments)),
                  let runs = try? method.render(frame: frame, table: table), let last = runs.last else { return nil }
            return last.statements.last?.sql
        }
    }

    /// The collections of `Method.requiredCollections` that an empty array
    /// breaks: in a sample call whose statements all prepare, the collection
    /// made empty leaves one that SQLite refuses (`where id in ()`). The
    /// method-level `foreach` is not one: without elements it runs nothing.
    static func nonEmptyCollections(of method: Method, table: String, database: Database) -> Set<String> {
        let candidates = method.arguments.indices.filter { index in
            method.requiredCollections.contains(method.arguments[index].name) && method.foreach?.collection != index
        }
        guard !candidates.isEmpty else { return [] }
        /// Whether every statement of the call prepares; nil when the call does not render.
        func prepares(_ arguments: [Value]) -> Bool? {
            guard let frame = try? method.frame(arguments: .array(arguments)),
                  let runs = try? method.render(frame: frame, table: table) else { return nil }
            return runs.allSatisfy { run in
                (run.statements + (run.except ?? [])).allSatisfy { (try? database.makeStatement($0.sql)) != nil }
            }
        }
        var nonEmpty: Set<String> = []
        for arguments in SQLCheck.sampleArguments(of: method) where prepares(arguments) == true {
            for index in candidates where !nonEmpty.contains(method.arguments[index].name) {
                var emptied = arguments
                emptied[index] = .array([])
                if prepares(emptied) == false { nonEmpty.insert(method.arguments[index].name) }
            }
        }
        return nonEmpty
    }

    /// The columns of a statement, named after `rename`; nil when it does not
    /// prepare. A name given twice has the last one's shape, as a row keeps the last value.
    private static func preparedColumns(_ sql: String, database: Database, rename: [String: String],
                                        encryptedColumns: Set<String>) -> [JSONShape.Property]? {
        guard let statement = try? database.makeStatement(sql) else { return nil }
        var columns: [JSONShape.Property] = []
        for index in 0..<statement.columnCount {
            let column = statement.columnName(index)
            let shape = encryptedColumns.contains(column.lowercased())
                ? JSONShape.any : JSONShape(resultDeclaredType: statement.columnDeclaredType(index))
            let property = JSONShape.Property(name: rename[column] ?? column, shape: shape)
            if let existing = columns.firstIndex(where: { $0.name == property.name }) {
                columns[existing].shape = property.shape
            } else {
                columns.append(property)
            }
        }
        return columns
    }

    /// Every column of any of the lists, its shapes joined.
    private static func merged(_ lists: [[JSONShape.Property]]) -> [JSONShape.Property] {
        var merged: [(name: String, shape: InferredShape)] = []
        for column in lists.joined() {
            if let existing = merged.firstIndex(where: { $0.name == column.name }) {
                merged[existing].shape = merged[existing].shape.joined(with: .known(column.shape))
            } else {
                merged.append((column.name, .known(column.shape)))
            }
        }
        return merged.map { JSONShape.Property(name: $0.name, shape: $0.shape.resolved) }
    }
}

/// What a method's SQL says about the values it binds.
struct BindingUses {
    /// Argument name → what its uses say.
    var arguments: [String: InferredShape] = [:]
    /// `crypt` property → the shapes of the columns the method encrypts it into.
    var encryptedWrites: [String: InferredShape] = [:]
    /// The columns the method encrypts values into, lower-cased.
    var encryptedColumns: Set<String> = []

    init(of method: Method, table: String, catalog: ColumnCatalog) {
        let names = Set(method.arguments.map(\.name))
        if let foreach = method.foreach {
            arguments[method.arguments[foreach.collection].name] = .array(.unknown)
        }
        for bound in Self.boundStatements(of: method, table: table) {
            let matcher = SQLColumnMatcher(sql: bound.sql)
            let targets = matcher.targets.count == bound.sources.count ? matcher.targets : []
            for (index, source) in bound.sources.enumerated() where names.contains(source.argument) {
                let target = index < targets.count ? targets[index] : nil
                let shape = Self.shape(of: target, catalog: catalog)
                arguments[source.argument, default: .unknown] = arguments[source.argument, default: .unknown]
                    .joined(shape, at: source.steps)
                if let property = bound.encrypted[index], let target, target.isWritten,
                   let column = Self.column(of: target, catalog: catalog) {
                    encryptedColumns.insert(column.lowercased())
                    encryptedWrites[property, default: .unknown] = encryptedWrites[property, default: .unknown].joined(with: shape)
                }
            }
            for element in bound.elements where names.contains(element.argument) {
                arguments[element.argument, default: .unknown] = arguments[element.argument, default: .unknown]
                    .joined(.unknown, at: element.steps)
            }
        }
    }

    /// The shape of the column a value meets; `.unknown` when it meets none.
    private static func shape(of target: SQLColumnMatcher.Target?, catalog: ColumnCatalog) -> InferredShape {
        switch target {
        case nil:
            return .unknown
        case .integer?:
            return .known(.integer(bits: 64))
        case .column(let reference)?:
            guard let type = catalog.declaredType(of: reference) else { return .unknown }
            let shape = JSONShape(declaredType: type)
            // `like` and `glob` compare text: only a text column tells more.
            return .known(reference.matchesPattern && shape != .string ? .any : shape)
        case .tableColumn(let table, let index, let count)?:
            guard let columns = catalog.columns(of: table), columns.count == count else { return .unknown }
            return .known(JSONShape(declaredType: columns[index].declaredType))
        }
    }

    /// The name of the column a value is written to.
    private static func column(of target: SQLColumnMatcher.Target, catalog: ColumnCatalog) -> String? {
        switch target {
        case .column(let reference): reference.name
        case .tableColumn(let table, let index, let count):
            catalog.columns(of: table).flatMap { $0.count == count ? $0[index].name : nil }
        case .integer: nil
        }
    }

    /// A statement's SQL with the source of each `?`.
    struct BoundStatement {
        var sql: String
        var sources: [BindingSource]
        /// Position in `sources` → the `crypt` property encrypted there.
        var encrypted: [Int: String]
        /// The elements of its inner `<foreach>`es.
        var elements: [BindingSource]
    }

    /// Every statement of the method (try and except branches, every step)
    /// with all its conditions holding, then as each sample call renders it
    /// unless the sample's values are in its text (`@{}`: a sample name
    /// could be taken for a column).
    static func boundStatements(of method: Method, table: String) -> [BoundStatement] {
        let (tried, excepted) = method.body.branches
        let frames = SQLCheck.sampleFrames(of: method).map { frame in
            var frame = frame
            if let foreach = method.foreach, let element = (try? method.foreachElements(in: frame))??.first {
                frame.locals[foreach.itemSlot] = element
            }
            return frame
        }
        return (tried + excepted).flatMap { statement -> [BoundStatement] in
            let outlines = statement.outlines(table: table, method: method).map { outline in
                BoundStatement(sql: outline.sql, sources: outline.sources, encrypted: outline.encrypted.byIndex,
                               elements: outline.elements)
            }
            let samples = frames.compactMap { frame -> BoundStatement? in
                var copy = frame
                guard case .run(let rendered)? = try? statement.render(frame: &copy, table: table, method: method.qualifiedName),
                      !rendered.inlinesValues,
                      let (sql, sources) = (try? statement.renderWithSources(frame: frame, table: table, method: method)) ?? nil,
                      sql == rendered.sql, sources.count == rendered.bindings.count
                else { return nil }
                return BoundStatement(sql: sql, sources: sources, encrypted: rendered.encrypted.byIndex, elements: [])
            }
            return outlines + samples
        }
    }
}

extension SQLColumnMatcher.Target {
    /// Whether the value is stored in the column.
    var isWritten: Bool {
        switch self {
        case .column(let reference): reference.written
        case .tableColumn: true
        case .integer: false
        }
    }
}

extension [EncryptedBinding] {
    var byIndex: [Int: String] {
        Dictionary(map { ($0.index, $0.property) }, uniquingKeysWith: { first, _ in first })
    }
}

extension Body {
    /// The statements of the try branch (or all of them) and of the except branch.
    var branches: (tried: [SQLStatement], excepted: [SQLStatement]) {
        switch self {
        case .statements(let statements): (statements, [])
        case .tryExcept(let tried, let excepted): (tried, excepted)
        }
    }
}
