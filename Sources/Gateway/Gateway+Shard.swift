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

    /// The problem codes of sharding, with their statuses.
    static let shardCodes: [String: Int] = ["misdirected_request": 421, "bucket_moving": 503, "not_a_shard": 404,
                                            "bucket_owned": 409, "move_failed": 502]

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
            var problem = Problem(421, "misdirected_request", "\(what) belongs to shard \(owner) (shard map epoch \(epoch)), not to shard \(shard.name); nothing was read or created here")
            if let bucket { problem.extensions["bucket"] = .integer(Int64(bucket)) }
            problem.extensions["shard"] = .string(owner)
            problem.extensions["epoch"] = .integer(epoch)
            throw problem
        case .handedOver(let owner, let epoch):
            var problem = Problem(503, "bucket_moving", "this user's bucket \(bucket ?? 0) moved to shard \(owner) moments ago (shard map epoch \(epoch)); nothing was read or created here: try again, the proxy now sends it there")
            problem.extensions["bucket"] = .integer(Int64(bucket ?? 0))
            problem.extensions["shard"] = .string(owner)
            problem.extensions["epoch"] = .integer(epoch)
            problem.headers = [("Retry-After", "1")]
            throw problem
        case .frozen:
            var problem = Problem(503, "bucket_moving", "this user's bucket \(bucket ?? 0) is moving to another shard: reads go on, writes wait; try again")
            problem.extensions["bucket"] = .integer(Int64(bucket ?? 0))
            problem.headers = [("Retry-After", "1")]
            throw problem
        }
    }

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
        default: return .anywhere
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
    /// | `POST /shard/import` | `{"bucket", "from"}`: fetch a bucket's files from its shard, check them (`integrity_check`), install them |
    /// | `POST /shard/archive` | `{"bucket"}`: once the map gives the bucket away, remove its files here (their copies stay in `archive/`) |
    func shardRoute(_ request: HTTPRequest, _ rest: ArraySlice<String>) throws(Problem) -> HTTPResponse {
        let operation = rest.first ?? ""
        try authorizeAdmin(request)
        guard let shard = configuration.shard else {
            throw Problem(404, "not_a_shard", "this server runs without --shard; it has no shard operations")
        }
        switch operation {
        case "":
            return json(shardStatus(shard))
        case "reload":
            do {
                try shard.reload()
            } catch {
                throw Problem(500, "storage_failed", error.description)
            }
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
                throw Problem(409, "bucket_owned", "bucket \(bucket) is still this shard's in its map (epoch \(shard.map.epoch)); reload the map once the move is committed")
            }
            var removed = 0
            for location in bucketLocations(bucket, shard) {
                guard case .user(let user, let storage) = location else { continue }
                do {
                    removed += try engine.resetStorage(storage, user: user).databases
                } catch {
                    throw Problem(503, "busy", "could not remove \(location): \(error)")
                }
            }
            shard.unfreeze(bucket)
            return json(["bucket": .integer(Int64(bucket)), "removed": .integer(Int64(removed))])
        default:
            throw Problem(404, "not_found", "no shard operation '\(operation.prefix(40))'")
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
            throw Problem(400, "invalid_body", "bucket is an integer from 0 to \(shard.map.buckets - 1)")
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
            throw Problem(409, "bucket_owned", "bucket \(bucket) is not frozen: freeze it first (POST /shard/freeze), so that no write follows the copy")
        }
        guard case .string(let file)? = body["file"],
              let location = bucketLocations(bucket, shard).first(where: { $0.relativePath == file }) else {
            throw Problem(404, "not_found", "bucket \(bucket) has no such file here")
        }
        let root = engine.configuration.dataDirectory
        let copy = "\(root)/archive/bucket-\(bucket)/\(location.relativePath)"
        do {
            try ShardFiles.consistentCopy(of: "\(root)/\(location.relativePath)", to: copy, configuration: engine.configuration.database)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: copy)))
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: bytes)
        } catch {
            throw Problem(500, "storage_failed", "cannot copy \(location): \(error)")
        }
    }

    /// Fetches a bucket's files from the shard that owns it, checks each, and installs them, replacing anything
    /// this shard had of the bucket. Refused while this shard owns the bucket.
    private func importBucket(_ request: HTTPRequest, _ shard: Shard) throws(Problem) -> HTTPResponse {
        let body = try bodyObject(request, allowed: ["bucket", "from"], example: #"{"bucket": 17, "from": "10.0.0.2:8080"}"#)
        let bucket = try bucketArgument(body, shard)
        guard case .string(let from)? = body["from"] else { throw Problem(400, "invalid_body", "from is the source shard's host:port") }
        guard shard.map.owners[bucket] != shard.name else {
            throw Problem(409, "bucket_owned", "bucket \(bucket) is already this shard's; an import would overwrite live files")
        }
        let client = ShardClient(address: from, token: configuration.adminToken)
        let root = engine.configuration.dataDirectory
        var installed: [Value] = []
        var bytes: Int64 = 0
        do {
            let frozen = try client.json("POST", "/shard/freeze", ["bucket": .integer(Int64(bucket))])
            guard case .array(let files)? = frozen[member: "files"] else { throw ShardClientError("the source listed no files") }
            // Whatever this shard still has of the bucket (an earlier, interrupted import) goes first.
            for case .user(let user, let storage) in bucketLocations(bucket, shard) {
                _ = try engine.resetStorage(storage, user: user)
            }
            for case .string(let file) in files {
                guard let location = Self.userLocation(relativePath: file),
                      ShardMap.bucket(of: location.user.rawValue, buckets: shard.map.buckets) == bucket else {
                    throw ShardClientError("the source named a file outside bucket \(bucket): \(file.prefix(200))")
                }
                let content = try client.request("POST", "/shard/export", body: Value.object(["bucket": .integer(Int64(bucket)), "file": .string(file)]).jsonBytes())
                guard content.status == 200 else { throw ShardClientError("export of \(file) answered \(content.status)") }
                try ShardFiles.install(content.body, at: "\(root)/\(file)", staging: "\(root)/shard/incoming", configuration: engine.configuration.database)
                installed.append(.string(file))
                bytes += Int64(content.body.count)
            }
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(502, "move_failed", "import of bucket \(bucket) from \(from) failed: \(error)")
        }
        return json(["bucket": .integer(Int64(bucket)), "files": .array(installed), "bytes": .integer(bytes)])
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
