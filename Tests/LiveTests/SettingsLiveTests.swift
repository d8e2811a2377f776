import Foundation
import Testing

/// Settings declared once: every option of `daogate serve` has the environment variable its flag names by the
/// one rule (`--max-database-size` → `DAOGATE_MAX_DATABASE_SIZE`), its help says so, and the server reads it.
@Suite struct SettingsLiveTests {
    /// The rule: `DAOGATE_`, the flag in upper case, dashes as underscores.
    static func variable(_ flag: String) -> String { "DAOGATE_" + flag.uppercased().replacingOccurrences(of: "-", with: "_") }

    /// `serve`'s options as the CLI declares them (`--experimental-dump-help`): flag and help.
    static func serveOptions() throws -> [(flag: String, help: String)] {
        let text = try run(LiveServer.binary, ["--experimental-dump-help"])
        let tool = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let commands = try #require((tool["command"] as? [String: Any])?["subcommands"] as? [[String: Any]])
        let serve = try #require(commands.first { $0["commandName"] as? String == "serve" })
        return (serve["arguments"] as? [[String: Any]] ?? []).compactMap { argument in
            guard argument["kind"] as? String == "option",
                  let name = (argument["names"] as? [[String: Any]])?.first(where: { $0["kind"] as? String == "long" })?["name"] as? String,
                  name != "help" else { return nil }
            return (name, argument["abstract"] as? String ?? "")
        }
    }

    @Test func everyServeOptionsHelpNamesTheVariableOfItsFlag() throws {
        let options = try Self.serveOptions()
        #expect(options.count >= 46, "\(options.map(\.flag))")
        for option in options {
            #expect(option.help.contains(Self.variable(option.flag)), "--\(option.flag): \(option.help)")
        }
    }

    /// Every command's option whose help names an environment variable names the one of its flag first
    /// (`rekey --key-dir` reads `DAOGATE_KEY_DIR` as `serve --key-dir` does).
    @Test func everyCommandsVariablesFollowTheRule() throws {
        let text = try run(LiveServer.binary, ["--experimental-dump-help"])
        let tool = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let commands = try #require((tool["command"] as? [String: Any])?["subcommands"] as? [[String: Any]])
        var named = 0
        for command in commands {
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                guard let help = argument["abstract"] as? String,
                      let first = help.firstMatch(of: /DAOGATE_[A-Z0-9_]+/).map({ String($0.0) }),
                      let flag = (argument["names"] as? [[String: Any]])?.first(where: { $0["kind"] as? String == "long" })?["name"] as? String
                else { continue }
                named += 1
                #expect(first == Self.variable(flag), "\(command["commandName"] ?? "") --\(flag): \(help)")
            }
        }
        #expect(named > 50)
    }

    /// Each variable, set to a value no option takes, changes what `serve` does where nothing else does: it
    /// refuses to start (or, for the one option any text suits, records the value), while the same start without
    /// it serves. So the server reads every variable the rule names.
    @Test func everyServeVariableIsRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-settings-\(UUID().uuidString.lowercased())")
        let modules = folder.appendingPathComponent("modules")
        try FileManager.default.createDirectory(at: modules, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try ReloadLiveTests.module.write(to: modules.appendingPathComponent("Notes.xml"), atomically: true, encoding: .utf8)
        // A path under a plain file: neither a folder, a file, a number, an address nor a word any option takes
        // (in lower case, as some options read it; so is the folder's name).
        try Data().write(to: folder.appendingPathComponent("plain"))
        let junk = folder.appendingPathComponent("plain/junk").path.lowercased()

        func serve(_ environment: [String: String], data: String) throws -> (status: Int32?, output: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: LiveServer.binary)
            // Everything through the environment, so that each variable tried replaces a working one.
            process.arguments = ["serve"]
            var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
            variables.merge(["DAOGATE_MODULES": modules.path, "DAOGATE_DATA": folder.appendingPathComponent(data).path,
                             "DAOGATE_PORT": "0"]) { $1 }
            variables.merge(environment) { $1 }
            process.environment = variables
            let output = folder.appendingPathComponent("\(data).log")
            FileManager.default.createFile(atPath: output.path, contents: nil)
            let handle = try FileHandle(forWritingTo: output)
            defer { try? handle.close() }
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning, Date() < deadline {
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                if text.contains("daogate listening on") { break }
                Thread.sleep(forTimeInterval: 0.02)
            }
            let running = process.isRunning
            if running { process.terminate() }
            process.waitUntilExit()
            return (running ? nil : process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
        }

        let baseline = try serve([:], data: "baseline")
        #expect(baseline.status == nil, "the start without variables serves: \(baseline.output)")
        for option in try Self.serveOptions() {
            let variable = Self.variable(option.flag)
            let data = "data-\(option.flag)"
            let outcome = try serve([variable: junk], data: data)
            if option.flag == "deployment-version" {
                let recorded = try? String(contentsOf: folder.appendingPathComponent("\(data)/deployment-version"), encoding: .utf8)
                #expect(outcome.status == nil && recorded == junk, "\(variable): \(outcome.output)")
            } else {
                #expect(outcome.status != nil && outcome.status != 0, "\(variable)=\(junk) was not refused: \(outcome.output)")
            }
        }
    }
}
