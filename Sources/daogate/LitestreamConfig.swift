import ArgumentParser
import Foundation

/// `daogate litestream-config`: the Litestream configuration that replicates every database of a data folder.
///
/// Litestream 0.5's directory replication (`dir`, `pattern`, `watch: true`), one entry per folder daogate keeps
/// databases in: `common.db`, `users/`, `storages/` (each custom storage's common and users' files) and
/// `databases/` (files a module is bound to). `archive/` (copies left by bucket moves) and `shard/` (imports in
/// progress) are not the shard's data and are not replicated. Each database lands under the replica at its path
/// relative to the data folder, which is what `daogate restore` reads back.
///
/// The configuration leaves a marker in the data folder (`litestream-config`, holding the configuration's path):
/// `daogate serve` warns when it finds it while users' files are not in WAL, which Litestream needs.
struct LitestreamConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "litestream-config",
        abstract: "Write the Litestream configuration that replicates every database of a data folder (see docs/scaling.md).",
        discussion: """
            Run daogate under it: litestream replicate -config FILE -exec "daogate serve --data DIR --user-journal wal …". \
            S3 credentials are read by Litestream from LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY \
            (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); an S3-compatible endpoint goes in the replica URL: \
            s3://BUCKET/PATH?endpoint=http://host:port&region=us-east-1&force-path-style=true.
            """
    )

    @Option(help: "The data folder (made if missing, with the folders Litestream watches).")
    var data: String

    @Option(help: "Where to replicate: file:///absolute/path or s3://bucket/path[?endpoint=URL&region=R&force-path-style=true].")
    var replica: String

    @Option(help: "The configuration file to write (default: standard output).")
    var out: String?

    @Option(help: "How often Litestream ships new WAL frames to the replica: the recovery point (Litestream's sync-interval).")
    var syncInterval: String = "1s"

    @Option(help: "How often Litestream looks at each database's WAL (Litestream's monitor-interval).")
    var monitorInterval: String = "1s"

    /// The folders of a data folder that hold databases, relative to it, with the pattern and whether
    /// Litestream descends into subfolders.
    static let folders: [(folder: String, pattern: String, recursive: Bool)] = [
        ("", "common.db", false), ("users", "*.db", false), ("storages", "*.db", true), ("databases", "*.db", true),
    ]

    /// The name of the marker the configuration leaves in the data folder.
    static let marker = "litestream-config"

    func validate() throws {
        _ = try Replica(replica)
        for (name, value) in [("--sync-interval", syncInterval), ("--monitor-interval", monitorInterval)] {
            guard value.range(of: #"^[0-9]+(ms|s|m|h)$"#, options: .regularExpression) != nil else {
                throw ValidationError("\(name) is a duration such as 500ms, 1s, 1m, not \(value)")
            }
        }
    }

    func run() throws {
        let replica = try Replica(replica)
        let files = FileManager.default
        let root = URL(fileURLWithPath: data).standardizedFileURL.path
        for (folder, _, _) in Self.folders {
            try files.createDirectory(atPath: folder.isEmpty ? root : root + "/" + folder, withIntermediateDirectories: true)
        }
        var lines = [
            "# Litestream's configuration for daogate's data folder \(root), written by daogate litestream-config.",
            "# Run: litestream replicate -config THIS_FILE -exec \"daogate serve --data \(root) --user-journal wal ...\"",
            "# S3 credentials: LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY in Litestream's environment.",
            "dbs:",
        ]
        for (folder, pattern, recursive) in Self.folders {
            lines += [
                "  - dir: \(Self.yamlString(folder.isEmpty ? root : root + "/" + folder))",
                "    pattern: \(Self.yamlString(pattern))",
                "    recursive: \(recursive)",
                "    watch: true",
                "    monitor-interval: \(monitorInterval)",
                // Litestream checkpoints (PASSIVE) once the WAL has 1,000 pages, as daogate's own checkpoint does, and
                // every minute; never a blocking TRUNCATE checkpoint that would stall the writers.
                "    checkpoint-interval: 1m",
                "    min-checkpoint-page-count: 1000",
                "    replica:",
                "      url: \(Self.yamlString(replica.url(ofFolder: folder)))",
                "      sync-interval: \(syncInterval)",
            ]
        }
        let text = lines.joined(separator: "\n") + "\n"
        if let out {
            let path = URL(fileURLWithPath: out).standardizedFileURL.path
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                try Data((path + "\n").utf8).write(to: URL(fileURLWithPath: root + "/" + Self.marker), options: .atomic)
            } catch {
                throw RunFailure("cannot write \(path): \(error.localizedDescription)")
            }
        } else {
            try Data("standard output\n".utf8).write(to: URL(fileURLWithPath: root + "/" + Self.marker), options: .atomic)
            print(text, terminator: "")
        }
    }

    /// A YAML double-quoted string.
    static func yamlString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
