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
            encryption key is not (keep it apart). DIR must not exist yet. On a terminal, standard error shows \
            the databases copied so far and their bytes; standard output gets one JSON object at the end: \
            {"databases":N,"bytes":N,"seconds":S}. A failure removes the unfinished DIR and exits 1.
            """
    )

    @Argument(help: "The folder to write the copies into (made; must not exist).")
    var destination: String

    @Option(help: "The data folder (DAOGATE_DATA; default ./data).")
    var data: String?

    func run() throws {
        let root = OptionSource().text(data, "data") ?? "data"
        let files = FileManager.default
        var isFolder: ObjCBool = false
        guard files.fileExists(atPath: root, isDirectory: &isFolder) else { throw RunFailure("the data folder \(root) does not exist") }
        guard isFolder.boolValue else { throw RunFailure("the data folder \(root) is not a folder") }
        guard !files.fileExists(atPath: destination) else { throw RunFailure("\(destination) exists; a backup goes into a new folder") }
        let (databases, keys) = try Self.contents(of: root)
        guard !databases.isEmpty || !keys.isEmpty else {
            throw RunFailure("\(root) holds no daogate data (no database, no digest.key): is it the data folder?")
        }
        try files.createDirectory(atPath: destination, withIntermediateDirectories: true)
        do {
            try copy(databases, keys, from: root)
        } catch {
            // An unfinished backup is no backup: the folder goes, so that the same command can run again.
            try? files.removeItem(atPath: destination)
            throw error
        }
    }

    /// The databases (`.db` files) and keys of a data folder, as paths relative to it; archives of moved buckets
    /// and imports in progress are not the shard's data.
    static func contents(of root: String) throws -> (databases: [String], keys: [String]) {
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { throw RunFailure("cannot read the data folder \(root)") }
        var databases: [String] = []
        var keys: [String] = []
        while let relative = enumerator.nextObject() as? String {
            if !DataFolder.isData(relativePath: relative) { continue }
            if relative.hasSuffix(".db") {
                databases.append(relative)
            } else if relative == "digest.key" || relative == "deployment-version" {
                keys.append(relative)
            }
        }
        return (databases.sorted(), keys.sorted())
    }

    private func copy(_ databases: [String], _ keys: [String], from root: String) throws {
        let files = FileManager.default
        var progress = TerminalProgress(command: "backup")
        var bytes: Int64 = 0
        let started = ContinuousClock.now
        let configuration = DatabaseConfiguration()
        for (index, relative) in databases.enumerated() {
            progress.status("\(index) of \(databases.count) databases, \(TerminalProgress.bytes(bytes))")
            let copy = destination + "/" + relative
            do {
                try Database.consistentCopy(of: root + "/" + relative, to: copy, configuration: configuration)
                if let problem = try Database.integrityProblem(of: copy, configuration: configuration) {
                    throw RunFailure("fails integrity_check: \(problem)")
                }
            } catch {
                throw RunFailure("the copy of \(relative): \(error)")
            }
            bytes += ((try? files.attributesOfItem(atPath: copy))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        for relative in keys {
            try files.copyItem(atPath: root + "/" + relative, toPath: destination + "/" + relative)
        }
        let seconds = (ContinuousClock.now - started).seconds
        progress.line("\(databases.count) of \(databases.count) databases, \(TerminalProgress.bytes(bytes)), "
            + "in \((seconds * 100).rounded() / 100) s: \(destination)")
        print(#"{"databases":\#(databases.count),"bytes":\#(bytes),"seconds":\#(seconds)}"#)
    }
}
