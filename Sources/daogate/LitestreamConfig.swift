import ArgumentParser
import Foundation
import Gateway

/// `daogate litestream-config`: the Litestream configuration that replicates every database of a data folder.
///
/// Litestream 0.5's directory replication (`dir`, `pattern`, `watch: true`), one entry per folder daogate keeps
/// databases in: `common.db`, `users/`, `storages/` (each custom storage's common and users' files) and
/// `databases/` (files a module is bound to). `archive/` (copies left by bucket moves) and `shard/` (imports in
/// progress) are not the shard's data and are not replicated. Each database lands under the replica at its path
/// relative to the data folder, which is what `daogate restore` reads back.
///
/// With `--groups N`, N configurations split the databases between N Litestream processes, so that no process holds
/// more than its share (one Litestream 0.5 keeps about 5 descriptors, 0.35 MiB and 3 goroutines per database, and
/// the process's descriptor limit and Go's 10,000-thread limit end it between 4,000 and 10,000 databases). A
/// database's group is the last character of its file name before `.db` (Litestream selects files by one glob on
/// the name, `pattern`; a user's bucket, a hash of the id, cannot be told by a glob): group 1 takes every name the
/// others do not, so each database is in exactly one group. Every group replicates to the same replica paths, so
/// `restore` and `failover` read the replica as if one process had written it.
///
/// The configuration leaves a marker in the data folder (`litestream-config`, holding the configurations' paths):
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

    @Option(help: """
        How long Litestream retries each database's last sync when it stops (Litestream's shutdown-sync-timeout; \
        its own default is 30s). Litestream closes databases one after another, so a database it cannot sync (a file \
        removed under it, a throttling store) holds every later one back this long: keep it short beside the \
        container's stop grace period.
        """)
    var shutdownSyncTimeout: String = "2s"

    @Option(help: """
        Split the databases between this many Litestream processes, by the last character of each file name: \
        --out FILE writes FILE-1 … FILE-N (FILE-1 also holds common.db), one `litestream replicate` each.
        """)
    var groups: Int = 1

    /// The folders of a data folder that hold databases, relative to it, with the pattern and whether
    /// Litestream descends into subfolders.
    static let folders: [(folder: String, pattern: String, recursive: Bool)] = [
        ("", "common.db", false), ("users", "*.db", false), ("storages", "*.db", true), ("databases", "*.db", true),
    ]

    /// The name of the marker the configuration leaves in the data folder.
    static let marker = GatewayServer.litestreamMarker

    /// The last characters of the names daogate gives databases, in the order groups deal them out: digits first,
    /// then hexadecimal letters, so that numbered and hexadecimal ids spread evenly over 2, 4 or 8 groups (and
    /// numbered ones over 5 or 10). A user's file ends with its id (`p-` ids are `[a-z0-9_-]`) or the id's base32
    /// (`x-`, `[a-z2-7]`).
    static let lastCharacters = Array("0123456789abcdefghijklmnopqrstuvwxyz_-")

    /// The `pattern` (a Go `filepath.Match` glob on the file name) of group `index` (0-based) of `count`: the
    /// characters at positions `index`, `index + count`, … of `lastCharacters`; group 0 takes every name the
    /// others do not (a negated class), so the groups cover every name and never overlap.
    static func pattern(group index: Int, of count: Int) -> String {
        guard count > 1 else { return "*.db" }
        func characters(_ group: Int) -> [Character] {
            lastCharacters.indices.filter { $0 % count == group }.map { lastCharacters[$0] }
        }
        // In a class, `-` would make a range and `]` end it: escape them (`\` is Go's escape outside Windows).
        func escaped(_ characters: [Character]) -> String {
            characters.map { "-]^\\".contains($0) ? "\\\($0)" : String($0) }.joined()
        }
        if index == 0 { return "*[^" + escaped((1..<count).flatMap(characters)) + "].db" }
        return "*[" + escaped(characters(index)) + "].db"
    }

    /// Where group `index` (0-based) of `count` is written: `out` itself for one group, else `out` with `-1`, `-2`, …
    /// before its extension.
    static func path(_ out: String, group index: Int, of count: Int) -> String {
        guard count > 1 else { return out }
        let url = URL(fileURLWithPath: out)
        let ext = url.pathExtension
        let stem = url.deletingPathExtension().path
        return stem + "-\(index + 1)" + (ext.isEmpty ? "" : "." + ext)
    }

    func validate() throws {
        _ = try Replica(replica)
        guard (1...Self.lastCharacters.count).contains(groups) else {
            throw ValidationError("--groups is a number from 1 to \(Self.lastCharacters.count), not \(groups)")
        }
        guard groups == 1 || out != nil else { throw ValidationError("--groups \(groups) writes one file per group: it needs --out") }
        for (name, value) in [("--sync-interval", syncInterval), ("--monitor-interval", monitorInterval),
                              ("--shutdown-sync-timeout", shutdownSyncTimeout)] {
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
        let texts = (0..<groups).map { text(replica: replica, root: root, group: $0) }
        if let out {
            let paths = (0..<groups).map { Self.path(URL(fileURLWithPath: out).standardizedFileURL.path, group: $0, of: groups) }
            for (path, text) in zip(paths, texts) {
                do {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                } catch {
                    throw RunFailure("cannot write \(path): \(error.localizedDescription)")
                }
            }
            do {
                try Data((paths.joined(separator: ", ") + "\n").utf8).write(to: URL(fileURLWithPath: root + "/" + Self.marker), options: .atomic)
            } catch {
                throw RunFailure("cannot write \(root)/\(Self.marker): \(error.localizedDescription)")
            }
        } else {
            try Data("standard output\n".utf8).write(to: URL(fileURLWithPath: root + "/" + Self.marker), options: .atomic)
            print(texts[0], terminator: "")
        }
    }

    /// The configuration of group `group` (0-based) of `groups`.
    func text(replica: Replica, root: String, group: Int) -> String {
        var lines = [
            "# Litestream's configuration for daogate's data folder \(root), written by daogate litestream-config.",
        ]
        if groups == 1 {
            lines.append("# Run: litestream replicate -config THIS_FILE -exec \"daogate serve --data \(root) --user-journal wal ...\"")
        } else {
            lines += [
                "# Group \(group + 1) of \(groups): the databases whose file name ends (before .db) with a character of its pattern\(group == 0 ? ", and common.db" : "").",
                group == 0
                    ? "# Run: litestream replicate -config THIS_FILE -exec \"daogate serve --data \(root) --user-journal wal ...\""
                    : "# Run beside group 1's (which runs daogate): litestream replicate -config THIS_FILE",
            ]
        }
        lines += [
            "# S3 credentials: LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY in Litestream's environment.",
            "# At a stop, each database's last sync is retried this long, one database after another.",
            "shutdown-sync-timeout: \(shutdownSyncTimeout)",
            "dbs:",
        ]
        for (folder, pattern, recursive) in Self.folders {
            if folder.isEmpty && group != 0 { continue }
            lines += [
                "  - dir: \(Self.yamlString(folder.isEmpty ? root : root + "/" + folder))",
                "    pattern: \(Self.yamlString(folder.isEmpty ? pattern : Self.pattern(group: group, of: groups)))",
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
        return lines.joined(separator: "\n") + "\n"
    }

    /// A YAML double-quoted string.
    static func yamlString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
