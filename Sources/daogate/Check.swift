import ArgumentParser
import DAODialect
import DAOEngine

/// `daogate check DIR`: every problem of every module, as `file:line: message`.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load every *.xml module under a folder and print every problem as file:line: message.",
        discussion: """
            Besides the dialect, SQLite itself checks the SQL: every initializer and upgrade runs in an \
            in-memory database and every statement a method can render is prepared. Exits 1 if there \
            is any problem, 0 if there is none.
            """
    )

    @Argument(help: "The folder of module files.")
    var directory: String

    func run() throws {
        let (modules, loadErrors) = ModuleLoader.loadDirectory(directory)
        let errors = loadErrors + SQLCheck.check(modules)
        for error in errors { print(error) }
        let methods = modules.reduce(0) { $0 + $1.methods.count }
        printToStandardError("\(modules.count) module\(modules.count == 1 ? "" : "s"), \(methods) method\(methods == 1 ? "" : "s"), \(errors.count) problem\(errors.count == 1 ? "" : "s")")
        if !errors.isEmpty { throw ExitCode(1) }
    }
}
