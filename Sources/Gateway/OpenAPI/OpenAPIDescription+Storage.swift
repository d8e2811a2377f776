import DAOEngine
import DAOKeyValue
import OpenAPIKit

/// The key-value store, the LRU caches and cleanup. Each route of a space is
/// described twice, once for `common` and once for `user`, so that
/// `X-User-Id` is required exactly where it is (operation ids end in
/// `Common` or `User`).
extension OpenAPIDescription {
    typealias Parameter = Either<OpenAPI.Reference<OpenAPI.Parameter>, OpenAPI.Parameter>

    /// A business: no `/`, no control characters.
    static let businessSchema = JSONSchema.string(minLength: 1, maxLength: Names.maximumBusinessLength,
                                                  pattern: "^[^/\\u0000-\\u001F\\u007F]+$")
    /// A key: no control characters (`/` is sent as `%2F`).
    static let keySchema = JSONSchema.string(minLength: 1, maxLength: Names.maximumKeyLength, pattern: "^[^\\u0000-\\u001F\\u007F]+$")
    /// A cache name: an identifier.
    static let cacheNameSchema = JSONSchema.string(minLength: 1, maxLength: Names.maximumCacheNameLength,
                                                   pattern: identifierPattern)

    /// The parameters every storage route takes in a space: the user (required in `user`), the storage.
    func spaceParameters(_ space: StorageSpace) -> [Parameter] {
        [.reference(.component(named: space == .user ? "RequiredUser" : "SpaceUser")), .reference(.component(named: "Storage"))]
    }

    static func suffix(_ space: StorageSpace) -> String { space == .user ? "User" : "Common" }

    static func spaceWords(_ space: StorageSpace) -> String {
        space == .user ? "the caller's own database (X-User-Id)" : "the common database"
    }

    mutating func addStorageComponents() {
        components.schemas["KVType"] = .string(
            title: "KVType", description: "integer and longLong are 64-bit (read as each other); json is an object or array; binary is base64.",
            allowedValues: KVType.allCases.map { .init($0.rawValue) })
        components.schemas["KVEntry"] = .object(
            title: "KVEntry",
            properties: [
                "type": .reference(.component(named: "KVType")),
                "value": .fragment(description: "The value, of its type."),
                "encrypted": .boolean(required: false), "purgeable": .boolean(required: false),
                "default": .boolean(required: false, description: "true when the key is absent and this is the default asked for."),
            ],
            additionalProperties: .init(false))
        components.schemas["KVKey"] = .object(
            title: "KVKey",
            properties: ["key": .string, "type": .reference(.component(named: "KVType")), "encrypted": .boolean,
                         "purgeable": .boolean, "updated": .number(format: .double, description: "When it was set, in seconds since 1970."),
                         "value": .fragment(required: false, description: "The value, as GET of the key gives it (decrypted; binary as base64): only with ?values=true.")],
            additionalProperties: .init(false))
        components.schemas["MemoryCacheInfo"] = .object(
            title: "MemoryCacheInfo",
            properties: ["name": .string, "capacity": .integer(format: .int64), "count": .integer(format: .int64),
                         "created": .boolean(required: false), "evicted": .integer(format: .int64, required: false)],
            additionalProperties: .init(false))
        components.schemas["DiskCacheInfo"] = .object(
            title: "DiskCacheInfo",
            properties: ["name": .string, "capacity": .integer(format: .int64), "count": .integer(format: .int64), "encrypted": .boolean,
                         "maxAge": .number(nullable: true, description: "Seconds after its last write or read an entry is removed by the background sweep; null: the server's --purge-older-than; 0: never."),
                         "maxBytes": .integer(format: .int64, nullable: true, description: "The most bytes (keys and stored values) the cache holds; beyond, the least recently used entries go; null: no bound."),
                         "created": .boolean(required: false), "evicted": .integer(format: .int64, required: false)],
            additionalProperties: .init(false))
        let freed = JSONSchema.object(properties: ["entries": .integer(format: .int64), "bytes": .integer(format: .int64)],
                                      additionalProperties: .init(false))
        components.schemas["PurgeReport"] = .object(
            title: "PurgeReport",
            properties: ["databases": .integer(format: .int64), "kv": freed, "diskCaches": freed, "memoryCaches": freed],
            additionalProperties: .init(false))
        components.parameters["SpaceUser"] = .init(OpenAPI.Parameter.header(
            name: "X-User-Id", required: false, schema: Self.userSchema,
            description: "The caller's user; the common space does not use it, but a user id sent must still be valid."))
        components.parameters["OwnerUser"] = .init(OpenAPI.Parameter.header(
            name: "X-User-Id", required: false, schema: Self.userSchema,
            description: "Only this user's database, which the caller may clean up without the admin token; without it the whole storage, which needs it."))
    }

    /// A `{key}`: the rest of the path.
    static var keyParameter: Parameter {
        Parameter(OpenAPI.Parameter.path(name: "key", schema: Self.keySchema, description: "The key; a `/` in it is sent as %2F."))
    }
    static var cacheParameter: Parameter { Parameter(OpenAPI.Parameter.path(name: "cache", schema: Self.cacheNameSchema)) }
    /// The storage routes' bodies, one component each, shared by the common and user routes (and by both
    /// cache kinds where they agree): one type in a generated client however many operations use it.
    mutating func addStorageBodyComponents() {
        _ = named("KVPut", ["value": .fragment(description: "Not null; of the type."),
                            "type": .reference(.component(named: "KVType"), required: false),
                            "encrypted": .boolean(required: false, nullable: true),
                            "purgeable": .boolean(required: false, nullable: true)])
        _ = named("Deleted", ["deleted": .boolean])
        _ = named("KVKeyList", ["keys": .array(items: .reference(.component(named: "KVKey"))),
                                "next": .string(required: false, description: "Present when more keys follow this page: the after of the next page (the last key here).")])
        _ = named("DeletedCount", ["deleted": .integer(format: .int64)])
        _ = named("CacheSetResult", ["ok": .boolean, "evicted": .integer(format: .int64)])
        _ = named("RemovedCount", ["removed": .integer(format: .int64)])
        _ = named("CacheValue", ["value": .fragment()])
        _ = named("CacheSet", ["value": .fragment(), "expire": .number(format: .double, required: false, nullable: true, minimum: (0, exclusive: false))])
        _ = named("CacheEntries", ["entries": .object(description: "Key → value; keys as the key parameter's (1 to 1024 characters, no control characters).",
                                                      additionalProperties: .init(true))])
        _ = named("CacheAddResult", ["added": .integer(format: .int64), "evicted": .integer(format: .int64)])
        _ = named("CacheExists", ["exists": .boolean])
        _ = named("CachePeek", ["entries": .array(items: .object(
            properties: ["key": .string, "value": .fragment(), "expire": .number(format: .double)],
            additionalProperties: .init(false)))])
        // The ways to remove entries: titled components, told apart by their one required member.
        _ = named("RemoveKeys", ["keys": .array(items: Self.keySchema)])
        _ = named("RemovePrefix", ["prefix": .string])
        _ = named("RemoveSuffix", ["suffix": .string])
        _ = named("RemoveRegex", ["regex": .string(description: "A regular expression the whole key matches (RE2 syntax, as the table deletion's pattern).",
                                                   maxLength: CallerRegex.maximumPatternLength)])
        _ = named("RemoveLike", ["like": .string(description: "An SQLite LIKE pattern of keys (% and _).", minLength: 1, maxLength: DiskCaches.maximumPatternLength),
                                 "escape": .string(required: false, minLength: 1, maxLength: 1)])
        // A boolean, not `const: true`, which openapi-generator's rust turns into an enum that cannot read `true`; false is refused (400 invalid_value).
        _ = named("RemoveAll", ["all": .boolean(description: "true: every entry (false is refused).")])
        for isMemory in [true, false] {
            var createProperties: OrderedDictionary<String, JSONSchema> = ["capacity": .integer(format: .int64, minimum: (1, exclusive: false))]
            if !isMemory {
                createProperties["encrypted"] = .boolean(required: false, nullable: true)
                createProperties["maxAge"] = .number(required: false, nullable: true,
                                                     description: "Seconds after its last write or read an entry is removed by the background sweep; absent or null: the server's --purge-older-than; 0: never. Each PUT sets it.",
                                                     minimum: (0, exclusive: false))
                createProperties["maxBytes"] = .integer(format: .int64, required: false, nullable: true,
                                                        description: "The most bytes (keys' UTF-8 and stored values) the cache holds; beyond, the least recently used entries go, and an entry larger than it alone is refused (400 limit_exceeded). Absent or null: no bound. Each PUT sets it.",
                                                        minimum: (1, exclusive: false))
            }
            _ = named(isMemory ? "MemoryCacheCreate" : "DiskCacheCreate", createProperties)
            _ = named(isMemory ? "MemoryCacheList" : "DiskCacheList",
                      ["caches": .array(items: .reference(.component(named: isMemory ? "MemoryCacheInfo" : "DiskCacheInfo")))])
        }
    }

    /// A reference to one of the components `addStorageBodyComponents` adds.
    static func body(_ name: String) -> JSONSchema { .reference(.component(named: name)) }

    /// What a cache route's description says of its kind and space: the kind's name, whether it is the memory
    /// kind, the tag, the operation ids' suffix and the space's parameters.
    func cacheWords(_ kind: Gateway.CacheKind, _ space: StorageSpace)
        -> (kind: String, isMemory: Bool, tag: String, suffix: String, parameters: [Parameter]) {
        (kind.rawValue, kind == .memory, kind == .memory ? "memoryCache" : "diskCache", Self.suffix(space), spaceParameters(space))
    }

    /// `/kv/{space}/{business}/{key}`.
    func kvEntryPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let business = Parameter(OpenAPI.Parameter.path(name: "business", schema: Self.businessSchema))
        let key = Self.keyParameter
        let entry = JSONSchema.reference(.component(named: "KVEntry"))
        return perSpace(template) { space in
            let suffix = Self.suffix(space)
            let words = Self.spaceWords(space)
            let parameters = spaceParameters(space)
            return OpenAPI.PathItem(
                parameters: [business, key],
                get: OpenAPI.Operation(
                    tags: ["kv"], summary: "Read a value (\(space.rawValue))",
                    description: "The entry under business and key in \(words). Absent: 404 key_not_found, or with `default` that value. `type` insists on the stored type (409 type_mismatch).",
                    operationId: "kvGet\(suffix)",
                    parameters: parameters + [
                        .init(OpenAPI.Parameter.query(name: "type", required: false, schema: .reference(.component(named: "KVType")))),
                        .init(OpenAPI.Parameter.query(name: "default", required: false, schema: .string,
                                                      description: "JSON text (a string in quotes) answered, with `type` or its own, when the key is absent.")),
                    ],
                    responses: responses(entry, for: "GET")),
                put: OpenAPI.Operation(
                    tags: ["kv"], summary: "Set a value (\(space.rawValue))",
                    description: "Stores the value under business and key in \(words), with its type (given, or the JSON value's own: binary must be asked for). `encrypted` stores it with the server's key; `purgeable` lets a purge remove it.",
                    operationId: "kvPut\(suffix)", parameters: parameters,
                    requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: Self.body("KVPut")))], required: true),
                    responses: responses(entry, for: "PUT")),
                delete: OpenAPI.Operation(
                    tags: ["kv"], summary: "Delete a value (\(space.rawValue))", operationId: "kvDelete\(suffix)", parameters: parameters,
                    responses: responses(Self.body("Deleted"), for: "DELETE")))
        }
    }

    /// `/kv/{space}/{business}`.
    func kvBusinessPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let business = Parameter(OpenAPI.Parameter.path(name: "business", schema: Self.businessSchema))
        return perSpace(template) { space in
            let suffix = Self.suffix(space)
            let parameters = spaceParameters(space)
            return OpenAPI.PathItem(
                parameters: [business],
                get: OpenAPI.Operation(
                    tags: ["kv"], summary: "List a business's keys (\(space.rawValue))",
                    description: "The keys in key order (byte order of their UTF-8); with values=true each with its value (SharedPreferences.getAll), in pages: limit (1 to \(Gateway.kvPageMaximum); \(Gateway.kvPageDefault) by default with values, else every key) and after (the previous page's next).",
                    operationId: "kvList\(suffix)",
                    parameters: parameters + [
                        .init(OpenAPI.Parameter.query(name: "prefix", required: false, schema: .string, description: "Only the keys that start with it.")),
                        .init(OpenAPI.Parameter.query(name: "values", required: false, schema: .boolean, description: "Include each key's value.")),
                        .init(OpenAPI.Parameter.query(name: "limit", required: false, schema: .integer(format: .int32, maximum: (Gateway.kvPageMaximum, exclusive: false), minimum: (1, exclusive: false)), description: "The most keys in the page.")),
                        .init(OpenAPI.Parameter.query(name: "after", required: false, schema: .string, description: "List the keys after this one (the previous page's next).")),
                    ],
                    responses: responses(Self.body("KVKeyList"), for: "GET")),
                delete: OpenAPI.Operation(
                    tags: ["kv"], summary: "Delete a business (\(space.rawValue))", operationId: "kvDeleteBusiness\(suffix)",
                    parameters: parameters,
                    responses: responses(Self.body("DeletedCount"), for: "DELETE")))
        }
    }

    /// `/lru/{kind}/{space}`.
    func cacheListPaths(_ template: RouteTemplate) -> [DescribedPath] {
        perKindAndSpace(template) { cacheKind, space in
            let (kind, isMemory, tag, suffix, parameters) = cacheWords(cacheKind, space)
            return OpenAPI.PathItem(get: OpenAPI.Operation(
                tags: [tag], summary: "List the \(kind) caches (\(space.rawValue))", operationId: "\(tag)List\(suffix)",
                parameters: parameters,
                responses: responses(Self.body(isMemory ? "MemoryCacheList" : "DiskCacheList"), for: "GET")))
        }
    }

    /// `/lru/{kind}/{space}/{cache}`.
    func cachePaths(_ template: RouteTemplate) -> [DescribedPath] {
        let name = Self.cacheParameter
        let deleted = Self.body("Deleted")
        return perKindAndSpace(template) { cacheKind, space in
            let (kind, isMemory, tag, suffix, parameters) = cacheWords(cacheKind, space)
            let info = JSONSchema.reference(.component(named: isMemory ? "MemoryCacheInfo" : "DiskCacheInfo"))
            let what = isMemory ? "memory cache (APLRUMemoryCache, lost at restart)" : "disk cache (APLRUDiskCache, a table of the database)"
            let create = Self.body(isMemory ? "MemoryCacheCreate" : "DiskCacheCreate")
            return OpenAPI.PathItem(
                parameters: [name],
                get: OpenAPI.Operation(
                    tags: [tag], summary: "A \(kind) cache's capacity and count (\(space.rawValue))", operationId: "\(tag)Info\(suffix)",
                    parameters: parameters, responses: responses(info, for: "GET")),
                put: OpenAPI.Operation(
                    tags: [tag], summary: "Create or resize a \(kind) cache (\(space.rawValue))",
                    description: "Creates the \(what) in \(Self.spaceWords(space)), or sets the capacity of an existing one (shrinking evicts the least recently used)."
                        + (isMemory ? "" : " Capacity has a slack of capacity/10: beyond capacity + slack, the least recently used are evicted down to capacity at once. An existing cache keeps its encryption (409 cache_conflict)."),
                    operationId: "\(tag)Create\(suffix)", parameters: parameters,
                    requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: create))], required: true),
                    responses: responses(info, for: "PUT")),
                delete: OpenAPI.Operation(
                    tags: [tag], summary: "Delete a \(kind) cache (\(space.rawValue))", operationId: "\(tag)Delete\(suffix)",
                    parameters: parameters, responses: responses(deleted, for: "DELETE")))
        }
    }

    /// `/lru/{kind}/{space}/{cache}/entries/{key}`.
    func cacheEntryPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let name = Self.cacheParameter
        let key = Self.keyParameter
        let ok = Self.body("CacheSetResult"), deleted = Self.body("Deleted"), valueResult = Self.body("CacheValue")
        return perKindAndSpace(template) { cacheKind, space in
            let (_, isMemory, tag, suffix, parameters) = cacheWords(cacheKind, space)
            return OpenAPI.PathItem(
                parameters: [name, key],
                get: OpenAPI.Operation(
                    tags: [tag], summary: "Read an entry (\(space.rawValue))",
                    description: "The value; it becomes the most recently used. Absent or expired: 404 key_not_found\(isMemory ? "" : " (an expired entry is deleted)").",
                    operationId: "\(tag)Get\(suffix)", parameters: parameters,
                    responses: responses(valueResult, for: "GET")),
                put: OpenAPI.Operation(
                    tags: [tag], summary: "Set an entry (\(space.rawValue))",
                    description: "Stores the value as the most recently used; a null value removes the key. `expire` is an absolute time in seconds since 1970 (0: never; a past time stores nothing).",
                    operationId: "\(tag)Set\(suffix)", parameters: parameters,
                    requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: Self.body("CacheSet")))], required: true),
                    responses: responses(ok, for: "PUT", without: isMemory ? [] : [507])),
                delete: OpenAPI.Operation(
                    tags: [tag], summary: "Remove an entry (\(space.rawValue))", operationId: "\(tag)Remove\(suffix)",
                    parameters: parameters, responses: responses(deleted, for: "DELETE")))
        }
    }

    /// `/lru/{kind}/{space}/{cache}/entries`.
    func cacheEntriesPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let name = Self.cacheParameter
        let removed = Self.body("RemovedCount")
        return perKindAndSpace(template) { cacheKind, space in
            let (_, isMemory, tag, suffix, parameters) = cacheWords(cacheKind, space)
            return OpenAPI.PathItem(
                parameters: [name],
                post: OpenAPI.Operation(
                    tags: [tag], summary: "Add entries (\(space.rawValue))",
                    description: "Adds the entries, which never expire, in order (the last ends most recent); null values remove their keys.",
                    operationId: "\(tag)Add\(suffix)", parameters: parameters,
                    requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: Self.body("CacheEntries")))], required: true),
                    responses: responses(Self.body("CacheAddResult"), for: "POST", without: isMemory ? [] : [507])),
                delete: OpenAPI.Operation(
                    tags: [tag], summary: "Remove every entry (\(space.rawValue))", operationId: "\(tag)Clear\(suffix)",
                    parameters: parameters, responses: responses(removed, for: "DELETE")))
        }
    }

    /// `/lru/{kind}/{space}/{cache}/remove`.
    func cacheRemovePaths(_ template: RouteTemplate) -> [DescribedPath] {
        let name = Self.cacheParameter
        let removed = Self.body("RemovedCount")
        return perKindAndSpace(template) { cacheKind, space in
            let (_, isMemory, tag, suffix, parameters) = cacheWords(cacheKind, space)
            let ways: [JSONSchema] = (isMemory
                ? ["RemoveKeys", "RemovePrefix", "RemoveSuffix", "RemoveRegex", "RemoveAll"]
                : ["RemoveKeys", "RemoveLike", "RemoveAll"]).map(Self.body)
            return OpenAPI.PathItem(
                parameters: [name],
                post: OpenAPI.Operation(
                    tags: [tag], summary: "Remove entries (\(space.rawValue))",
                    description: isMemory ? "By a set of keys, a prefix, a suffix, a regular expression, or all." : "By a set of keys, an SQL LIKE pattern, or all.",
                    operationId: "\(tag)RemoveMatching\(suffix)", parameters: parameters,
                    requestBody: OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: .one(of: ways)))], required: true),
                    responses: responses(removed, for: "POST")))
        }
    }

    /// `/lru/memory/{space}/{cache}/exists/{key}`.
    func cacheExistsPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let name = Self.cacheParameter
        let key = Self.keyParameter
        return perSpace(template) { space in
            let tag = "memoryCache"
            let suffix = Self.suffix(space)
            let parameters = spaceParameters(space)
            return OpenAPI.PathItem(
                parameters: [name, key],
                get: OpenAPI.Operation(
                    tags: [tag], summary: "Whether an entry is there (\(space.rawValue))",
                    description: "Without touching the order; an expired entry is not there.",
                    operationId: "\(tag)Exists\(suffix)", parameters: parameters,
                    responses: responses(Self.body("CacheExists"), for: "GET")))
        }
    }

    /// `/lru/memory/{space}/{cache}/peek`.
    func cachePeekPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let name = Self.cacheParameter
        return perSpace(template) { space in
            let tag = "memoryCache"
            let suffix = Self.suffix(space)
            let parameters = spaceParameters(space)
            return OpenAPI.PathItem(
                parameters: [name],
                get: OpenAPI.Operation(
                    tags: [tag], summary: "Entries without touching the order (\(space.rawValue))",
                    description: "Up to `count` live entries from the head (most recently used) or the tail.",
                    operationId: "\(tag)Peek\(suffix)",
                    parameters: parameters + [
                        .init(OpenAPI.Parameter.query(name: "count", required: false,
                                                      schema: .integer(maximum: (10_000, exclusive: false), minimum: (1, exclusive: false)))),
                        .init(OpenAPI.Parameter.query(name: "from", required: false, schema: .string(allowedValues: ["head", "tail"]))),
                    ],
                    responses: responses(Self.body("CachePeek"), for: "GET")))
        }
    }

    /// `/storage/purge`.
    func purgePaths(_ template: RouteTemplate) -> [DescribedPath] {
        let owner = Parameter.reference(.component(named: "OwnerUser"))
        let storage = Parameter.reference(.component(named: "Storage"))
        let conditional: [OpenAPI.SecurityRequirement] = [[.component(named: "admin"): []], [:]]
        return one(template, OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["storage"], summary: "Purge a storage",
            description: "Removes purgeable key-value entries and expired cache entries of the storage X-Storage names (the default one without it), and says what was freed.",
            operationId: "purgeStorage", parameters: [owner, storage],
            responses: responses(.reference(.component(named: "PurgeReport")), for: "POST"),
            security: conditional)))
    }

    /// `/storage/reset`.
    func resetPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let owner = Parameter.reference(.component(named: "OwnerUser"))
        let storage = Parameter.reference(.component(named: "Storage"))
        let conditional: [OpenAPI.SecurityRequirement] = [[.component(named: "admin"): []], [:]]
        return one(template, OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["storage"], summary: "Reset a storage",
            description: "Removes the databases and memory caches of the storage X-Storage names (the default one without it); the next call starts empty. Bound files (`database=`) stay. With the body `{\"all\": true}` and X-User-Id (X-Storage, if sent, changes nothing), every storage of that user, default and custom, at once (the reference's APDataReset), all or nothing: each file is first moved aside, and if one cannot be, those moved come back and nothing is reset.",
            operationId: "resetStorage", parameters: [owner, storage],
            requestBody: OpenAPI.Request(
                description: "Optional. `all`: true resets every storage of the X-User-Id user; false or no body: the one storage.",
                content: [.json: .init(OpenAPI.Content(schema: .object(
                    properties: ["all": .boolean(required: false)], additionalProperties: .init(false))))],
                required: false),
            responses: responses(.object(properties: ["databases": .integer(format: .int64), "bytes": .integer(format: .int64),
                                                      "memoryCaches": .integer(format: .int64)], additionalProperties: .init(false)),
                                 for: "POST"),
            security: conditional)))
    }

    /// `/storages`.
    func storagesPaths(_ template: RouteTemplate) -> [DescribedPath] {
        one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["storage"], summary: "The custom storages",
            description: "The custom storages that have files, and the name of the current-version storage (reset when the deployment's version changes).",
            operationId: "listStorages",
            responses: responses(.object(properties: ["storages": .array(items: .string), "currentVersion": .string],
                                         additionalProperties: .init(false)), for: "GET"),
            security: [[.component(named: "admin"): []]])))
    }

    /// `/storage/usage`.
    func usagePaths(_ template: RouteTemplate) -> [DescribedPath] {
        let owner = Parameter.reference(.component(named: "OwnerUser"))
        let usage = JSONSchema.object(properties: [
            "user": .string, "storage": .string(required: false, nullable: true), "bytes": .integer(format: .int64),
        ], additionalProperties: .init(false))
        return one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["storage"], summary: "Users' databases and their size",
            description: "Every user database of every storage (with X-User-Id, that user's only), largest first, with its bytes on disk (file and write-ahead log), and the limits: the cap on what one user stores, all storages together (`--max-database-size`; null without one), on the common space's databases together (`--max-common-size`), and the custom storages a user may have (`--max-storages-per-user`).",
            operationId: "storageUsage", parameters: [owner],
            responses: responses(.object(properties: ["maximumDatabaseBytes": .integer(format: .int64, required: false, nullable: true),
                                                      "maximumCommonBytes": .integer(format: .int64, required: false, nullable: true),
                                                      "maximumStoragesPerUser": .integer(format: .int64, required: false, nullable: true),
                                                      "totalBytes": .integer(format: .int64), "databases": .array(items: usage)],
                                         additionalProperties: .init(false)), for: "GET"),
            security: [[.component(named: "admin"): []]])))
    }
}
