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
    /// The table of a template module while it is checked.
    public static let templateTable = "daogate_check"

    public static func check(_ modules: [Module]) -> [LoadError] {
        let db: Database
        do {
            db = try Database(path: ":memory:", readOnly: false, configuration: DatabaseConfiguration())
        } catch {
            return [LoadError(file: "<memory>", line: 0, message: "cannot open an in-memory database: \(error.message)")]
        }
        defer { db.close() }
        var problems = Problems()
        for module in modules {
            let table = module.tableName ?? templateTable
            guard let name = module.initializer, let initializer = module.method(named: name) else { continue }
            for statement in renderings(of: initializer, table: table).flatMap(\.self) {
                execute(statement, module: module, on: db, into: &problems, tolerateExisting: false)
            }
        }
        for module in modules {
            let table = module.tableName ?? templateTable
            for upgrade in module.upgrades {
                guard let statements = try? upgrade.render(table: table) else { continue }
                for statement in statements {
                    execute(statement, module: module, on: db, into: &problems, tolerateExisting: true)
                }
            }
        }
        for module in modules {
            let table = module.tableName ?? templateTable
            for method in module.methods where method.name != module.initializer {
                for statement in renderings(of: method, table: table).flatMap(\.self) {
                    prepare(statement, method: method, module: module, on: db, into: &problems)
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

    private static func execute(_ statement: RenderedStatement, module: Module, on db: Database,
                                into problems: inout Problems, tolerateExisting: Bool) {
        do {
            let prepared = try db.makeStatement(statement.sql)
            try prepared.bind(statement.bindings)
            try prepared.run()
        } catch {
            // A resumable step may fail by design; an upgrade may repeat a
            // change the initializer already made to a fresh table.
            if statement.resumable { return }
            if tolerateExisting && (error.message.contains("duplicate column") || error.message.contains("already exists")) { return }
            problems.add(LoadError(file: module.file, line: statement.line, message: "SQLite: \(error.message)"))
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
        var renderings: [[RenderedStatement]] = []
        for untyped in [Value.integer(1), .string("a"), .null, .array([.object([:])])] {
            var locals: [Value] = []
            for (index, argument) in method.arguments.enumerated() {
                if method.foreach?.collection == index {
                    locals.append(.array([argument.type.map(elementSample) ?? .object([:])]))
                } else if let type = argument.type {
                    locals.append(sample(type))
                } else {
                    locals.append(untyped.isNull && argument.required ? .integer(1) : untyped)
                }
            }
            guard let frame = try? method.frame(arguments: .array(locals)),
                  let runs = try? method.render(frame: frame, table: table) else { continue }
            renderings.append(runs.flatMap { $0.statements + ($0.except ?? []) })
        }
        return renderings
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
