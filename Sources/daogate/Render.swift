import ArgumentParser
import DAODialect
import DAOValue

/// `daogate render DIR MODULE METHOD`: what a call would execute, as JSON.
struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print, as JSON, the SQL statements and bindings a method call would execute.",
        discussion: """
            Output: {"statements":[{"sql":"…","bindings":[…]}],"skipped":false} — one entry per \
            statement, per foreach element and per step. An entry may also carry "resumable": true, \
            "encrypted": [indices of bindings encrypted before they are bound] and, for <try>, "except": \
            the statements run if the try branch fails. "skipped" is true when onVoid="quit" skipped a statement.
            """
    )

    @Argument(help: "The folder of module files.")
    var directory: String

    @Argument(help: "The module's name attribute.")
    var module: String

    @Argument(help: "The method's id.")
    var method: String

    @Option(help: "The arguments: a JSON object by name or a JSON array by position.")
    var args: String?

    @Option(help: "The table of a template module (no tableName, and its statements write ${T}).")
    var table: String?

    /// `--args` as JSON (binary markers allowed), or null without it.
    private func parsedArguments() throws -> Value {
        guard let args else { return .null }
        do { return try Value(parsingJSON: args, options: JSONParseOptions(binaryMarkers: true)) } catch {
            throw ValidationError("--args is not valid JSON: \(error)")
        }
    }

    func validate() throws {
        _ = try parsedArguments()
        if let table, let problem = tableNameProblem(table) { throw ValidationError("--table \(table): \(problem)") }
    }

    func run() throws {
        let (modules, errors) = ModuleLoader.loadDirectory(directory)
        guard let loaded = modules.first(where: { $0.name == module }) else {
            for error in errors { printToStandardError(error.description) }
            let names = modules.map(\.name).sorted()
            throw RunFailure("no module named '\(module)' in \(directory)"
                + (names.isEmpty ? "" : " (its modules: \(names.joined(separator: ", ")))"))
        }
        guard let method = loaded.method(named: method) else {
            throw RunFailure("module '\(module)' has no method '\(self.method)' (methods: \(loaded.methods.map(\.name).joined(separator: ", ")))")
        }
        let arguments = try parsedArguments()
        let table: String?
        switch (loaded.tableName, self.table) {
        case (let name?, nil): table = name
        case (_?, _?): throw RunFailure("module '\(module)' has a fixed table (\(loaded.tableName!)): --table is only for template modules")
        case (nil, nil) where loaded.isTemplate:
            throw RunFailure("module '\(module)' is a template (no tableName, and its statements write ${T}): pass --table NAME")
        case (nil, let name?) where loaded.isTemplate: table = name
        case (nil, nil): table = nil
        case (nil, _?): throw RunFailure("module '\(module)' names no table (no tableName, no ${T}): --table is only for template modules")
        }
        do {
            let frame = try method.frame(arguments: arguments)
            let runs = try method.render(frame: frame, table: table)
            print(Self.describe(runs).jsonString())
        } catch {
            throw RunFailure("\(error)")
        }
    }

    static func describe(_ runs: [RenderedRun]) -> Value {
        var statements: [Value] = []
        for run in runs {
            for (index, statement) in run.statements.enumerated() {
                var entry = entryObject(statement)
                if index == run.statements.count - 1, let except = run.except {
                    entry["except"] = .array(except.map { .object(entryObject($0)) })
                }
                statements.append(.object(entry))
            }
        }
        return ["statements": .array(statements), "skipped": .bool(runs.contains { $0.quitCount > 0 })]
    }

    static func entryObject(_ statement: RenderedStatement) -> OrderedObject {
        var entry: OrderedObject = ["sql": .string(statement.sql), "bindings": .array(statement.bindings)]
        if statement.resumable { entry["resumable"] = true }
        if !statement.encrypted.isEmpty {
            entry["encrypted"] = .array(statement.encrypted.map { .integer(Int64($0.index)) })
        }
        return entry
    }
}
