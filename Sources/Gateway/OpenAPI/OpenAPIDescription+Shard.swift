import HTTPTransport
import OpenAPIKit

/// The admin operations of a shard (`daogate serve --shard`): what `daogate move-bucket` drives. A server that
/// is no shard answers them 404 `not_a_shard`.
extension OpenAPIDescription {
    /// The shard routes' descriptions (`Gateway.routes`), one path each.
    func shardPaths(_ template: RouteTemplate) -> [DescribedPath] {
        guard let item = shardItems()[template.description] else { preconditionFailure("\(template) is no shard route") }
        return one(template, item)
    }

    private func shardItems() -> [String: OpenAPI.PathItem] {
        var paths: [String: OpenAPI.PathItem] = [:]
        let admin: [OpenAPI.SecurityRequirement] = [[.component(named: "admin"): []]]
        let status = JSONSchema.object(properties: [
            "shard": .string, "epoch": .integer(format: .int64), "common": .boolean,
            "buckets": .integer(format: .int64), "frozen": .array(items: .integer(format: .int64)),
        ], additionalProperties: .init(false))
        let bucket = JSONSchema.integer(format: .int64, minimum: (0, exclusive: false))
        // The four calls of a move answered off the worker threads (`Route.answersOffWorkerThread`).
        let longCall = " A long call: answered off the worker threads, at most \(HTTPServerConfiguration.defaultOffWorkerAnswerLimit) such calls at once; one more is 503 too_many_long_calls, with Retry-After."
        func body(_ schema: JSONSchema) -> OpenAPI.Request {
            OpenAPI.Request(content: [.json: .init(OpenAPI.Content(schema: schema))], required: true)
        }
        paths["/shard"] = OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["shard"], summary: "This shard",
            description: "The shard's name, its shard map's epoch, whether it holds the common space, how many buckets it owns and which are frozen for a move.",
            operationId: "shardStatus", responses: responses(status, for: "GET"), security: admin))
        paths["/shard/reload"] = OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["shard"], summary: "Read the shard map again",
            description: "Reads the shard map file (--shard-map) again; the shard then serves the buckets it names for this shard.",
            operationId: "shardReload", responses: responses(status, for: "POST"), security: admin))
        paths["/shard/freeze"] = OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["shard"], summary: "Freeze a bucket's writes",
            description: "Refuses the bucket's writes (503 bucket_moving, Retry-After) while reads go on, kept on disk across restarts, and waits for the writes in flight; answers the bucket's files here." + longCall,
            operationId: "shardFreeze", requestBody: body(.object(properties: ["bucket": bucket], additionalProperties: .init(false))),
            responses: responses(.object(properties: ["bucket": .integer(format: .int64), "files": .array(items: .string)],
                                         additionalProperties: .init(false)), for: "POST"),
            security: admin))
        paths["/shard/unfreeze"] = OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["shard"], summary: "Unfreeze a bucket",
            description: "Lets a frozen bucket's writes in again: a move abandoned before its commit.",
            operationId: "shardUnfreeze", requestBody: body(.object(properties: ["bucket": bucket], additionalProperties: .init(false))),
            responses: responses(status, for: "POST"), security: admin))
        var exported = responses(.string, for: "POST")
        exported[200] = .init(OpenAPI.Response(description: "The SQLite file", content: [
            .init(rawValue: "application/octet-stream")!: .init(OpenAPI.Content(schema: .string(contentEncoding: .binary))),
        ]))
        paths["/shard/export"] = OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["shard"], summary: "A consistent copy of a frozen bucket's file",
            description: "VACUUM INTO a copy of one file of a frozen bucket (one of those /shard/freeze listed), kept here as its archive; the answer is the file." + longCall,
            operationId: "shardExport", requestBody: body(.object(properties: ["bucket": bucket, "file": .string], additionalProperties: .init(false))),
            responses: exported, security: admin))
        paths["/shard/import"] = OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["shard"], summary: "Import a bucket from its shard",
            description: "Freezes the bucket on the shard that owns it in the shard map (`from`: that shard's name, or the address the map gives it; anything else is 400 unknown_shard and nothing is contacted), fetches a consistent copy of each of its files (each download stops beyond --max-database-size, or the data folder's free space), checks each (PRAGMA integrity_check; only daogate's own tables, the modules' tables and their indexes: no trigger, view, virtual or unknown table) and, all checked, installs them here. A file that fails a check is 422 import_refused, and nothing is installed. Refused (409 bucket_owned) while this shard owns the bucket." + longCall,
            operationId: "shardImport", requestBody: body(.object(properties: ["bucket": bucket, "from": .string], additionalProperties: .init(false))),
            responses: responses(.object(properties: ["bucket": .integer(format: .int64), "files": .array(items: .string),
                                                      "bytes": .integer(format: .int64)], additionalProperties: .init(false)),
                                 for: "POST"),
            security: admin))
        paths["/shard/archive"] = OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["shard"], summary: "Remove a moved bucket's files",
            description: "Once the shard map gives the bucket to another shard, removes its files here (their copies stay under archive/bucket-N/) and unfreezes it. Refused (409 bucket_owned) while the map still gives it to this shard." + longCall,
            operationId: "shardArchive", requestBody: body(.object(properties: ["bucket": bucket], additionalProperties: .init(false))),
            responses: responses(.object(properties: ["bucket": .integer(format: .int64), "removed": .integer(format: .int64)],
                                         additionalProperties: .init(false)), for: "POST"),
            security: admin))
        return paths
    }
}
