import ArgumentParser
import DAOEngine
import SQLiteDatabase
import DAOValue
import Foundation
import Gateway
import Sharding

/// `daogate restore`: databases back from a Litestream replica into a data folder.
struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore the databases of a shard, of some buckets or of some users from a Litestream replica (see docs/scaling.md).",
        discussion: """
            Lists the replica's databases (written by litestream replicate with daogate litestream-config's \
            configuration), restores each chosen one with litestream restore into a staging file under DIR/shard/, \
            checks it with PRAGMA integrity_check, then renames it into place. Without --bucket or --user every \
            database is restored (common, users', custom storages', bound files). An existing database is not \
            overwritten without --force: the command then stops before restoring anything. On a terminal, \
            standard error shows the progress; standard output gets one JSON object: \
            {"databases":N,"bytes":N,"seconds":S,"files":[…]}.
            """
    )

    @Option(help: "The replica: file:///absolute/path or s3://bucket/path[?endpoint=URL&region=R&force-path-style=true].")
    var replica: String

    @Option(help: "The data folder to restore into.")
    var data: String

    @Option(help: "Restore the users of this bucket (repeatable; needs --shard-map for the number of buckets).")
    var bucket: [Int] = []

    @Option(help: "Restore this user's databases, in every storage (repeatable).")
    var user: [String] = []

    @Option(help: "The shard map, for the number of buckets (--bucket).")
    var shardMap: String?

    @Option(help: "Restore as of this moment (RFC 3339, e.g. 2026-01-02T15:04:05Z), where the replica holds it.")
    var timestamp: String?

    @Flag(help: "Overwrite databases that exist in the data folder.")
    var force = false

    @OptionGroup var restoring: RestoreOptions

    func validate() throws {
        _ = try Replica(replica)
        guard bucket.isEmpty || shardMap != nil else { throw ValidationError("--bucket needs --shard-map (for the number of buckets)") }
        for id in user {
            do { _ = try UserID(id) } catch { throw ValidationError("--user \(id.prefix(40)): \(error)") }
        }
        if let timestamp, ISO8601DateFormatter().date(from: timestamp) == nil {
            throw ValidationError("--timestamp is an RFC 3339 moment such as 2026-01-02T15:04:05Z, not \(timestamp)")
        }
    }

    func run() throws {
        let replica = try Replica(replica)
        var buckets: Int?
        if let shardMap {
            do { buckets = try ShardMap(contentsOf: shardMap).buckets } catch { throw RunFailure("\(error)") }
        }
        if let buckets, let wrong = bucket.first(where: { !(0..<buckets).contains($0) }) {
            throw RunFailure("the shard map has buckets 0 to \(buckets - 1), not \(wrong)")
        }
        let users = Set(user.compactMap { try? UserID($0).fileName })
        let wanted = Set(bucket)
        let choose: (String) -> Bool = { relative in
            if wanted.isEmpty && users.isEmpty { return true }
            guard let location = Self.userLocation(relative) else { return false }
            if users.contains(location.user.fileName) { return true }
            if let buckets, wanted.contains(ShardMap.bucket(of: location.user.rawValue, buckets: buckets)) { return true }
            return false
        }
        let summary = try Self.restore(from: replica, into: data, choosing: choose, timestamp: timestamp, force: force,
                                       litestream: restoring.program, parallel: restoring.parallel, command: "restore")
        var object = OrderedObject()
        object["databases"] = .integer(Int64(summary.files.count))
        object["bytes"] = .integer(summary.bytes)
        object["seconds"] = .double(summary.seconds)
        object["files"] = .array(summary.files.map { .string($0) })
        print(String(decoding: Value.object(object).jsonBytes(), as: UTF8.self))
    }

    /// The user of a user database's relative path (`users/p-ann.db`, `storages/S/users/x-….db`), nil for any other.
    static func userLocation(_ relative: String) -> (user: UserID, storage: String?)? {
        guard case .user(let user, let storage)? = DataFolder.location(relativePath: relative) else { return nil }
        return (user, storage)
    }

    /// Whether a relative path is one daogate keeps a database at (and may restore there): nothing outside
    /// the data folder, no `..`, only the folders `litestream-config` replicates.
    static func isDatabasePath(_ relative: String) -> Bool {
        relative.hasSuffix(".db") && DataFolder.location(relativePath: relative) != nil
    }

    struct Summary {
        var files: [String]
        var bytes: Int64
        var seconds: Double
    }

    /// Restores the replica's databases that `choosing` accepts into the data folder `root`: each with
    /// `litestream restore` into a staging file, checked (`PRAGMA integrity_check`), then renamed into place.
    /// Existing databases are refused before anything is restored, unless `force`.
    static func restore(from replica: Replica, into root: String, choosing: (String) -> Bool, timestamp: String?, force: Bool,
                        litestream: String, parallel: Int, command: String) throws -> Summary {
        let started = ContinuousClock.now
        var progress = TerminalProgress(command: command)
        progress.status("listing the replica \(replica.text)")
        let files = FileManager.default
        let chosen = try replica.databases().filter { isDatabasePath($0) && choosing($0) }
        if !force {
            let existing = chosen.filter { files.fileExists(atPath: root + "/" + $0) }
            if !existing.isEmpty {
                throw RunFailure("\(existing.count) of the \(chosen.count) databases to restore exist in \(root) (\(existing.prefix(3).joined(separator: ", "))\(existing.count > 3 ? ", …" : "")); nothing was restored: --force overwrites them")
            }
        }
        let staging = DataFolder(root: root).incoming
        try files.createDirectory(atPath: staging, withIntermediateDirectories: true)
        final class Outcome: @unchecked Sendable {
            let lock = NSLock()
            var done = 0
            var bytes: Int64 = 0
            var failures: [String] = []
        }
        let outcome = Outcome()
        let configuration = DatabaseConfiguration()
        let workers = max(1, min(parallel, chosen.count))
        nonisolated(unsafe) var shown = progress
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for index in stride(from: worker, to: chosen.count, by: workers) {
                let relative = chosen[index]
                let staged = staging + "/restore-" + UUID().uuidString + ".db"
                defer { for suffix in ["", "-wal", "-shm", "-journal"] { try? files.removeItem(atPath: staged + suffix) } }
                var failure: String?
                var size: Int64 = 0
                do {
                    var arguments = ["restore", "-o", staged]
                    if let timestamp { arguments += ["-timestamp", timestamp] }
                    arguments.append(replica.url(of: relative))
                    let answer = try Replica.run(litestream, arguments)
                    if answer.status != 0 {
                        failure = "litestream restore: " + answer.errors.split(whereSeparator: \.isNewline).suffix(2).joined(separator: " ")
                    } else if let problem = try Database.integrityProblem(of: staged, configuration: configuration) {
                        failure = "fails integrity_check: \(problem)"
                    } else {
                        size = ((try? files.attributesOfItem(atPath: staged))?[.size] as? NSNumber)?.int64Value ?? 0
                        try Database.install(staged: staged, at: root + "/" + relative)
                    }
                } catch {
                    failure = "\(error)"
                }
                outcome.lock.lock()
                outcome.done += 1
                outcome.bytes += size
                if let failure { outcome.failures.append("\(relative): \(failure)") }
                shown.status("\(outcome.done) of \(chosen.count) databases, \(TerminalProgress.bytes(outcome.bytes))")
                outcome.lock.unlock()
            }
        }
        progress = shown
        let seconds = (ContinuousClock.now - started).seconds
        guard outcome.failures.isEmpty else {
            throw RunFailure("\(outcome.failures.count) of \(chosen.count) databases were not restored: \(outcome.failures.prefix(3).joined(separator: "; "))")
        }
        progress.line("\(chosen.count) databases, \(TerminalProgress.bytes(outcome.bytes)), in \((seconds * 100).rounded() / 100) s, into \(root)")
        return Summary(files: chosen, bytes: outcome.bytes, seconds: seconds)
    }
}

/// How `restore` and `failover` run Litestream: the same two options for both.
struct RestoreOptions: ParsableArguments {
    @Option(help: "The litestream program (DAOGATE_LITESTREAM; default: litestream on the PATH).")
    var litestream: String?

    @Option(help: "Databases restored at once (each by a litestream process of its own).")
    var parallel: Int = 8

    func validate() throws {
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel is 1 to 64") }
    }

    /// The litestream program: the option, else `DAOGATE_LITESTREAM`, else `litestream` on the PATH.
    var program: String {
        OptionSource().text(litestream, "litestream") ?? "litestream"
    }
}
