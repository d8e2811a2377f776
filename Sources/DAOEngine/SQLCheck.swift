import SQLiteDatabase
import DAODialect
import DAOValue

/// Checks modules against SQLite itself, so a typo in SQL is found before
/// deployment rather than by the first caller.
///
/// Every module's initializer runs in one in-memory database (so modules may
/// read each other's tables), then its upgrades in order; then every
/// statement a method can render — with sample arguments of several kinds,
/// since dynamic tags render differently — is prepared. SQLite's errors are
/// reported at the statement's `file:line`:
///
/// - a statement is broken when no sample call prepares it: dynamic tags
///   combine differently per call (the MyBatis `<set>` of optional columns
///   renders `update t where id = ?` when every one is nil), and what one
///   call renders wrong is that call's error (the caller's), not the module's fault;
/// - an error that is not about syntax names something the module wrote (a
///   column, a table, a function), so it is reported whichever sample met it,
///   with the arguments of that sample.
///
/// A statement that inlines the caller's values (`@{}`) is still prepared,
/// but its errors are not reported: its text depends on what the caller
/// sends, not on the module.
public enum SQLCheck {
    /// The table of a template module while it is checked (of the first one,
    /// when there are several: the others get `daogate_check_2`, …).
    public static let templateTable = ReservedTableNames.daogatePrefix + "check"

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
                check(method, module: module, table: table, on: sandbox.database, into: &problems)
            }
        }
        return problems.errors.sorted { ($0.file, $0.line) < ($1.file, $1.line) }
    }

    /// Problems, each reported once.
    struct Problems {
        var errors: [LoadError] = []
        private var seen: Set<LoadError> = []
        mutating func add(_ error: LoadError) {
            if seen.insert(error).inserted { errors.append(error) }
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

    /// Prepares every statement of every sample call of `method`, and reports
    /// by the rules above.
    private static func check(_ method: Method, module: Module, table: String, on db: Database,
                              into problems: inout Problems) {
        /// One sample call's rendering of a statement, and what SQLite said of it.
        struct Attempt {
            var statement: RenderedStatement
            var arguments: [Value]
            var error: SQLiteError?
        }
        // A statement of the method is known by its line and its rank among
        // the statements a call renders at that line (steps may share a line).
        var attempts: [[Attempt]] = []
        var group: [[Int]: Int] = [:]
        for call in sampleCalls(of: method, table: table) {
            var ranks: [Int: Int] = [:]
            for statement in call.runs.flatMap({ $0.statements + ($0.except ?? []) }) {
                let rank = ranks[statement.line, default: 0]
                ranks[statement.line] = rank + 1
                var attempt = Attempt(statement: statement, arguments: call.arguments, error: nil)
                do {
                    let prepared = try db.makeStatement(statement.sql)
                    if method.kind == .select && !prepared.isReadOnly {
                        problems.add(LoadError(file: module.file, line: statement.line,
                                               message: "select '\(method.name)' must only read: its statement writes"))
                    }
                } catch {
                    attempt.error = error
                }
                let key = [statement.line, rank]
                if let index = group[key] { attempts[index].append(attempt) } else {
                    group[key] = attempts.count
                    attempts.append([attempt])
                }
            }
        }
        for tries in attempts {
            let failures = tries.filter { $0.error != nil && !$0.statement.inlinesValues }
            let nonePrepares = !tries.contains { $0.error == nil }
            // Arguments are named only where they changed the SQL.
            let samplesDiffer = Set(tries.map(\.statement.sql)).count > 1
            var reported: Set<String> = []
            for (index, failure) in failures.enumerated() {
                let message = failure.error!.message
                let broken = index == 0 && nonePrepares
                guard broken || !isSyntaxError(message), reported.insert(message).inserted else { continue }
                var text = "SQLite: \(message)"
                if samplesDiffer {
                    text += " (with the sample arguments \(describe(failure.arguments, of: method))"
                        + (broken ? "; no sample call prepares)" : ")")
                }
                problems.add(LoadError(file: module.file, line: failure.statement.line, message: text))
            }
        }
    }

    /// Whether SQLite refused the shape of a statement rather than a name in it:
    /// what dynamic tags can produce for one call and not another.
    static func isSyntaxError(_ message: String) -> Bool {
        message.hasSuffix("syntax error") || message == "incomplete input" || message.hasPrefix("unrecognized token")
    }

    /// Sample arguments as a JSON object by name, for messages.
    private static func describe(_ arguments: [Value], of method: Method) -> String {
        var object = OrderedObject()
        for (argument, value) in zip(method.arguments, arguments) { object[argument.name] = value }
        return Value.object(object).jsonString()
    }

    /// The statements of every sample call of `method` that renders.
    static func renderings(of method: Method, table: String) -> [[RenderedStatement]] {
        sampleRuns(of: method, table: table).map { runs in runs.flatMap { $0.statements + ($0.except ?? []) } }
    }

    /// The runs of every sample call of `method` that renders.
    static func sampleRuns(of method: Method, table: String) -> [[RenderedRun]] {
        sampleCalls(of: method, table: table).map(\.runs)
    }

    /// Every sample call of `method` that renders: its arguments by position, and its runs.
    static func sampleCalls(of method: Method, table: String) -> [(arguments: [Value], runs: [RenderedRun])] {
        sampleArguments(of: method).compactMap { arguments in
            guard let frame = try? method.frame(arguments: .array(arguments)),
                  let runs = try? method.render(frame: frame, table: table) else { return nil }
            return (arguments, runs)
        }
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
