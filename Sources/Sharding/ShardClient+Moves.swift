import DAOValue

/// The move protocol, as a client speaks it to a shard's `/shard/…` operations (the gateway serves them,
/// Gateway+Shard.swift): `daogate move-bucket` and `daogate failover` drive a move with these, and a shard
/// importing a bucket fetches it from its owner with `freeze` and `export`.
extension ShardClient {
    /// `GET /shard`: the shard's name, map epoch, whether it holds the common space, its frozen buckets.
    public func status() throws -> Value { try json("GET", "/shard") }

    /// `POST /shard/reload`: the shard reads its map again; its status.
    @discardableResult
    public func reloadMap() throws -> Value { try json("POST", "/shard/reload") }

    /// `POST /shard/freeze`: the bucket's writes refused on the shard (those in flight waited for); its files.
    public func freeze(bucket: Int) throws -> [String] {
        let frozen = try json("POST", "/shard/freeze", ["bucket": .integer(Int64(bucket))])
        guard case .array(let files)? = frozen[member: "files"] else { throw ShardClientError("the source listed no files") }
        return files.compactMap(\.stringValue)
    }

    /// `POST /shard/unfreeze`: the bucket's writes let in again (a move abandoned).
    public func unfreeze(bucket: Int) throws {
        _ = try json("POST", "/shard/unfreeze", ["bucket": .integer(Int64(bucket))])
    }

    /// `POST /shard/export`: a consistent copy of one file of a frozen bucket; an answer beyond `limit` bytes
    /// is abandoned (`ShardClientError.tooLarge`).
    public func export(bucket: Int, file: String, limit: Int) throws -> Response {
        try request("POST", "/shard/export", body: Value.object(["bucket": .integer(Int64(bucket)), "file": .string(file)]).jsonBytes(),
                    limit: limit)
    }

    /// `POST /shard/import`: the shard fetches the bucket from its owner `from`; its report (files, bytes).
    public func importBucket(_ bucket: Int, from owner: String) throws -> Value {
        try json("POST", "/shard/import", ["bucket": .integer(Int64(bucket)), "from": .string(owner)])
    }

    /// `POST /shard/archive`: the shard removes its files of a bucket its map gives away.
    public func archive(bucket: Int) throws {
        _ = try json("POST", "/shard/archive", ["bucket": .integer(Int64(bucket))])
    }
}
