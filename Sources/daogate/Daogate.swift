import ArgumentParser
import Gateway

@main
struct Daogate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daogate",
        abstract: "An HTTP REST gateway over DAO modules: XML-described SQLite operations as POST endpoints.",
        version: daogateVersion,
        subcommands: [Serve.self, Check.self, Render.self, OpenAPICommand.self, HAProxyConfig.self, Backup.self, MoveBucket.self, Rekey.self,
                      LitestreamConfig.self, Restore.self, Failover.self]
    )

    /// Parses and runs a subcommand. What the command line got wrong (an unknown option, a `ValidationError` from
    /// parsing or `validate()`) is ArgumentParser's: the message, the usage, exit 64. What fails while a command
    /// runs (a file that is not there, a shard that does not answer) is one line on standard error,
    /// `daogate SUBCOMMAND: what failed`, and exit 1; a command that has printed its own report throws `ExitCode`.
    static func main() {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exit(withError: error)
        }
        do {
            try command.run()
        } catch let error where isArgumentParsers(error) {
            exit(withError: error)
        } catch {
            printToStandardError(runFailureLine(error, command: type(of: command)._commandName))
            exit(withError: ExitCode.failure)
        }
    }

    /// Whether ArgumentParser made the error: a usage error, `--help` (parsed as its help command, whose run
    /// throws), `--version`, an `ExitCode`. Its own `exit(withError:)` answers those.
    static func isArgumentParsers(_ error: any Error) -> Bool {
        error is ValidationError || error is ExitCode || error is CleanExit
            || String(reflecting: type(of: error)).hasPrefix("ArgumentParser.")
    }

    /// The one line of a run-time failure: the subcommand, then the error's description with its line breaks folded.
    static func runFailureLine(_ error: any Error, command: String) -> String {
        let message = String(describing: error).split(whereSeparator: \.isNewline).joined(separator: " ")
        return "daogate \(command): \(message)"
    }
}
