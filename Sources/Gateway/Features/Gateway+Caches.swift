import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport

/// The LRU caches over HTTP: `{kind}` is `memory` (APLRUMemoryCache, in the
/// server's memory) or `disk` (APLRUDiskCache, a table of the space's
/// database); `{space}` is `common` or `user`, in the storage `X-Storage` names.
///
/// | route | what |
/// |---|---|
/// | `GET /lru/{kind}/{space}` | the space's caches |
/// | `PUT /lru/{kind}/{space}/{cache}` | create or resize: `{"capacity": N}` (disk: `"encrypted"`, `"maxAge"`, `"maxBytes"`) |
/// | `GET`, `DELETE /lru/{kind}/{space}/{cache}` | the cache's capacity and count; delete it |
/// | `GET /lru/{kind}/{space}/{cache}/entries/{key}` | the value (touches recency) |
/// | `PUT /lru/{kind}/{space}/{cache}/entries/{key}` | `{"value": V, "expire": timestamp}` |
/// | `DELETE /lru/{kind}/{space}/{cache}/entries/{key}` | remove one |
/// | `POST /lru/{kind}/{space}/{cache}/entries` | batch add: `{"entries": {"key": value, …}}` |
/// | `DELETE /lru/{kind}/{space}/{cache}/entries` | remove all |
/// | `POST /lru/{kind}/{space}/{cache}/remove` | `{"keys": […]}`, memory: `{"prefix"}`, `{"suffix"}`, `{"regex"}`; disk: `{"like"}` |
/// | `GET /lru/memory/{space}/{cache}/exists/{key}` | whether a key is there, without touching recency |
/// | `GET /lru/memory/{space}/{cache}/peek?count=N&from=head\|tail` | entries without touching recency |
extension Gateway {
    enum CacheKind: String, CaseIterable {
        case memory
        case disk
    }

    /// The cache a call names, where: its kind, name and location (the caller's, from the headers).
    private func cacheScope(_ call: RouteCall) throws(Problem) -> (kind: CacheKind, name: String, location: DatabaseLocation) {
        let location = try databaseLocation(space: call.parameters.space, call)
        return (call.parameters.kind, call.parameters.cache, location)
    }

    /// `GET /lru/{kind}/{space}`: the space's caches.
    func cacheList(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let location = try databaseLocation(space: call.parameters.space, call)
        return try storage { json(["caches": .array(try cacheList(call.parameters.kind, location))]) }
    }

    /// `DELETE /lru/{kind}/{space}/{cache}/entries`.
    func removeAllEntries(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        return try storage { json(["removed": .integer(Int64(try removeAll(kind, name, location)))]) }
    }

    /// `GET /lru/memory/{space}/{cache}/exists/{key}`: without touching recency.
    func cacheEntryExists(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let location = try databaseLocation(space: call.parameters.space, call)
        return try storage {
            json(["exists": .bool(try memoryCaches.cache(call.parameters.cache, in: location).exists(call.parameters.key, now: clock.now()))])
        }
    }

    // MARK: Caches

    private func cacheList(_ kind: CacheKind, _ location: DatabaseLocation) throws -> [Value] {
        switch kind {
        case .memory:
            return memoryCaches.list(in: location).map {
                ["name": .string($0.name), "capacity": .integer(Int64($0.capacity)), "count": .integer(Int64($0.count))]
            }
        case .disk:
            return try diskCaches.list(in: location).map(Self.diskInfo)
        }
    }

    private static func diskInfo(_ info: DiskCacheInfo) -> Value {
        ["name": .string(info.name), "capacity": .integer(Int64(info.capacity)), "count": .integer(Int64(info.count)),
         "encrypted": .bool(info.encrypted), "maxAge": info.maxAge.map { Int64(exactly: $0).map(Value.integer) ?? .double($0) } ?? .null,
         "maxBytes": info.maxBytes.map { .integer(Int64($0)) } ?? .null]
    }

    /// `PUT /lru/{kind}/{space}/{cache}`: create or resize.
    func createCache(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        let body = try bodyObject(call.request, allowed: kind == .memory ? ["capacity"] : ["capacity", "encrypted", "maxAge", "maxBytes"],
                                  example: kind == .memory ? #"{"capacity": 100}"# : #"{"capacity": 100, "encrypted": false, "maxAge": 86400, "maxBytes": 1048576}"#)
        // JSON Schema counts 10.0 as an integer, so daogate does too.
        let size: Int
        switch body["capacity"] {
        case .integer(let capacity)?: size = Int(capacity)
        case .double(let capacity)? where Int(exactly: capacity) != nil: size = Int(capacity)
        default: throw Problem(.invalidValue, "capacity is a positive integer")
        }
        let encrypted = try flag(body["encrypted"], "encrypted")
        let maxAge: Double?
        switch body["maxAge"] {
        case nil, .null?: maxAge = nil
        case .integer(let seconds)? where seconds >= 0: maxAge = Double(seconds)
        case .double(let seconds)? where seconds.isFinite && seconds >= 0: maxAge = seconds
        default: throw Problem(.invalidValue, "maxAge is a number of seconds (0: never), or null for the server's purge age")
        }
        let maxBytes: Int?
        switch body["maxBytes"] {
        case nil, .null?: maxBytes = nil
        case .integer(let bytes)? where bytes >= 1: maxBytes = Int(bytes)
        case .double(let bytes)? where bytes >= 1 && bytes < 9e18 && Int(exactly: bytes) != nil: maxBytes = Int(bytes)
        default: throw Problem(.invalidValue, "maxBytes is a positive integer, or null for no bound")
        }
        return try storage {
            switch kind {
            case .memory:
                let (cache, created, evicted) = try memoryCaches.create(name, in: location, capacity: size)
                let info = cache.info
                return json(["name": .string(name), "capacity": .integer(Int64(info.capacity)), "count": .integer(Int64(info.count)),
                             "created": .bool(created), "evicted": .integer(Int64(evicted))])
            case .disk:
                let (info, created, evicted) = try diskCaches.create(name, in: location, capacity: size, encrypted: encrypted,
                                                                     maxAge: maxAge, maxBytes: maxBytes)
                guard case .object(var members) = Self.diskInfo(info) else { return json(.null) }
                members["created"] = .bool(created)
                members["evicted"] = .integer(Int64(evicted))
                return json(.object(members))
            }
        }
    }

    /// `DELETE /lru/{kind}/{space}/{cache}`.
    func deleteCache(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        return try storage {
            let deleted = switch kind {
            case .memory: memoryCaches.delete(name, in: location)
            case .disk: try diskCaches.delete(name, in: location)
            }
            return json(["deleted": .bool(deleted)])
        }
    }

    /// `GET /lru/{kind}/{space}/{cache}`: its capacity and count.
    func cacheInfo(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        return try storage {
            switch kind {
            case .memory:
                let info = try memoryCaches.cache(name, in: location).info
                return json(["name": .string(name), "capacity": .integer(Int64(info.capacity)), "count": .integer(Int64(info.count))])
            case .disk:
                return json(Self.diskInfo(try diskCaches.info(name, in: location)))
            }
        }
    }

    // MARK: Entries

    /// `PUT /lru/{kind}/{space}/{cache}/entries/{key}`.
    func setCacheEntry(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        let key = call.parameters.key
        let body = try bodyObject(call.request, allowed: ["value", "expire"], example: #"{"value": …, "expire": 1767225600}"#)
        guard let value = body["value"] else { throw Problem(.invalidBody, "the body needs a value (null removes the key)") }
        let expire = try expiry(body["expire"])
        return try storage {
            let evicted = switch kind {
            case .memory:
                try memoryCaches.cache(name, in: location).set(key, value, expire: expire, now: clock.now())
            case .disk:
                try diskCaches.set(name, in: location, key: key, value: value, expire: expire)
            }
            return json(["ok": true, "evicted": .integer(Int64(evicted))])
        }
    }

    /// `DELETE /lru/{kind}/{space}/{cache}/entries/{key}`.
    func removeCacheEntry(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        let key = call.parameters.key
        return try storage {
            let removed = switch kind {
            case .memory: try memoryCaches.cache(name, in: location).remove(key)
            case .disk: try diskCaches.remove(name, in: location, key: key)
            }
            return json(["deleted": .bool(removed)])
        }
    }

    /// `GET /lru/{kind}/{space}/{cache}/entries/{key}`: the value (touches recency).
    func cacheEntry(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        let key = call.parameters.key
        return try storage {
            let value = switch kind {
            case .memory: try memoryCaches.cache(name, in: location).get(key, now: clock.now())
            case .disk: try diskCaches.get(name, in: location, key: key)
            }
            guard let value else { throw KeyValueError(.keyNotFound, "no entry under '\(key.prefix(200))' (or it expired)") }
            var body = Array(#"{"value":"#.utf8)
            body.reserveCapacity(64)
            value.writeJSON(to: &body, options: call.encoding)
            body.append(UInt8(ascii: "}"))
            return HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body)
        }
    }

    /// `POST /lru/{kind}/{space}/{cache}/entries`: batch add.
    func addEntries(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        let body = try bodyObject(call.request, allowed: ["entries"], example: #"{"entries": {"key": value, …}}"#)
        guard case .object(let members)? = body["entries"] else {
            throw Problem(.invalidBody, "entries is an object of key → value")
        }
        let entries = members.map { (key: $0.key, value: $0.value) }
        return try storage {
            let evicted: Int
            switch kind {
            case .memory:
                for entry in entries { try Names.checkKey(entry.key) }
                evicted = try memoryCaches.cache(name, in: location).add(entries, now: clock.now())
            case .disk:
                evicted = try diskCaches.add(name, in: location, entries: entries)
            }
            return json(["added": .integer(Int64(entries.count)), "evicted": .integer(Int64(evicted))])
        }
    }

    private func removeAll(_ kind: CacheKind, _ name: String, _ location: DatabaseLocation) throws -> Int {
        switch kind {
        case .memory: try memoryCaches.cache(name, in: location).removeAll()
        case .disk: try diskCaches.removeAll(name, in: location)
        }
    }

    /// `POST /lru/{kind}/{space}/{cache}/remove`: by keys, or memory: a prefix, suffix or regex; disk: LIKE.
    func removeEntries(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let (kind, name, location) = try cacheScope(call)
        let request = call.request
        let ways = kind == .memory ? ["keys", "prefix", "suffix", "regex", "all"] : ["keys", "like", "escape", "all"]
        let body = try bodyObject(request, allowed: ways, example: kind == .memory ? #"{"prefix": "news/"}"# : #"{"like": "news/%"}"#)
        let chosen = body.keys.filter { $0 != "escape" }
        guard chosen.count == 1, let way = chosen.first else {
            throw Problem(.invalidBody, "name one way to remove: \(ways.filter { $0 != "escape" }.joined(separator: ", "))")
        }
        let argument = body[way]!
        func text() throws(Problem) -> String {
            guard case .string(let text) = argument else { throw Problem(.invalidValue, "\(way) is a string") }
            return text
        }
        let removed: Int
        switch way {
        case "all":
            guard argument == true else { throw Problem(.invalidValue, #"all is true ({"all": true})"#) }
            removed = try storage { try removeAll(kind, name, location) }
        case "keys":
            guard case .array(let elements) = argument else { throw Problem(.invalidValue, "keys is an array of strings") }
            var keys: [String] = []
            for element in elements {
                guard case .string(let key) = element else { throw Problem(.invalidValue, "keys is an array of strings") }
                do {
                    try Names.checkKey(key)
                } catch {
                    throw Problem(error)
                }
                keys.append(key)
            }
            removed = try storage {
                switch kind {
                case .memory: return try memoryCaches.cache(name, in: location).remove(keys: keys)
                case .disk: return try diskCaches.remove(name, in: location, keys: keys)
                }
            }
        case "like":
            let pattern = try text()
            var escape: Unicode.Scalar?
            if let given = body["escape"] {
                guard case .string(let text) = given, text.unicodeScalars.count == 1 else {
                    throw Problem(.invalidValue, "escape is one character")
                }
                escape = text.unicodeScalars.first
            }
            removed = try storage { try diskCaches.remove(name, in: location, like: pattern, escape: escape) }
        default:
            let text = try text()
            removed = try storage {
                let cache = try memoryCaches.cache(name, in: location)
                switch way {
                case "prefix": return cache.remove(prefix: text)
                case "suffix": return cache.remove(suffix: text)
                default: return try cache.remove(matching: try CallerRegex(text))
                }
            }
        }
        return json(["removed": .integer(Int64(removed))])
    }

    /// `GET /lru/memory/{space}/{cache}/peek`: entries without touching recency.
    func peek(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let location = try databaseLocation(space: call.parameters.space, call)
        let request = call.request, name = call.parameters.cache, encoding = call.encoding
        var count = 10
        if let text = request.queryValue("count") {
            guard let number = Int(text), (1...10_000).contains(number) else {
                throw Problem(.invalidValue, "count is an integer from 1 to 10000")
            }
            count = number
        }
        let fromHead: Bool
        switch request.queryValue("from") ?? "head" {
        case "head": fromHead = true
        case "tail": fromHead = false
        case let other: throw Problem(.invalidValue, "from is head or tail, not '\(other.prefix(20))'")
        }
        return try storage {
            let entries = try memoryCaches.cache(name, in: location).peek(count, fromHead: fromHead, now: clock.now())
            return json(["entries": .array(entries.map {
                ["key": .string($0.key), "value": $0.value, "expire": .double($0.expire)]
            })], encoding)
        }
    }

    // MARK: Bodies

    /// An expiry timestamp: seconds since 1970, 0 (or none) for never.
    private func expiry(_ value: Value?) throws(Problem) -> Double {
        switch value {
        case nil, .null?: return 0
        case .integer(let seconds)? where seconds >= 0: return Double(seconds)
        case .double(let seconds)? where seconds >= 0 && seconds.isFinite: return seconds
        default: throw Problem(.invalidValue, "expire is a timestamp in seconds since 1970 (0 for never)")
        }
    }
}
