import ArgumentParser
import DAOEngine
import Foundation
import Gateway

/// `daogate backup DIR`: a consistent copy of every database of a data folder, taken while the server runs.
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy every database of a data folder, consistently, while daogate serves it.",
        discussion: """
            Each database (common, users', custom storages', bound files) is copied with VACUUM INTO through a \
            read-only connection of its own: a snapshot of its last commit, taken without stopping writers, then \
            checked with PRAGMA integrity_check. The keys of the data folder (digest.key) are copied too; the \
            encryption key is not (keep it apart). DIR must not exist yet.
            """
    )

    @Argument(help: "The folder to write the copies into (made; must not exist).")
    var destination: String

    @Option(help: "The data folder (DAOGATE_DATA; default ./data).")
    var data: String?

    func run() throws {
        let root = data ?? ProcessInfo.processInfo.environment["DAOGATE_DATA"].flatMap { $0.isEmpty ? nil : $0 } ?? "data"
        let files = FileManager.default
        guard !files.fileExists(atPath: destination) else { throw ValidationError("\(destination) exists; a backup goes into a new folder") }
        guard let enumerator = files.enumerator(atPath: root) else { throw ValidationError("cannot read the data folder \(root)") }
        var databases = 0
        var bytes: Int64 = 0
        let started = ContinuousClock.now
        let configuration = DatabaseConfiguration()
        while let relative = enumerator.nextObject() as? String {
            // Archives of moved buckets and imports in progress are not the shard's data.
            if relative.hasPrefix("archive/") || relative.hasPrefix("shard/") { continue }
            let source = root + "/" + relative
            if relative.hasSuffix(".db") {
                let copy = destination + "/" + relative
                try ShardFiles.consistentCopy(of: source, to: copy, configuration: configuration)
                if let problem = try ShardFiles.integrityProblem(of: copy, configuration: configuration) {
                    throw ValidationError("the copy of \(relative) fails integrity_check: \(problem)")
                }
                databases += 1
                bytes += ((try? files.attributesOfItem(atPath: copy))?[.size] as? NSNumber)?.int64Value ?? 0
            } else if relative == "digest.key" || relative == "deployment-version" {
                try files.createDirectory(atPath: destination, withIntermediateDirectories: true)
                try files.copyItem(atPath: source, toPath: destination + "/" + relative)
            }
        }
        try files.createDirectory(atPath: destination, withIntermediateDirectories: true)
        let elapsed = ContinuousClock.now - started
        print(#"{"databases":\#(databases),"bytes":\#(bytes),"seconds":\#(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)}"#)
    }
}
