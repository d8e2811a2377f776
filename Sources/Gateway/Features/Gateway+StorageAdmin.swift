import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport

/// Cleanup and storages:
///
/// | route | what |
/// |---|---|
/// | `POST /storage/purge` | remove purgeable KV entries and expired cache entries; say what was freed |
/// | `POST /storage/reset` | remove a storage's databases and memory caches; `{"all": true}`: a user's in every storage |
/// | `GET /storages` | the custom storages that have files (admin) |
/// | `GET /storage/usage` | users' databases and their bytes on disk, largest first, and the limits (admin) |
///
/// Purge and reset work on the storage `X-Storage` names (the default one
/// without it): with `X-User-Id` on that user's database only, which the
/// caller may do to their own; without, on the whole storage, which needs
/// the admin token.
extension Gateway {
    /// The caller of a purge or reset: their own database with `X-User-Id`; else the whole storage, the admin's.
    private func cleanupCaller(_ call: RouteCall) throws(Problem) -> Caller {
        let caller = try caller(call)
        if caller.user == nil { try authorizeAdmin(call) }
        return caller
    }

    /// `POST /storage/purge`.
    func purgeStorage(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let caller = try cleanupCaller(call)
        return json(try storage { try purge(storage: caller.storage, user: caller.user).value })
    }

    /// `POST /storage/reset`; with the body `{"all": true}`, every storage of the `X-User-Id` user at once.
    func resetStorage(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let caller = try cleanupCaller(call)
        if !call.request.body.isEmpty {
            let example = #"{"all": true} (with X-User-Id)"#
            let body = try bodyObject(call.request, allowed: ["all"], example: example)
            switch body["all"] {
            case nil, .bool(false)?: break  // one storage, as with no body
            case .bool(true)?: return try resetEverywhere(call.request, caller)
            default: throw Problem(.invalidBody, "all is true or false: \(example)")
            }
        }
        return try storage {
            let report = try engine.resetStorage(caller.storage, user: caller.user)
            let caches = memoryCaches.drop(storage: caller.storage, user: caller.user)
            return json(["databases": .integer(Int64(report.databases)), "bytes": .integer(report.bytes),
                         "memoryCaches": .integer(Int64(caches))])
        }
    }

    /// Every storage of one user, all or nothing (`Engine.resetUserEverywhere`), and their memory caches;
    /// an `X-Storage` sent with it changes nothing: all is all.
    private func resetEverywhere(_ request: HTTPRequest, _ caller: Caller) throws(Problem) -> HTTPResponse {
        guard let user = caller.user else {
            throw Problem(.userRequired, "a reset of every storage is one user's: send X-User-Id")
        }
        return try storage {
            let storages = [nil] + engine.customStorages()
            let report = try engine.resetUserEverywhere(user)
            let caches = storages.reduce(0) { $0 + memoryCaches.drop(storage: $1, user: user) }
            return json(["databases": .integer(Int64(report.databases)), "bytes": .integer(report.bytes),
                         "memoryCaches": .integer(Int64(caches))])
        }
    }

    /// `GET /storage/usage`: every user's databases (of every storage; with `X-User-Id`, that user's only), largest first, and the cap.
    func usage(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        try authorizeAdmin(call)
        let only = try caller(call).user
        var databases: [Value] = []
        var total: Int64 = 0
        for (location, bytes) in engine.userDatabaseUsage().sorted(by: { $0.bytes > $1.bytes }) {
            guard case .user(let user, let storage) = location, only == nil || only == user else { continue }
            total += bytes
            databases.append(["user": .string(user.rawValue), "storage": storage.map(Value.string) ?? .null, "bytes": .integer(bytes)])
        }
        let limits = engine.configuration
        func number(_ limit: Int?) -> Value { limit.map { .integer(Int64($0)) } ?? .null }
        return json(["maximumDatabaseBytes": number(limits.database.maximumDatabaseBytes),
                     "maximumCommonBytes": number(limits.maximumCommonBytes),
                     "maximumStoragesPerUser": number(limits.maximumStoragesPerUser),
                     "totalBytes": .integer(total), "databases": .array(databases)])
    }

    /// `GET /storages`.
    func storages(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        try authorizeAdmin(call)
        return json(["storages": .array(engine.customStorages().map(Value.string)),
                     "currentVersion": .string(Engine.currentVersionStorage)])
    }

    /// What a purge freed, by layer.
    struct PurgeReport {
        var databases = 0
        var kv = (entries: 0, bytes: 0)
        var disk = (entries: 0, bytes: 0)
        var memory = (entries: 0, bytes: 0)

        var value: Value {
            func counts(_ freed: (entries: Int, bytes: Int)) -> Value {
                ["entries": .integer(Int64(freed.entries)), "bytes": .integer(Int64(freed.bytes))]
            }
            return ["databases": .integer(Int64(databases)), "kv": counts(kv), "diskCaches": counts(disk),
                    "memoryCaches": counts(memory)]
        }
    }

    /// Purges one user's database of a storage, or every database of it.
    func purge(storage: String?, user: UserID?) throws -> PurgeReport {
        var report = PurgeReport()
        let locations = user.map { [DatabaseLocation.user($0, storage: storage)] } ?? engine.existingLocations(storage: storage)
        for location in locations where user == nil || engine.exists(location) {
            let kv = try self.kv.purge(in: location)
            let disk = try diskCaches.purgeExpired(in: location)
            report.databases += 1
            report.kv.entries += kv.entries
            report.kv.bytes += kv.bytes
            report.disk.entries += disk.entries
            report.disk.bytes += disk.bytes
        }
        report.memory = memoryCaches.purgeExpired(storage: storage, user: user, now: clock.now())
        return report
    }
}
