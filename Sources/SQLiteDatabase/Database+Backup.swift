import DAOValue
import Foundation

/// A file operation that did not complete: a copy that never found a quiet moment, a staged file that fails
/// its checks, a rename refused.
public struct DatabaseFileError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Database files as wholes, while they serve (GRDB's `Database+Backup.swift`): consistent copies, integrity
/// checks, and the checked installation of a file's bytes. What a bucket move, `daogate backup` and
/// `daogate restore` are made of.
extension Database {
    /// Copies a database as of one moment, with `VACUUM INTO` on a read-only connection of its own: a
    /// snapshot of the last commit (WAL included), taken while others read and write. `destination` is
    /// replaced if it exists; its folders are made.
    ///
    /// A users' file with a rollback journal is written by its server without
    /// file locks (`DatabaseConfiguration.usesFileLocks`), so the copy's own
    /// read lock does not hold that writer back; the copy is then checked as
    /// a sequence lock is: no journal before or after it, and the file's
    /// change counter (which every commit increments, and whose pages a
    /// commit writes only while its journal holds them) the same on both
    /// sides. Otherwise a write crossed it, and it is taken again (for at most `patience`).
    public static func consistentCopy(of path: String, to destination: String, configuration: DatabaseConfiguration,
                                      patience: Duration = .seconds(10)) throws {
        try consistentCopy(of: path, to: destination, configuration: configuration, patience: patience, afterEachCopy: {})
    }

    /// `afterEachCopy` runs once a copy is made, before it is checked: a test commits there to cross a copy.
    static func consistentCopy(of path: String, to destination: String, configuration: DatabaseConfiguration,
                               patience: Duration, afterEachCopy: () throws -> Void) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: (destination as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let deadline = ContinuousClock.now + patience
        while true {
            for suffix in ["", "-journal", "-wal", "-shm"] where files.fileExists(atPath: destination + suffix) {
                try files.removeItem(atPath: destination + suffix)
            }
            let before = RollbackState(of: path)
            var copyError: (any Error)?
            if before?.journalIsEmpty != false {
                do {
                    let database = try Database(path: path, readOnly: true, configuration: configuration)
                    defer { database.close() }
                    let statement = try database.makeStatement("VACUUM INTO ?")
                    try statement.bind([.string(destination)])
                    _ = try statement.step()
                    try afterEachCopy()
                    // A WAL file's (or any file's under SQLite's locks) snapshot needs no check.
                    guard let before else { return }
                    if let after = RollbackState(of: path), after.journalIsEmpty, after.changeCounter == before.changeCounter { return }
                } catch {
                    // A read-only connection meeting a write's journal (SQLITE_READONLY_ROLLBACK) or its lock: again.
                    guard before != nil else { throw error }
                    copyError = error
                }
            }
            guard ContinuousClock.now < deadline else {
                throw copyError ?? DatabaseFileError("\((path as NSString).lastPathComponent) was written throughout \(patience): no consistent copy")
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// What tells a rollback-journal file's commits apart: its change counter and whether its `-journal` is
    /// empty or absent. nil for a WAL file, or one without a header.
    struct RollbackState: Equatable {
        var changeCounter: UInt32
        var journalIsEmpty: Bool

        init?(of path: String) {
            let journal = (try? FileManager.default.attributesOfItem(atPath: path + "-journal"))?[.size] as? NSNumber
            journalIsEmpty = (journal?.intValue ?? 0) == 0
            guard let header = FileHeader(path: path), !header.isWAL else { return nil }
            changeCounter = header.changeCounter
        }
    }

    /// `PRAGMA integrity_check` of a file: nil when it answers `ok`, else what it found.
    public static func integrityProblem(of path: String, configuration: DatabaseConfiguration) throws -> String? {
        let database = try Database(path: path, readOnly: true, configuration: configuration)
        defer { database.close() }
        let statement = try database.makeStatement("PRAGMA integrity_check")
        var findings: [String] = []
        while try statement.step() { findings.append(statement.string(at: 0)) }
        return findings == ["ok"] ? nil : findings.prefix(5).joined(separator: "; ")
    }

    /// Writes a database's bytes to a staging file, checks them, and renames them over `path` (whose old
    /// write-ahead log and shared memory go first): the file appears whole or not at all.
    public static func install(_ bytes: [UInt8], at path: String, staging: String, configuration: DatabaseConfiguration) throws {
        let staged = try stage(bytes, in: staging, configuration: configuration, name: (path as NSString).lastPathComponent)
        defer { try? FileManager.default.removeItem(atPath: staged) }
        try install(staged: staged, at: path)
    }

    /// Writes a database's bytes to a new file under `staging` and checks them (`PRAGMA integrity_check`,
    /// then `schema`, given the open copy); returns the staged file's path. Nothing is left behind on failure.
    public static func stage(_ bytes: [UInt8], in staging: String, configuration: DatabaseConfiguration, name: String,
                             schema: (Database) throws -> Void = { _ in }) throws -> String {
        let files = FileManager.default
        try files.createDirectory(atPath: staging, withIntermediateDirectories: true)
        let staged = staging + "/" + UUID().uuidString + ".db"
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: staged))
            if let problem = try integrityProblem(of: staged, configuration: configuration) {
                throw DatabaseFileError("the copy of \(name) fails integrity_check: \(problem)")
            }
            let database = try Database(path: staged, readOnly: true, configuration: configuration)
            defer { database.close() }
            try schema(database)
        } catch {
            try? files.removeItem(atPath: staged)
            throw error
        }
        return staged
    }

    /// Renames a staged, checked file over `path` (whose old journal, write-ahead log and shared memory go first).
    public static func install(staged: String, at path: String) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        for suffix in ["-wal", "-shm", "-journal"] where files.fileExists(atPath: path + suffix) {
            try files.removeItem(atPath: path + suffix)
        }
        guard rename(staged, path) == 0 else { throw DatabaseFileError("cannot rename the staged copy to \(path): errno \(errno)") }
    }

    /// The schema objects of a database (`sqlite_schema`): type, name, table, and whether it is a virtual table.
    public func schemaObjects() throws -> [(type: String, name: String, table: String, isVirtual: Bool)] {
        let statement = try makeStatement("select type, name, tbl_name, coalesce(sql, '') from sqlite_schema")
        var objects: [(type: String, name: String, table: String, isVirtual: Bool)] = []
        while try statement.step() {
            let sql = statement.string(at: 3).uppercased()
            objects.append((statement.string(at: 0), statement.string(at: 1), statement.string(at: 2),
                            sql.hasPrefix("CREATE VIRTUAL TABLE")))
        }
        return objects
    }
}
