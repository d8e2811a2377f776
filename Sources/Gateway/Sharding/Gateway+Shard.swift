import DAODialect
import DAOEngine
import DAOValue
import Foundation
import HTTPTransport
import Sharding

/// The shard's admin operations, `/shard…`, what `daogate move-bucket` drives; each the admin's, each a
/// 404 `not_a_shard` on a server started without `--shard`. A shard's admission of ordinary requests is
/// `ShardAdmission` (Gateway+ShardAdmission.swift).
///
/// | route | what |
/// |---|---|
/// | `GET /shard` | name, map epoch, frozen buckets |
/// | `POST /shard/reload` | read the shard map again, then ask the peers' epochs (Gateway+ShardEpochs.swift) |
/// | `POST /shard/freeze` | `{"bucket"}`: refuse its writes (503), wait for those in flight; its files |
/// | `POST /shard/unfreeze` | `{"bucket"}`: let its writes in again (a move abandoned) |
/// | `POST /shard/export` | `{"bucket", "file"}`: a consistent copy of a frozen bucket's file (`VACUUM INTO`), kept as its archive |
/// | `POST /shard/import` | `{"bucket", "from"}`: fetch a bucket's files from its owner in the map (`from` names it), check them (size, `integrity_check`, only daogate's objects), install them |
/// | `POST /shard/archive` | `{"bucket"}`: once the map gives the bucket away, remove its files here (their copies stay in `archive/`) |
extension Gateway {
    // MARK: The shard's admin operations

    /// The shard this server is, for an admin; a 404 `not_a_shard` on a server that is none.
    private func adminShard(_ call: RouteCall) throws(Problem) -> Shard {
        try authorizeAdmin(call)
        guard let shard = configuration.shard else {
            throw Problem(.notAShard, "this server runs without --shard; it has no shard operations")
        }
        return shard
    }

    /// `GET /shard`.
    func shardStatus(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        json(shardStatus(try adminShard(call)))
    }

    /// `POST /shard/reload`: the map read again; the change streams of spaces given away end; the peers'
    /// epochs asked again (a map older than a peer's is served 421 until it catches up).
    func shardReload(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let shard = try adminShard(call)
        do {
            try shard.reload()
        } catch {
            throw Problem(.storageFailed, error.description)
        }
        endStreamsElsewhere(shard)
        checkShardEpochs(shard, reason: "POST /shard/reload")
        return json(shardStatus(shard))
    }

    /// `POST /shard/freeze`: the bucket's writes refused (and those in flight waited for); its files.
    func shardFreeze(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let shard = try adminShard(call)
        let bucket = try bucketArgument(call.request, shard, allowed: ["bucket"])
        do {
            try shard.freeze(bucket, timeout: .seconds(10))
        } catch {
            switch error {
            case .storageFailed(let detail): throw Problem(.storageFailed, detail)
            case .busy(let detail): throw Problem(.busy, detail)
            }
        }
        return json(["bucket": .integer(Int64(bucket)), "files": .array(bucketLocations(bucket, shard).map { .string($0.relativePath) })])
    }

    /// `POST /shard/unfreeze`.
    func shardUnfreeze(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let shard = try adminShard(call)
        let bucket = try bucketArgument(call.request, shard, allowed: ["bucket"])
        shard.unfreeze(bucket)
        return json(shardStatus(shard))
    }

    /// `POST /shard/archive`: once the map gives the bucket away, its files here go (their copies stay in `archive/`),
    /// after the requests admitted for it before the map changed: a read among them would open, and so create,
    /// a file just removed.
    func shardArchive(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let shard = try adminShard(call)
        let bucket = try bucketArgument(call.request, shard, allowed: ["bucket"])
        guard shard.map.owners[bucket] != shard.name else {
            throw Problem(.bucketOwned, "bucket \(bucket) is still this shard's in its map (epoch \(shard.map.epoch)); reload the map once the move is committed")
        }
        do {
            try shard.drain(bucket, timeout: .seconds(5))
        } catch {
            switch error {
            case .storageFailed(let detail), .busy(let detail): throw Problem(.busy, detail)
            }
        }
        let removed = try removeFiles(of: bucket, shard)
        if engine.configuration.userJournal == .wal {
            // Litestream, which replicates WAL files, sets a database it has just found up by opening its path
            // (once a second): a file removed just then is made again, empty. While it is still frozen here,
            // the bucket's files are looked for again for a moment, and any that came back are removed.
            let deadline = ContinuousClock.now + Self.recreationWindow
            while ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
                _ = try removeFiles(of: bucket, shard)
            }
        }
        shard.unfreeze(bucket)
        return json(["bucket": .integer(Int64(bucket)), "removed": .integer(Int64(removed))])
    }

    /// How long an archive of a shard whose users' files are WAL looks for its bucket's files coming back:
    /// twice Litestream's default sync interval.
    static let recreationWindow: Duration = .seconds(2)

    /// Removes every file the bucket has here, in every storage; how many.
    private func removeFiles(of bucket: Int, _ shard: Shard) throws(Problem) -> Int {
        var removed = 0
        for location in bucketLocations(bucket, shard) {
            guard case .user(let user, let storage) = location else { continue }
            do {
                removed += try engine.resetStorage(storage, user: user).databases
            } catch {
                throw Problem(.busy, "could not remove \(location): \(error)")
            }
        }
        return removed
    }

    /// Ends the change streams of spaces this shard no longer holds (a bucket moved away, the common space
    /// given to another shard), with `closing` `{"reason": "bucket_moved", "shard": owner}`: the client
    /// reconnects through the proxy, which sends it to the new owner.
    func endStreamsElsewhere(_ shard: Shard) {
        let map = shard.map
        changeStreams.end { listener in
            for location in listener.locations {
                let owner: String? = switch location {
                case .user(let user, _): map.owner(of: user.rawValue)
                case .common: map.common
                case .file: nil
                }
                if let owner, owner != shard.name {
                    return ["reason": "bucket_moved", "shard": .string(owner), "epoch": .integer(map.epoch)]
                }
            }
            return nil
        }
    }

    private func shardStatus(_ shard: Shard) -> Value {
        let map = shard.map
        return ["shard": .string(shard.name), "epoch": .integer(map.epoch), "common": .bool(map.common == shard.name),
                "buckets": .integer(Int64(map.owners.count(where: { $0 == shard.name }))),
                "frozen": .array(shard.frozenBuckets.map { .integer(Int64($0)) })]
    }

    private func bucketArgument(_ request: HTTPRequest, _ shard: Shard, allowed: [String]) throws(Problem) -> Int {
        try bucketArgument(try bodyObject(request, allowed: allowed, example: #"{"bucket": 17}"#), shard)
    }

    private func bucketArgument(_ body: OrderedObject, _ shard: Shard) throws(Problem) -> Int {
        guard case .integer(let bucket)? = body["bucket"], bucket >= 0, bucket < shard.map.buckets else {
            throw Problem(.invalidBody, "bucket is an integer from 0 to \(shard.map.buckets - 1)")
        }
        return Int(bucket)
    }

    /// The user databases of a bucket on this shard, in every storage.
    func bucketLocations(_ bucket: Int, _ shard: Shard) -> [DatabaseLocation] {
        let buckets = shard.map.buckets
        return ([nil] + engine.customStorages()).flatMap { engine.existingLocations(storage: $0) }.filter { location in
            guard case .user(let user, _) = location else { return false }
            return ShardMap.bucket(of: user.rawValue, buckets: buckets) == bucket
        }
    }

    /// `POST /shard/export`: a consistent copy of one file of a frozen bucket: `VACUUM INTO` a file under
    /// `archive/bucket-N/`, which stays as the bucket's archive here, and whose bytes are the answer.
    func shardExport(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let shard = try adminShard(call)
        let request = call.request
        let body = try bodyObject(request, allowed: ["bucket", "file"], example: #"{"bucket": 17, "file": "users/p-ann.db"}"#)
        let bucket = try bucketArgument(body, shard)
        guard shard.isFrozen(bucket) else {
            throw Problem(.bucketOwned, "bucket \(bucket) is not frozen: freeze it first (POST /shard/freeze), so that no write follows the copy")
        }
        guard case .string(let file)? = body["file"],
              let location = bucketLocations(bucket, shard).first(where: { $0.relativePath == file }) else {
            throw Problem(.notFound, "bucket \(bucket) has no such file here")
        }
        let folder = DataFolder(root: engine.configuration.dataDirectory)
        let copy = folder.archivedCopy(of: location, bucket: bucket)
        do {
            try Database.consistentCopy(of: folder.path(of: location), to: copy, configuration: engine.configuration.database)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: copy)))
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: bytes)
        } catch {
            throw Problem(.storageFailed, "cannot copy \(location): \(error)")
        }
    }

    /// Fetches a bucket's files from the shard that owns it, checks each, and installs them, replacing anything
    /// this shard had of the bucket. Refused while this shard owns the bucket.
    ///
    /// The source is the bucket's owner in the shard map, named by the map (`from`: its shard name, or the
    /// address the map gives it): the admin token goes nowhere else. Each file's download stops beyond the size
    /// cap (`--max-database-size`, else the data folder's free space, plus slack), and each file must hold only
    /// what daogate makes (`importedSchemaProblem`); every file is staged and checked before any is installed,
    /// so a refused import (422 `import_refused`) leaves this shard as it was.
    func shardImport(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let shard = try adminShard(call)
        let request = call.request
        let body = try bodyObject(request, allowed: ["bucket", "from"], example: #"{"bucket": 17, "from": "shard-a"}"#)
        let bucket = try bucketArgument(body, shard)
        let map = shard.map
        guard map.owners[bucket] != shard.name else {
            throw Problem(.bucketOwned, "bucket \(bucket) is already this shard's; an import would overwrite live files")
        }
        let owner = map.owners[bucket]
        guard case .string(let from)? = body["from"], from == owner || from == map.shards[owner] else {
            var problem = Problem(.unknownShard, "from names the shard that owns bucket \(bucket) in the shard map (epoch \(map.epoch)): \(owner), or its address \(map.shards[owner] ?? ""); an import is fetched from nowhere else")
            problem.extensions["shard"] = .string(owner)
            throw problem
        }
        let address = map.shards[owner]!
        let client = ShardClient(address: address, token: configuration.adminToken)
        let folder = DataFolder(root: engine.configuration.dataDirectory)
        let limit = importLimit(folder.root)
        var staged: [(file: String, path: String)] = []
        defer { for item in staged { try? FileManager.default.removeItem(atPath: item.path) } }
        var bytes: Int64 = 0
        do {
            for file in try client.freeze(bucket: bucket) {
                guard case .user(let user, _)? = DataFolder.location(relativePath: file),
                      map.bucket(of: user.rawValue) == bucket else {
                    throw ShardClientError("the source named a file outside bucket \(bucket): \(file.prefix(200))")
                }
                let content: ShardClient.Response
                do {
                    content = try client.export(bucket: bucket, file: file, limit: limit)
                } catch let error as ShardClientError where error.tooLarge {
                    throw Self.importRefused("\(file) is larger than \(limit) bytes, this shard's cap for one database; nothing was installed")
                }
                guard content.status == 200 else { throw ShardClientError("export of \(file) answered \(content.status)") }
                guard content.body.count <= limit else {
                    throw Self.importRefused("\(file) is \(content.body.count) bytes, more than this shard's cap of \(limit); nothing was installed")
                }
                let path = try Database.stage(content.body, in: folder.incoming, configuration: engine.configuration.database, name: file) { database in
                    if let problem = try self.importedSchemaProblem(database) {
                        throw Self.importRefused("\(file) holds \(problem), which daogate does not make; nothing was installed")
                    }
                }
                staged.append((file, path))
                bytes += Int64(content.body.count)
            }
            // Every file checked: whatever this shard still has of the bucket (an earlier, interrupted import)
            // goes, and the copies take its place.
            for case .user(let user, let storage) in bucketLocations(bucket, shard) {
                _ = try engine.resetStorage(storage, user: user)
            }
            for item in staged {
                try Database.install(staged: item.path, at: "\(folder.root)/\(item.file)")
            }
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(.moveFailed, "import of bucket \(bucket) from shard \(owner) (\(address)) failed: \(error)")
        }
        return json(["bucket": .integer(Int64(bucket)), "files": .array(staged.map { .string($0.file) }), "bytes": .integer(bytes)])
    }

    static func importRefused(_ detail: String) -> Problem { Problem(.importRefused, detail) }

    /// The most bytes one imported file may have: `--max-database-size` plus a page's slack (a database may
    /// end one write beyond the cap), else what the data folder's file system has free.
    private func importLimit(_ root: String) -> Int {
        if let cap = engine.configuration.database.maximumDatabaseBytes { return cap + 65536 }
        var info = statvfs()
        guard statvfs(root, &info) == 0 else { return 1 << 30 }
        return Int(min(UInt64(Int.max), UInt64(info.f_bavail) * UInt64(info.f_frsize)))
    }

    /// What an imported user database holds that daogate would not have made there, or nil: daogate's own
    /// tables (`TableVersions`, `daogate_…`, SQLite's `sqlite_sequence` and statistics, Litestream's `_litestream_…`), the tables of this
    /// server's modules (a module's table, or one `TableVersions` records as a module's), and indexes on
    /// those; no trigger, view, virtual table or any other table.
    func importedSchemaProblem(_ database: Database) throws -> String? {
        let recorded = try Self.recordedTables(database)
        let moduleTables = Set(engine.modules.values.compactMap { $0.isTemplate ? nil : $0.tableName?.lowercased() })
        func isAllowedTable(_ name: String) -> Bool {
            let lower = name.lowercased()
            if lower == "tableversions" || lower.hasPrefix("daogate_") { return true }
            // Litestream's bookkeeping (`_litestream_seq`, `_litestream_lock`), in every replicated file.
            if lower.hasPrefix("_litestream_") { return true }
            if ["sqlite_sequence", "sqlite_stat1", "sqlite_stat4"].contains(lower) { return true }
            if moduleTables.contains(lower) { return true }
            if let module = recorded[lower], engine.modules[module] != nil { return true }
            return false
        }
        for object in try database.schemaObjects() {
            switch object.type {
            case "table" where object.isVirtual:
                return "the virtual table \(object.name.prefix(80))"
            case "table" where !isAllowedTable(object.name):
                return "the table \(object.name.prefix(80)), which no module of this server makes"
            case "table":
                continue
            case "index" where isAllowedTable(object.table):
                continue
            default:
                return "the \(object.type.prefix(20)) \(object.name.prefix(80))"
            }
        }
        return nil
    }

    /// The tables `TableVersions` records, with the module that made each ("" when none is recorded).
    static func recordedTables(_ database: Database) throws -> [String: String] {
        let exists = try database.makeStatement("select 1 from sqlite_schema where type = 'table' and name = 'TableVersions'")
        guard try exists.step() else { return [:] }
        let statement = try database.makeStatement("select tableName, coalesce(module, '') from TableVersions")
        var tables: [String: String] = [:]
        while try statement.step() { tables[statement.string(at: 0).lowercased()] = statement.string(at: 1) }
        return tables
    }
}
