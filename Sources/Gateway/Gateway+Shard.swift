import DAODialect
import DAOEngine
import DAOValue
import Foundation
import HTTPTransport

/// What the shard of the request being answered admitted: the bucket of an admitted write, released at the end.
final class ShardTicket: @unchecked Sendable {
    var checked = false
    var writeBucket: Int?
}

/// Where a request's data lives, as HAProxy routes it (`daogate haproxy-config`) and a shard checks it.
enum ShardSpace: Equatable {
    /// No storage, or the shard's own (health, the description, the module list, admin reports).
    case anywhere
    /// The common space: common modules, bound files, `/kv/common`, common caches, a user-less purge or reset.
    case common
    /// A user's space.
    case user(String)
}

extension Gateway {
    @TaskLocal static var shardTicket: ShardTicket?

    /// `respond(to:)` on a shard: each request gets a ticket, and an admitted write is released when it is answered.
    func respondAsShard(_ request: HTTPRequest, _ shard: Shard) -> HTTPResponse {
        let ticket = ShardTicket()
        defer { if let bucket = ticket.writeBucket { shard.finish(bucket: bucket) } }
        return Self.$shardTicket.withValue(ticket) {
            guard case .jwt = configuration.authentication else { return answer(request) }
            return Self.$requestCaller.withValue(CallerMemo()) { answer(request) }
        }
    }

    /// The ownership hook, where the caller is resolved: on a shard, a request for a space another shard owns
    /// is a 421 `misdirected_request` before anything is opened or created; a write to a bucket being moved, and
    /// any request for a bucket this shard gave away moments ago, is a 503 `bucket_moving` with `Retry-After`. A transaction is checked by its first call's database (`admitTransaction`).
    func admitToShard(_ caller: Caller, _ request: HTTPRequest) throws(Problem) {
        guard let shard = configuration.shard, let ticket = Self.shardTicket, !ticket.checked else { return }
        guard let parts = try? Router.pathSegments(request.path) else { return }
        try admit(shardSpace(parts, request, caller), write: isWrite(parts, request), shard, ticket)
    }

    /// A transaction's space is its first call's database (the shard refuses one the proxy sent to the wrong
    /// shard: HAProxy routes `/transaction` by `X-Space: common`, else by the user).
    func admitTransaction(_ calls: [Call], _ context: CallContext) throws(Problem) {
        guard let shard = configuration.shard, let ticket = Self.shardTicket, !ticket.checked,
              let first = calls.first, let module = engine.modules[first.module],
              let location = try? engine.location(of: module, context: context) else { return }
        let space: ShardSpace = if case .user(let user, _) = location { .user(user.rawValue) } else { .common }
        try admit(space, write: true, shard, ticket)
    }

    private func admit(_ space: ShardSpace, write: Bool, _ shard: Shard, _ ticket: ShardTicket) throws(Problem) {
        var bucket: Int?
        let admission: Shard.Admission
        switch space {
        case .anywhere: return  // nothing to check yet: a transaction is checked by its calls' database
        case .common: admission = shard.admitCommon()
        case .user(let user):
            let at = ShardMap.bucket(of: user, buckets: shard.map.buckets)
            bucket = at
            admission = shard.admit(bucket: at, write: write)
        }
        switch admission {
        case .admitted:
            ticket.checked = true
            if write { ticket.writeBucket = bucket }
        case .misdirected(let owner, let epoch):
            let what = bucket.map { "this user's bucket \($0)" } ?? "the common space"
            var problem = Problem(.misdirectedRequest, "\(what) belongs to shard \(owner) (shard map epoch \(epoch)), not to shard \(shard.name); nothing was read or created here")
            if let bucket { problem.extensions["bucket"] = .integer(Int64(bucket)) }
            problem.extensions["shard"] = .string(owner)
            problem.extensions["epoch"] = .integer(epoch)
            throw problem
        case .handedOver(let owner, let epoch):
            var problem = Problem(.bucketMoving, "this user's bucket \(bucket ?? 0) moved to shard \(owner) moments ago (shard map epoch \(epoch)); nothing was read or created here: try again, the proxy now sends it there")
            problem.extensions["bucket"] = .integer(Int64(bucket ?? 0))
            problem.extensions["shard"] = .string(owner)
            problem.extensions["epoch"] = .integer(epoch)
            problem.headers = [("Retry-After", "1")]
            throw problem
        case .frozen:
            var problem = Problem(.bucketMoving, "this user's bucket \(bucket ?? 0) is moving to another shard: reads go on, writes wait; try again")
            problem.extensions["bucket"] = .integer(Int64(bucket ?? 0))
            problem.headers = [("Retry-After", "1")]
            throw problem
        }
    }

    /// The first path segments of the routes that reach no user's space: the shard's own reports and
    /// operations, the description, the module list, `/storage/usage` (this shard's files), and `/transaction`
    /// (checked by its first call's database, `admitTransaction`). Any other route with a user is admitted by
    /// that user's bucket (`shardSpace`), so a route added later is too.
    static let shardWideRoots: Set<String> = ["transaction", "modules", "healthz", "openapi.json", "events", "admin",
                                              "metrics", "shard", "storages", "storage", "docs"]

    /// The space a request reaches, from what HAProxy sees too: the module or space in the path, the user.
    func shardSpace(_ parts: [String], _ request: HTTPRequest, _ caller: Caller) -> ShardSpace {
        func byModule(_ name: String) -> ShardSpace {
            guard let module = engine.modules[name] else { return .anywhere }
            guard module.userDependent, module.database == nil else { return .common }
            return caller.user.map { .user($0.rawValue) } ?? .anywhere
        }
        func bySpace(_ space: String) -> ShardSpace {
            switch space {
            case "common": .common
            case "user": caller.user.map { .user($0.rawValue) } ?? .anywhere
            default: .anywhere
            }
        }
        switch parts.first {
        case "dao" where parts.count == 3: return byModule(parts[1])
        case "modules" where parts.count >= 2: return byModule(parts[1])
        case "kv" where parts.count >= 2: return bySpace(parts[1])
        case "lru" where parts.count >= 3: return bySpace(parts[2])
        case "storage" where parts.count == 2 && parts[1] != "usage":
            return caller.user.map { .user($0.rawValue) } ?? .common
        case "changes" where parts.count == 1:
            // A stream follows one space on a shard: the user's, or the common one when asked (or without a user).
            let common = request.query.contains { $0.name == "space" && $0.value == "common" }
            return common ? .common : caller.user.map { .user($0.rawValue) } ?? .common
        case let first? where Self.shardWideRoots.contains(first):
            return .anywhere
        default:
            // Any other route with a user reaches that user's space: admitted by their bucket.
            return caller.user.map { .user($0.rawValue) } ?? .anywhere
        }
    }

    /// Whether a request may write: anything but GET and HEAD, and a method call that is not a select.
    func isWrite(_ parts: [String], _ request: HTTPRequest) -> Bool {
        if request.method == "GET" || request.method == "HEAD" { return false }
        if parts.first == "dao", parts.count == 3, let module = engine.modules[parts[1]],
           let method = module.method(named: parts[2]) {
            return method.kind != .select
        }
        return true
    }

    // MARK: The shard's admin operations

    /// `/shard…`: the admin operations of a move (`daogate move-bucket` drives them).
    ///
    /// | route | what |
    /// |---|---|
    /// | `GET /shard` | name, map epoch, frozen buckets |
    /// | `POST /shard/reload` | read the shard map again |
    /// | `POST /shard/freeze` | `{"bucket"}`: refuse its writes (503), wait for those in flight; its files |
    /// | `POST /shard/unfreeze` | `{"bucket"}`: let its writes in again (a move abandoned) |
    /// | `POST /shard/export` | `{"bucket", "file"}`: a consistent copy of a frozen bucket's file (`VACUUM INTO`), kept as its archive |
    /// | `POST /shard/import` | `{"bucket", "from"}`: fetch a bucket's files from its owner in the map (`from` names it), check them (size, `integrity_check`, only daogate's objects), install them |
    /// | `POST /shard/archive` | `{"bucket"}`: once the map gives the bucket away, remove its files here (their copies stay in `archive/`) |
    func shardRoute(_ request: HTTPRequest, _ rest: ArraySlice<String>) throws(Problem) -> HTTPResponse {
        let operation = rest.first ?? ""
        try authorizeAdmin(request)
        guard let shard = configuration.shard else {
            throw Problem(.notAShard, "this server runs without --shard; it has no shard operations")
        }
        switch operation {
        case "":
            return json(shardStatus(shard))
        case "reload":
            do {
                try shard.reload()
            } catch {
                throw Problem(.storageFailed, error.description)
            }
            endStreamsElsewhere(shard)
            return json(shardStatus(shard))
        case "freeze":
            let bucket = try bucketArgument(request, shard, allowed: ["bucket"])
            try shard.freeze(bucket, timeout: .seconds(10))
            return json(["bucket": .integer(Int64(bucket)), "files": .array(bucketLocations(bucket, shard).map { .string($0.relativePath) })])
        case "unfreeze":
            let bucket = try bucketArgument(request, shard, allowed: ["bucket"])
            shard.unfreeze(bucket)
            return json(shardStatus(shard))
        case "export":
            return try export(request, shard)
        case "import":
            return try importBucket(request, shard)
        case "archive":
            let bucket = try bucketArgument(request, shard, allowed: ["bucket"])
            guard shard.map.owners[bucket] != shard.name else {
                throw Problem(.bucketOwned, "bucket \(bucket) is still this shard's in its map (epoch \(shard.map.epoch)); reload the map once the move is committed")
            }
            var removed = 0
            for location in bucketLocations(bucket, shard) {
                guard case .user(let user, let storage) = location else { continue }
                do {
                    removed += try engine.resetStorage(storage, user: user).databases
                } catch {
                    throw Problem(.busy, "could not remove \(location): \(error)")
                }
            }
            shard.unfreeze(bucket)
            return json(["bucket": .integer(Int64(bucket)), "removed": .integer(Int64(removed))])
        default:
            throw Problem(.notFound, "no shard operation '\(operation.prefix(40))'")
        }
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
    func bucketLocations(_ bucket: Int, _ shard: Shard) -> [StorageLocation] {
        let buckets = shard.map.buckets
        return ([nil] + engine.customStorages()).flatMap { engine.existingLocations(storage: $0) }.filter { location in
            guard case .user(let user, _) = location else { return false }
            return ShardMap.bucket(of: user.rawValue, buckets: buckets) == bucket
        }
    }

    /// A consistent copy of one file of a frozen bucket: `VACUUM INTO` a file under `archive/bucket-N/`, which
    /// stays as the bucket's archive here, and whose bytes are the answer.
    private func export(_ request: HTTPRequest, _ shard: Shard) throws(Problem) -> HTTPResponse {
        let body = try bodyObject(request, allowed: ["bucket", "file"], example: #"{"bucket": 17, "file": "users/p-ann.db"}"#)
        let bucket = try bucketArgument(body, shard)
        guard shard.isFrozen(bucket) else {
            throw Problem(.bucketOwned, "bucket \(bucket) is not frozen: freeze it first (POST /shard/freeze), so that no write follows the copy")
        }
        guard case .string(let file)? = body["file"],
              let location = bucketLocations(bucket, shard).first(where: { $0.relativePath == file }) else {
            throw Problem(.notFound, "bucket \(bucket) has no such file here")
        }
        let root = engine.configuration.dataDirectory
        let copy = "\(root)/archive/bucket-\(bucket)/\(location.relativePath)"
        do {
            try ShardFiles.consistentCopy(of: "\(root)/\(location.relativePath)", to: copy, configuration: engine.configuration.database)
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
    private func importBucket(_ request: HTTPRequest, _ shard: Shard) throws(Problem) -> HTTPResponse {
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
        let root = engine.configuration.dataDirectory
        let staging = "\(root)/shard/incoming"
        let limit = importLimit(root)
        var staged: [(file: String, path: String)] = []
        defer { for item in staged { try? FileManager.default.removeItem(atPath: item.path) } }
        var bytes: Int64 = 0
        do {
            let frozen = try client.json("POST", "/shard/freeze", ["bucket": .integer(Int64(bucket))])
            guard case .array(let files)? = frozen[member: "files"] else { throw ShardClientError("the source listed no files") }
            for case .string(let file) in files {
                guard let location = Self.userLocation(relativePath: file),
                      ShardMap.bucket(of: location.user.rawValue, buckets: map.buckets) == bucket else {
                    throw ShardClientError("the source named a file outside bucket \(bucket): \(file.prefix(200))")
                }
                let content: ShardClient.Response
                do {
                    content = try client.request("POST", "/shard/export", body: Value.object(["bucket": .integer(Int64(bucket)), "file": .string(file)]).jsonBytes(), limit: limit)
                } catch let error as ShardClientError where error.tooLarge {
                    throw Self.importRefused("\(file) is larger than \(limit) bytes, this shard's cap for one database; nothing was installed")
                }
                guard content.status == 200 else { throw ShardClientError("export of \(file) answered \(content.status)") }
                guard content.body.count <= limit else {
                    throw Self.importRefused("\(file) is \(content.body.count) bytes, more than this shard's cap of \(limit); nothing was installed")
                }
                let path = try ShardFiles.stage(content.body, in: staging, configuration: engine.configuration.database, name: file) { database in
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
                try ShardFiles.install(staged: item.path, at: "\(root)/\(item.file)")
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
        let recorded = try ShardFiles.recordedTables(database)
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
        for object in try ShardFiles.schemaObjects(database) {
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

    /// The user and storage of a user database's relative path (`users/p-ann.db`, `storages/S/users/x-….db`).
    static func userLocation(relativePath: String) -> (user: UserID, storage: String?)? {
        let parts = relativePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let name = parts.last, name.hasSuffix(".db"), let user = UserID(fileName: String(name.dropLast(3))) else { return nil }
        if parts.count == 2, parts[0] == "users" { return (user, nil) }
        if parts.count == 4, parts[0] == "storages", parts[2] == "users", storageNameProblem(parts[1]) == nil { return (user, parts[1]) }
        return nil
    }
}
