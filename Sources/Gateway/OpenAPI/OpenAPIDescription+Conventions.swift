import OpenAPIKit

/// The document's conventions, applied over whatever routes it describes:
/// named body components, declared tags, one operationId style, the license.
extension OpenAPIDescription {
    /// `info.license`. The project has not chosen a license: UNLICENSED
    /// (npm's word for "no license is granted") until it does.
    static let license = OpenAPI.Document.Info.License(name: "UNLICENSED")

    /// A body (an object of these members, no others) as a titled component,
    /// and a reference to it: one type in a generated client however many
    /// operations use it.
    mutating func named(_ name: String, _ properties: OrderedDictionary<String, JSONSchema>) -> JSONSchema {
        components.schemas[OpenAPI.ComponentKey(rawValue: name)!] = .object(title: name, properties: properties,
                                                                             additionalProperties: .init(false))
        return .reference(.component(named: name))
    }

    /// What the tags beside the modules' group.
    static let tagDescriptions: [String: String] = [
        "daogate": "The service: transactions, module introspection and the module proxy operations, health, this description, events, metrics.",
        "kv": "The typed key-value store (APKVStore), in the common or the caller's database.",
        "memoryCache": "LRU caches in memory (APLRUMemoryCache), lost at restart.",
        "diskCache": "LRU caches on disk (APLRUDiskCache), a table of the database.",
        "storage": "Cleanup and usage of storages.",
    ]

    /// A declared tag for each tag an operation uses that is not a module's, sorted.
    func serviceTags() -> [OpenAPI.Tag] {
        let moduleNames = Set(modules.map(\.name))
        var used: Set<String> = []
        for item in paths.values {
            guard case .b(let pathItem) = item else { continue }
            for endpoint in pathItem.endpoints { used.formUnion(endpoint.operation.tags ?? []) }
        }
        return used.subtracting(moduleNames).sorted().map { OpenAPI.Tag(name: $0, description: Self.tagDescriptions[$0]) }
    }

    /// One operationId style: `{tag}_{name}`, as the methods' `{Module}_{method}`.
    /// A name that begins with its tag drops it (`kvGetUser` → `kv_getUser`).
    mutating func unifyOperationIDs() {
        for (path, item) in paths {
            guard case .b(var pathItem) = item else { continue }
            for endpoint in pathItem.endpoints {
                var operation = endpoint.operation
                guard let id = operation.operationId, let tag = operation.tags?.first else { continue }
                operation.operationId = Self.operationID(id, tag: tag)
                pathItem[endpoint.method] = operation
            }
            paths[path] = .b(pathItem)
        }
    }

    static func operationID(_ id: String, tag: String) -> String {
        if id.hasPrefix(tag + "_") { return id }
        var name = Substring(id)
        if id.count > tag.count, id.hasPrefix(tag), id[id.index(id.startIndex, offsetBy: tag.count)].isUppercase {
            name = id.dropFirst(tag.count)
        }
        return tag + "_" + name.prefix(1).lowercased() + name.dropFirst()
    }
}
