import DAODialect
import DAOValue

/// Checks modules against SQLite itself, so a typo in SQL is found before
/// deployment rather than by the first caller.
///
/// Every module's initializer runs in one in-memory database (so modules may
/// read each other's tables), then its upgrades in order; then every
/// statement a method can render — with sample arguments of several kinds,
/// since dynamic tags render differently — is prepared. SQLite's errors are
/// reported at the statement's `file:line`. A statement that inlines the
/// caller's values (`@{}`) is still prepared, but its errors are not
/// reported: its text depends on what the caller sends, not on the module.
public enum SQLCheck {
    /// The table of a template module while it is checked (of the first one,
    /// when there are several: the others get `daogate_check_2`, …).
    public static let templateTable = "daogate_check"

    public static func check(_ modules: [Module]) -> [LoadError] {
        var problems = Problems()
        let sandbox: Sandbox
        do {
            sandbox = try Sandbox(modules) { module, statement, error in
                problems.add(LoadError(file: module.file, line: statement.line, message: "SQLite: \(error.message)"))
            }
        } catch {
            return [LoadError(file: "<memory>", line: 0, message: "cannot open an in-memory database: \(error.message)")]
        }
        defer { sandbox.database.close() }
        for (module, table) in zip(modules, sandbox.tables) {
            for method in module.methods where method.name != module.initializer {
                for statement in renderings(of: method, table: table).flatMap(\.self) {
                    prepare(statement, method: method, module: module, on: sandbox.database, into: &problems)
                }
            }
        }
        return problems.errors.sorted { ($0.file, $0.line) < ($1.file, $1.line) }
    }

    /// Problems, each reported once.
    struct Problems {
        var errors: [LoadError] = []
        mutating func add(_ error: LoadError) {
            if !errors.contains(error) { errors.append(error) }
        }
    }

    /// One in-memory database holding every module's tables as its
    /// initializer and upgrades leave them: where statements are asked about.
    struct Sandbox {
        let database: Database
        /// The table `${T}` stands for in each module, in the modules' order.
        let tables: [String]

        /// Runs every module's initializer, then every module's upgrades in
        /// order; `failed` hears of each statement SQLite refused (a failing
        /// resumable step, and an upgrade repeating a change the initializer
        /// already made, are not failures).
        init(_ modules: [Module], failed: (Module, RenderedStatement, SQLiteError) -> Void = { _, _, _ in }) throws(SQLiteError) {
            database = try Database(path: ":memory:", readOnly: false, configuration: DatabaseConfiguration())
            var templates = 0
            tables = modules.map { module in
                if let table = module.tableName { return table }
                templates += 1
                return templates == 1 ? templateTable : "\(templateTable)_\(templates)"
            }
            for (module, table) in zip(modules, tables) {
                guard let name = module.initializer, let initializer = module.method(named: name) else { continue }
                for statement in renderings(of: initializer, table: table).flatMap(\.self) {
                    execute(statement, module: module, tolerateExisting: false, failed: failed)
                }
            }
            for (module, table) in zip(modules, tables) {
                for upgrade in module.upgrades {
                    guard let statements = try? upgrade.render(table: table) else { continue }
                    for statement in statements {
                        execute(statement, module: module, tolerateExisting: true, failed: failed)
                    }
                }
            }
        }

        private func execute(_ statement: RenderedStatement, module: Module, tolerateExisting: Bool,
                             failed: (Module, RenderedStatement, SQLiteError) -> Void) {
            do {
                let prepared = try database.makeStatement(statement.sql)
                try prepared.bind(statement.bindings)
                try prepared.run()
            } catch {
                if statement.resumable { return }
                if tolerateExisting && (error.message.contains("duplicate column") || error.message.contains("already exists")) { return }
                failed(module, statement, error)
            }
        }
    }

    private static func prepare(_ statement: RenderedStatement, method: Method, module: Module, on db: Database,
                                into problems: inout Problems) {
        do {
            let prepared = try db.makeStatement(statement.sql)
            if method.kind == .select && !prepared.isReadOnly {
                problems.add(LoadError(file: module.file, line: statement.line,
                                       message: "select '\(method.name)' must only read: its statement writes"))
            }
        } catch {
            if statement.inlinesValues { return }
            problems.add(LoadError(file: module.file, line: statement.line, message: "SQLite: \(error.message)"))
        }
    }

    /// The statements of every sample call of `method` that renders.
    static func renderings(of method: Method, table: String) -> [[RenderedStatement]] {
        sampleRuns(of: method, table: table).map { runs in runs.flatMap { $0.statements + ($0.except ?? []) } }
    }

    /// The runs of every sample call of `method` that renders.
    static func sampleRuns(of method: Method, table: String) -> [[RenderedRun]] {
        sampleFrames(of: method).compactMap { try? method.render(frame: $0, table: table) }
    }

    /// The frames of sample calls of `method`, with arguments of several
    /// kinds (an integer, a string, nil, an array of an object; a declared
    /// type's sample), since dynamic tags render differently; those the
    /// method refuses are left out.
    static func sampleFrames(of method: Method) -> [Frame] {
        sampleArguments(of: method).compactMap { try? method.frame(arguments: .array($0)) }
    }

    /// The arguments, by position, of the sample calls `sampleFrames` makes.
    static func sampleArguments(of method: Method) -> [[Value]] {
        [Value.integer(1), .string("a"), .null, .array([.object([:])])].map { untyped in
            method.arguments.enumerated().map { index, argument in
                if method.foreach?.collection == index {
                    .array([argument.type.map(elementSample) ?? .object([:])])
                } else if let type = argument.type {
                    sample(type)
                } else {
                    untyped.isNull && argument.required ? .integer(1) : untyped
                }
            }
        }
    }

    private static func sample(_ type: ArgumentType) -> Value {
        switch type {
        case .scalar(.int), .scalar(.longLong): .integer(1)
        case .scalar(.bool): .bool(true)
        case .scalar(.double): .double(1.5)
        case .scalar(.string): .string("a")
        case .scalar(.binary): .blob([0])
        case .object: .object([:])
        case .array(let element): .array([sample(element)])
        case .any: .integer(1)
        }
    }

    private static func elementSample(_ type: ArgumentType) -> Value {
        if case .array(let element) = type { return sample(element) }
        return .object([:])
    }
}
