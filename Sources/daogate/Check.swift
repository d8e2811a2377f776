import ArgumentParser
import DAODialect
import DAOEngine
import Gateway

/// `daogate check DIR`: every problem of every module, as `file:line: message`.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load every *.xml module under a folder and print every problem as file:line: message.",
        discussion: """
            Besides the dialect, SQLite itself checks the SQL: every initializer and upgrade runs in an \
            in-memory database and every statement a method can render is prepared. Exits 1 if there \
            is any problem, 0 if there is none. With --plans, it also prints each full table scan those \
            statements make (EXPLAIN QUERY PLAN), with the index that would serve it, as a warning: \
            warnings do not change the exit status.
            """
    )

    @Argument(help: "The folder of module files.")
    var directory: String

    @Flag(help: "Also report each full table scan (SCAN) of a method's statements, and the index that would serve it; scan=\"allowed\" on a method or module silences its own.")
    var plans = false

    func run() throws {
        // Plans of statements that do not prepare mean nothing: `load` asks them only of a set without problems.
        let loaded = ModuleSet.load(directory, plans: plans)
        let (modules, errors, warnings) = (loaded.modules, loaded.problems, loaded.warnings)
        for error in errors { print(error) }
        for warning in warnings { print("\(warning.file):\(warning.line): warning: \(warning.message)") }
        let methods = modules.reduce(0) { $0 + $1.methods.count }
        var summary = "\(modules.count) module\(modules.count == 1 ? "" : "s"), \(methods) method\(methods == 1 ? "" : "s"), \(errors.count) problem\(errors.count == 1 ? "" : "s")"
        if plans { summary += errors.isEmpty ? ", \(warnings.count) full scan\(warnings.count == 1 ? "" : "s")" : " (plans are checked once there are none)" }
        printToStandardError(summary)
        if !errors.isEmpty { throw ExitCode(1) }
    }
}
