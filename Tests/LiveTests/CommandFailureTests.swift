import DAOValue
import Foundation
import Testing

/// The commands as processes: a failure while one runs is one line on standard error naming what failed, and
/// exit 1; a command line that is wrong is ArgumentParser's usage error, exit 64. The long commands keep their
/// one JSON result on standard output, and show progress on standard error when it is a terminal.
@Suite(.serialized) struct CommandFailureTests {
    struct Run {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// Runs `daogate arguments` to its end, with the environment's `DAOGATE_` variables removed; standard error
    /// is a pipe, or with `terminal` a pseudo-terminal (util-linux `script` makes one; its text is what the
    /// terminal got, line ends as `\r\n`), standard output a pipe or a file.
    static func daogate(_ arguments: [String], terminal: Bool = false) throws -> Run {
        let process = Process()
        process.currentDirectoryURL = LiveServer.root
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        var resultFile: URL?
        if terminal {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-stdout-\(UUID().uuidString)")
            resultFile = file
            let quoted = ([LiveServer.binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            process.arguments = ["-q", "-e", "-c", quoted.joined(separator: " ") + " >'\(file.path)'", "/dev/null"]
            process.standardInput = FileHandle.nullDevice
        } else {
            process.executableURL = URL(fileURLWithPath: LiveServer.binary)
            process.arguments = arguments
        }
        try process.run()
        let standardOutput = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let standardError = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let resultFile else { return Run(status: process.terminationStatus, standardOutput: standardOutput, standardError: standardError) }
        defer { try? FileManager.default.removeItem(at: resultFile) }
        // Through `script`, the terminal's text arrives on script's standard output; the command's own went to the file.
        return Run(status: process.terminationStatus,
                   standardOutput: (try? String(contentsOf: resultFile, encoding: .utf8)) ?? "",
                   standardError: standardOutput + standardError)
    }

    /// A temporary folder, removed by the caller.
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-commands-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A shard map of shards `a` (all 4 buckets, and the common space) and `b`, at these ports.
    static func shardMap(in folder: URL, a: Int, b: Int) throws -> String {
        let path = folder.appendingPathComponent("shards.json").path
        try Data(#"{"epoch": 1, "buckets": 4, "common": "a", "shards": {"a": "127.0.0.1:\#(a)", "b": "127.0.0.1:\#(b)"}, "ranges": [[0, 3, "a"]]}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A failure while running: exit 1, one line `daogate COMMAND: …` holding `words`, no usage, nothing on standard output.
    static func expectRunFailure(_ run: Run, _ command: String, _ words: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.status == 1, "\(run.standardError)", sourceLocation: sourceLocation)
        let lines = run.standardError.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty, "one line: \(run.standardError)", sourceLocation: sourceLocation)
        #expect(run.standardError.hasPrefix("daogate \(command): "), "\(run.standardError)", sourceLocation: sourceLocation)
        #expect(run.standardError.contains(words), "\(run.standardError)", sourceLocation: sourceLocation)
        #expect(!run.standardError.contains("Usage"), "\(run.standardError)", sourceLocation: sourceLocation)
        #expect(run.standardOutput.isEmpty, "\(run.standardOutput)", sourceLocation: sourceLocation)
    }

    // MARK: Failures while running: exit 1, one line

    @Test func aBackupOfAFolderThatDoesNotExistFails() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("backup").path
        let missing = folder.appendingPathComponent("no-such-data").path
        Self.expectRunFailure(try Self.daogate(["backup", destination, "--data", missing]), "backup",
                              "the data folder \(missing) does not exist")
        #expect(!FileManager.default.fileExists(atPath: destination))
        // A folder that is there but holds nothing of daogate's is no data folder either.
        let empty = folder.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        Self.expectRunFailure(try Self.daogate(["backup", destination, "--data", empty]), "backup",
                              "\(empty) holds no daogate data")
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    @Test func aBackupIntoAFolderThatExistsFailsAndLeavesItAlone() throws {
        let server = try LiveServer()
        #expect(try server.curl("/dao/Demo/insertItem", body: #"["x"]"#).status == 200)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let kept = folder.appendingPathComponent("kept.txt")
        try Data("mine".utf8).write(to: kept)
        Self.expectRunFailure(try Self.daogate(["backup", folder.path, "--data", server.data.path]), "backup",
                              "\(folder.path) exists; a backup goes into a new folder")
        #expect(try String(contentsOf: kept, encoding: .utf8) == "mine")
    }

    @Test func restoreFailuresNameWhatFailed() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("replica").path
        Self.expectRunFailure(try Self.daogate(["restore", "--replica", "file://" + missing, "--data", folder.appendingPathComponent("d").path]),
                              "restore", "the replica folder \(missing) does not exist")
    }

    @Test func moveBucketFailuresNameWhatFailed() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.json").path
        Self.expectRunFailure(try Self.daogate(["move-bucket", "1", "--to", "b", "--shard-map", missing]), "move-bucket",
                              "cannot read the shard map \(missing)")
        // Nothing listens on ports 1 and 2 of the loopback address.
        let map = try Self.shardMap(in: folder, a: 1, b: 2)
        Self.expectRunFailure(try Self.daogate(["move-bucket", "1", "--to", "c", "--shard-map", map]), "move-bucket",
                              "the shard map \(map) has no shard c (its shards: a, b)")
        Self.expectRunFailure(try Self.daogate(["move-bucket", "9", "--to", "b", "--shard-map", map]), "move-bucket",
                              "has buckets 0 to 3, not 9")
        Self.expectRunFailure(try Self.daogate(["move-bucket", "1", "--to", "b", "--shard-map", map]), "move-bucket",
                              "shard b at 127.0.0.1:2 does not serve the move")
        Self.expectRunFailure(try Self.daogate(["move-bucket", "1", "--to", "b", "--shard-map", map,
                                                "--admin-token-file", missing]), "move-bucket",
                              "cannot read the admin token file \(missing)")
    }

    @Test func haproxyConfigOpenAPIAndRenderFailuresNameWhatFailed() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.json").path
        Self.expectRunFailure(try Self.daogate(["haproxy-config", "--shard-map", missing, "--out", folder.path]), "haproxy-config",
                              "cannot read the shard map \(missing)")
        let map = try Self.shardMap(in: folder, a: 1, b: 2)
        let file = folder.appendingPathComponent("a-file")
        try Data().write(to: file)
        Self.expectRunFailure(try Self.daogate(["haproxy-config", "--shard-map", map, "--out", file.path + "/out"]), "haproxy-config",
                              "cannot make the folder \(file.path)/out")
        Self.expectRunFailure(try Self.daogate(["openapi", "--out", file.path + "/openapi.json"]), "openapi",
                              "cannot write \(file.path)/openapi.json")
        Self.expectRunFailure(try Self.daogate(["render", "modules", "Bookz", "addBook"]), "render",
                              "no module named 'Bookz' in modules (its modules: Books, ChatMessages, Demo, Messages, Templates)")
        Self.expectRunFailure(try Self.daogate(["render", "modules", "Books", "addBok"]), "render",
                              "module 'Books' has no method 'addBok' (methods: ")
        Self.expectRunFailure(try Self.daogate(["render", "modules", "Books", "addBook", "--args", #"{"prio": 1}"#]), "render",
                              "Books.addBook: has no argument named 'prio'; its arguments are title, year")
        Self.expectRunFailure(try Self.daogate(["render", "modules", "Books", "addBook", "--table", "other"]), "render",
                              "module 'Books' has a fixed table (books): --table is only for template modules")
    }

    @Test func serveFailingToReadAFileNamesIt() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("token").path
        Self.expectRunFailure(try Self.daogate(["serve", "--log-level", "error", "--port", "0", "--data", folder.appendingPathComponent("data").path,
                                                "--key-file", folder.appendingPathComponent("key").path]), "serve",
                              "the encryption key (--key-dir or DAOGATE_KEY_DIR, --key-file or DAOGATE_KEY_FILE, or DAOGATE_KEY): ")
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: folder.appendingPathComponent("key"))
        Self.expectRunFailure(try Self.daogate(["serve", "--log-level", "error", "--port", "0", "--data", folder.appendingPathComponent("data").path,
                                                "--key-file", folder.appendingPathComponent("key").path,
                                                "--admin-token-file", missing]), "serve",
                              "cannot read the admin token file \(missing)")
    }

    // MARK: Usage errors: exit 64, with the subcommand's usage

    @Test(arguments: [
        (["move-bucket", "1", "--to", "b", "--shard-map", "m.json", "--haproxy-socket", "s"], "move-bucket",
         "--haproxy-socket and --haproxy-map go together"),
        (["move-bucket", "--to", "b", "--shard-map", "m.json", "--", "-1"], "move-bucket", "the bucket is a number from 0"),
        (["haproxy-config", "--shard-map", "m.json", "--out", "o", "--auth", "magic"], "haproxy-config", "auth must be jwt or trusted-header"),
        (["openapi", "--auth", "magic"], "openapi", "auth must be jwt or trusted-header, not magic"),
        (["render", "modules", "Books", "addBook", "--args", "{"], "render", "--args is not valid JSON"),
        (["serve", "--auth", "magic"], "serve", "auth must be jwt or trusted-header, not magic"),
        (["backup"], "backup", "Missing expected argument"),
        (["litestream-config", "--data", "d", "--replica", "http://x/y"], "litestream-config", "the replica is file:///path or s3://bucket/path"),
        (["litestream-config", "--data", "d", "--replica", "file://relative"], "litestream-config", "a file replica is file:///absolute/path"),
        (["litestream-config", "--data", "d", "--replica", "file:///r", "--sync-interval", "soon"], "litestream-config", "--sync-interval is a duration"),
        (["litestream-config", "--data", "d", "--replica", "file:///r", "--shutdown-sync-timeout", "forever"], "litestream-config", "--shutdown-sync-timeout is a duration"),
        (["litestream-config", "--data", "d", "--replica", "file:///r", "--out", "o.yml", "--groups", "0"], "litestream-config", "--groups is a number from 1 to 38"),
        (["litestream-config", "--data", "d", "--replica", "file:///r", "--groups", "2"], "litestream-config", "it needs --out"),
        (["restore", "--replica", "file:///r", "--data", "d", "--bucket", "3"], "restore", "--bucket needs --shard-map"),
        (["restore", "--replica", "file:///r", "--data", "d", "--user", "a b"], "restore", "--user a b:"),
        (["restore", "--replica", "file:///r", "--data", "d", "--timestamp", "yesterday"], "restore", "--timestamp is an RFC 3339 moment"),
        (["failover", "a", "--to", "a", "--shard-map", "m.json", "--replica", "file:///r", "--spare-data", "d"], "failover",
         "the spare is another shard than the lost one"),
    ])
    func aWrongCommandLineIsAUsageError(arguments: [String], command: String, words: String) throws {
        let run = try Self.daogate(arguments)
        #expect(run.status == 64, "\(run.standardError)")
        #expect(run.standardError.contains("Usage: daogate \(command)"), "\(run.standardError)")
        #expect(run.standardError.contains(words), "\(run.standardError)")
    }

    /// Help and the version are ArgumentParser's, as before: exit 0.
    @Test(arguments: [["backup", "--help"], ["help", "move-bucket"], ["move-bucket", "-h"], ["--version"]])
    func helpAndVersionExitZero(arguments: [String]) throws {
        let run = try Self.daogate(arguments)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(!run.standardOutput.isEmpty)
        #expect(!run.standardError.contains("Error"), "\(run.standardError)")
    }

    // MARK: Results and progress

    /// Standard output holds exactly one JSON object (one line).
    static func oneJSONObject(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Value {
        #expect(text.hasSuffix("\n") && text.dropLast().split(separator: "\n").count == 1, "\(text)", sourceLocation: sourceLocation)
        let value = try Value(parsingJSON: Array(text.utf8))
        #expect(value.objectValue != nil, "\(text)", sourceLocation: sourceLocation)
        return value
    }

    @Test func backupPrintsOneJSONResultAndProgressOnlyOnATerminal() throws {
        let server = try LiveServer()
        for user in ["ann", "bob", "cy"] {
            #expect(try server.curl("/dao/Messages/unreadCount", body: "", headers: ["X-User-Id: \(user)"]).status == 200)
        }
        #expect(try server.curl("/dao/Demo/insertItem", body: #"["x"]"#).status == 200)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = try Self.daogate(["backup", folder.appendingPathComponent("plain").path, "--data", server.data.path])
        #expect(plain.status == 0, "\(plain.standardError)")
        #expect(plain.standardError.isEmpty, "\(plain.standardError)")
        let result = try Self.oneJSONObject(plain.standardOutput)
        let databases = try #require(result[member: "databases"]?.integerValue)
        #expect(databases >= 4, "\(plain.standardOutput)")  // the common database and three users'

        let destination = folder.appendingPathComponent("shown").path
        let shown = try Self.daogate(["backup", destination, "--data", server.data.path], terminal: true)
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(try Self.oneJSONObject(shown.standardOutput)[member: "databases"] == .integer(databases))
        // A status line rewritten in place while it copies, then the line that stays.
        #expect(shown.standardError.contains("\r\u{1B}[Kbackup: 0 of \(databases) databases, 0 B"), "\(shown.standardError)")
        #expect(shown.standardError.contains("\r\u{1B}[Kbackup: \(databases - 1) of \(databases) databases, "), "\(shown.standardError)")
        #expect(shown.standardError.contains("backup: \(databases) of \(databases) databases, "), "\(shown.standardError)")
        #expect(shown.standardError.hasSuffix(": \(destination)\r\n"), "\(shown.standardError)")
    }

    @Test func haproxyConfigSaysWhatItWrote() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let map = try Self.shardMap(in: folder, a: 1, b: 2)
        let out = folder.appendingPathComponent("haproxy").path
        let run = try Self.daogate(["haproxy-config", "--shard-map", map, "--out", out])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.isEmpty)
        let written = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(written.contains("haproxy.cfg"))
        let lines = run.standardError.split(separator: "\n").map(String.init)
        #expect(lines.dropLast().sorted() == written.map { "haproxy-config: wrote \(out)/\($0)" }, "\(run.standardError)")
        #expect(lines.last?.hasPrefix("haproxy-config: \(written.count) files for 2 shards and 4 buckets") == true, "\(run.standardError)")
    }

    /// Two real shards; the move prints one JSON result, and on a terminal its counted steps.
    @Test func moveBucketPrintsOneJSONResultAndItsStepsOnATerminal() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let token = folder.appendingPathComponent("token").path
        try Data("move-bucket-test-token-0123456789".utf8).write(to: URL(fileURLWithPath: token))
        // The shards start on free ports; the map then gets their addresses (the move reads them from it).
        let map = try Self.shardMap(in: folder, a: 1, b: 2)
        let a = try LiveServer(arguments: ["--shard", "a", "--shard-map", map, "--admin-token-file", token])
        let b = try LiveServer(arguments: ["--shard", "b", "--shard-map", map, "--admin-token-file", token])
        _ = try Self.shardMap(in: folder, a: a.port, b: b.port)
        // Both shards read the map with their real addresses: an import comes only from the address the map gives.
        for shard in [a, b] {
            #expect(try shard.curl("/shard/reload", method: "POST", headers: ["Authorization: Bearer move-bucket-test-token-0123456789"]).status == 200)
        }
        // Users in every bucket, so that each move carries files.
        for user in (0..<24).map({ "user\($0)" }) {
            #expect(try a.curl("/dao/Messages/unreadCount", body: "", headers: ["X-User-Id: \(user)"]).status == 200)
        }
        let plain = try Self.daogate(["move-bucket", "1", "--to", "b", "--shard-map", map, "--admin-token-file", token])
        #expect(plain.status == 0, "\(plain.standardError)")
        #expect(plain.standardError.isEmpty, "\(plain.standardError)")
        let result = try Self.oneJSONObject(plain.standardOutput)
        #expect(result[member: "from"] == "a" && result[member: "to"] == "b" && result[member: "epoch"] == 2, "\(plain.standardOutput)")
        let files = try #require(result[member: "files"]?.integerValue)
        #expect(files >= 1, "\(plain.standardOutput)")

        let shown = try Self.daogate(["move-bucket", "2", "--to", "b", "--shard-map", map, "--admin-token-file", token], terminal: true)
        #expect(shown.status == 0, "\(shown.standardError)")
        let moved = try Self.oneJSONObject(shown.standardOutput)
        #expect(moved[member: "epoch"] == 3)
        let text = shown.standardError
        let count = moved[member: "files"]?.integerValue ?? -1
        #expect(text.contains("move-bucket: [1/4] shard b imports bucket 2 from shard a"), "\(text)")
        #expect(text.contains("move-bucket: [1/4] shard b imported bucket 2 from shard a: \(count) database\(count == 1 ? "" : "s"), "), "\(text)")
        // Each step's line ends with the seconds since the start.
        for line in ["[2/4] committed: the shard map gives bucket 2 to shard b (epoch 3)", "[3/4] shard b serves bucket 2",
                     "[4/4] shard a archived its copy of bucket 2"] {
            let pattern = NSRegularExpression.escapedPattern(for: "move-bucket: " + line) + #" \(\d+\.\d\d s\)\r\n"#
            #expect(text.range(of: pattern, options: .regularExpression) != nil, "\(text)")
        }
        #expect(text.contains("move-bucket: [4/4] 1 of 1 other shards read the map; done in "), "\(text)")
        _ = (a, b)
    }
}
