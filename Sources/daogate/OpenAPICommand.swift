import ArgumentParser
import DAODialect
import DAOEngine
import Foundation
import Gateway

/// `daogate openapi`: the OpenAPI 3.1 description of a folder of modules.
struct OpenAPICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "openapi",
        abstract: "Write the OpenAPI 3.1 description of a folder of modules.",
        discussion: "The same document `daogate serve` answers GET /openapi.json with."
    )

    @Option(help: "The folder of module files.")
    var modules: String = "modules"

    @Option(help: "The file to write (standard output when absent).")
    var out: String?

    @Option(help: "The authentication mode described: trusted-header (default) or jwt (the bearer scheme on every operation reaching storage).")
    var auth: String = "trusted-header"

    func validate() throws {
        guard ["trusted-header", "jwt"].contains(auth) else { throw ValidationError("auth must be jwt or trusted-header, not \(auth)") }
    }

    func run() throws {
        let (loaded, errors) = ModuleLoader.loadDirectory(modules)
        guard errors.isEmpty else {
            for error in errors { printToStandardError(error.description) }
            throw RunFailure("\(errors.count) problem\(errors.count == 1 ? "" : "s") in the modules of \(modules); nothing was written")
        }
        let json = try OpenAPIDescription.json(OpenAPIDescription.document(
            modules: loaded, descriptions: MethodDescriber.describe(loaded), version: daogateVersion, jwt: auth == "jwt"))
        if let out {
            do {
                try Data(json).write(to: URL(fileURLWithPath: out))
            } catch {
                throw RunFailure("cannot write \(out): \(error)")
            }
        } else {
            FileHandle.standardOutput.write(Data(json))
        }
    }
}
