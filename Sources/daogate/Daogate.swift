import ArgumentParser
import Gateway

@main
struct Daogate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daogate",
        abstract: "An HTTP REST gateway over DAO modules: XML-described SQLite operations as POST endpoints.",
        version: daogateVersion,
        subcommands: [Serve.self, Check.self, Render.self, OpenAPICommand.self, HAProxyConfig.self, Backup.self, MoveBucket.self, Rekey.self]
    )
}
