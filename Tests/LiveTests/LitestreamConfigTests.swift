#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// `daogate litestream-config --groups N`: N configurations, one Litestream process each, that together replicate
/// every database of the data folder once. Litestream matches `pattern` with Go's `filepath.Match` on the file
/// name; glibc's `fnmatch` reads these patterns (a class, `^` negating it, `\` escaping in it) the same way.
/// The replication test (Tests/Replication) runs the groups under Litestream itself.
@Suite struct LitestreamConfigTests {
    /// Every character daogate's database file names end with before `.db` (`p-` ids are `[a-z0-9_-]`, `x-` ids
    /// base32): what `litestream-config` deals out to groups.
    static let lastCharacters = Array("0123456789abcdefghijklmnopqrstuvwxyz_-")

    struct Entry: Equatable {
        var dir: String
        var pattern: String
    }

    /// The `dbs` entries of a generated configuration: each `dir` with its `pattern`, unquoted.
    static func entries(_ text: String) -> [Entry] {
        func unquoted(_ value: Substring) -> String {
            var text = String(value.trimmingCharacters(in: .whitespaces))
            if text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
            return text.replacingOccurrences(of: "\\\\", with: "\u{0}").replacingOccurrences(of: "\\\"", with: "\"")
                .replacingOccurrences(of: "\u{0}", with: "\\")
        }
        var entries: [Entry] = []
        for line in text.split(separator: "\n") {
            if let range = line.range(of: "- dir: ") {
                entries.append(Entry(dir: unquoted(line[range.upperBound...]), pattern: ""))
            } else if let range = line.range(of: "pattern: "), !entries.isEmpty {
                entries[entries.count - 1].pattern = unquoted(line[range.upperBound...])
            }
        }
        return entries
    }

    @Test(arguments: [2, 3, 4, 8, 38])
    func groupsReplicateEveryDatabaseOnce(groups: Int) throws {
        let folder = try CommandFailureTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("data").path
        let run = try CommandFailureTests.daogate(["litestream-config", "--data", data, "--replica", "file:///replica/shard-a",
                                                   "--out", folder.appendingPathComponent("litestream.yml").path,
                                                   "--groups", String(groups), "--monitor-interval", "2s"])
        #expect(run.status == 0, "\(run.standardError)")
        let paths = (1...groups).map { folder.appendingPathComponent("litestream-\($0).yml").path }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("litestream.yml").path))
        let marker = try String(contentsOfFile: data + "/litestream-config", encoding: .utf8)
        #expect(marker == paths.joined(separator: ", ") + "\n")
        let configurations = try paths.map { try Self.entries(String(contentsOfFile: $0, encoding: .utf8)) }
        let texts = try paths.map { try String(contentsOfFile: $0, encoding: .utf8) }
        for text in texts {
            #expect(text.contains("monitor-interval: 2s") && text.contains("watch: true"), "\(text)")
            // Every group writes to the replica's one layout: restore reads it as one process's.
            #expect(text.contains(#"url: "file:///replica/shard-a/users""#), "\(text)")
        }
        #expect(texts[0].contains("-exec") && !texts[1].contains("-exec"))
        // common.db is group 1's alone; users/, storages/ and databases/ are every group's, each with its pattern.
        #expect(configurations[0].contains(Entry(dir: data, pattern: "common.db")))
        for entries in configurations.dropFirst() { #expect(!entries.contains { $0.dir == data }) }
        // Names ending with every character daogate's file names end with, and some others (a bound file's).
        let names = Self.lastCharacters.map { "p-user\($0).db" } + ["x-mfrgg.db", "common.db", "Book.Z.db", "a].db", "a^.db", #"a\.db"#, "a..db"]
        for folder in ["users", "storages", "databases"] {
            let patterns = configurations.map { entries in entries.first { $0.dir == data + "/" + folder }?.pattern }
            #expect(patterns.allSatisfy { $0 != nil }, "\(folder): \(patterns)")
            for name in names {
                let matching = patterns.indices.filter { fnmatch(patterns[$0] ?? "", name, 0) == 0 }
                #expect(matching.count == 1, "\(folder)/\(name) is matched by groups \(matching) of \(patterns)")
            }
        }
        // Ids numbered 0-999 spread over the groups by their last digit.
        let patterns = configurations.map { $0.first { $0.dir == data + "/users" }?.pattern ?? "" }
        var counts = Array(repeating: 0, count: groups)
        for n in 0..<1000 {
            for (index, pattern) in patterns.enumerated() where fnmatch(pattern, "p-r-\(n).db", 0) == 0 { counts[index] += 1 }
        }
        #expect(counts.reduce(0, +) == 1000)
        if groups <= 10 { #expect(counts.allSatisfy { $0 >= 1000 / groups / 2 }, "\(counts)") }
    }

    @Test func oneGroupIsOneConfigurationOfEveryFile() throws {
        let folder = try CommandFailureTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("data").path
        let out = folder.appendingPathComponent("litestream.yml").path
        let run = try CommandFailureTests.daogate(["litestream-config", "--data", data, "--replica", "file:///replica", "--out", out])
        #expect(run.status == 0, "\(run.standardError)")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        // A database Litestream cannot sync at a stop holds every later one back: 2 s each, not Litestream's 30 s.
        #expect(text.contains("\nshutdown-sync-timeout: 2s\n"), "\(text)")
        let entries = Self.entries(text)
        #expect(entries == [Entry(dir: data, pattern: "common.db"), Entry(dir: data + "/users", pattern: "*.db"),
                            Entry(dir: data + "/storages", pattern: "*.db"), Entry(dir: data + "/databases", pattern: "*.db")])
    }
}
