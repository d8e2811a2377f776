import OpenAPIKit

/// `GET /changes`, the change feed: a `text/event-stream`.
extension OpenAPIDescription {
    /// `/changes`.
    func changesPaths(_ template: RouteTemplate) -> [DescribedPath] {
        let change = JSONSchema.object(
            properties: [
                "module": .string(allowedValues: modules.map { .init($0.name) }), "table": .string,
                "operation": .string(allowedValues: ["insert", "update", "delete"]),
                "rowids": .array(description: "The rows' rowids in the order changed, at most 1000.", items: .integer(format: .int64)),
                "rows": .integer(format: .int64, description: "How many rows changed (more than rowids lists when it was cut)."),
            ],
            additionalProperties: .init(false))
        let data = JSONSchema.object(
            description: "The data of a `change` event: one committed transaction of one database.",
            properties: [
                "space": .string(allowedValues: ["user", "common"]),
                "storage": .string(required: false, description: "The custom storage (X-Storage), when one."),
                "changes": .array(items: change),
                "truncated": .boolean(description: "Some rows are not listed: reload the tables named."),
            ],
            additionalProperties: .init(false))
        var responses = responses(.string, for: "GET")
        responses[200] = .init(OpenAPI.Response(
            description: """
                Server-Sent Events, until the client leaves or the server stops. Each event has an `id`; `event` is \
                `ready` (first, with the current id), `change` (data: the schema here), `reset` (the Last-Event-ID \
                sent cannot be resumed: reload, then follow from its id) or `closing` (last, then the connection \
                ends: {"reason": "slow-consumer"}, {"reason": "shutdown"}, {"reason": "token_expired"} at the token's \
                exp, the token's refusal code when a key reload invalidates it, or {"reason": "bucket_moved", \
                "shard", "epoch"} when the user's bucket moved to another shard: reconnect). A comment line \
                (`: heartbeat`) comes every --changes-heartbeat seconds.
                """,
            content: [OpenAPI.ContentType(rawValue: "text/event-stream")!: .init(OpenAPI.Content(schema: data))]))
        responses[429] = .init(OpenAPI.Response(
            description: "too_many_streams: the caller's user, or the server, has as many change streams open as allowed.",
            headers: ["Retry-After": .init(OpenAPI.Header(schema: .integer))],
            content: [OpenAPI.ContentType(rawValue: "application/problem+json")!: .init(OpenAPI.Content(schema: .reference(.component(named: "Problem"))))]))
        return one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "Follow committed changes (Server-Sent Events)",
            description: """
                One event per committed transaction that changed rows of module tables in the caller's user database \
                or the common one (of the storage X-Storage names), never for rolled-back work. Send Last-Event-ID \
                to get what was missed since that event, within the last --changes-window events of each database.
                """,
            operationId: "changes",
            parameters: [
                .parameter(OpenAPI.Parameter.header(name: "X-User-Id", required: false, schema: Self.userSchema,
                                                    description: "The caller's user: their database's changes too.")),
                .reference(.component(named: "Storage")),
                .parameter(OpenAPI.Parameter.header(name: "Last-Event-ID", required: false, schema: .string,
                                                    description: "The id of the last event received, to resume after it.")),
                .parameter(OpenAPI.Parameter.query(name: "space", required: false, schema: .string(allowedValues: ["user", "common"]),
                                                   description: "Only the user's, or only the common, database (default both; common without a user; on a shard, the user's only).")),
                .parameter(OpenAPI.Parameter.query(name: "module", required: false,
                                                   schema: .string(allowedValues: modules.map { .init($0.name) }),
                                                   description: "Only this module's changes (repeatable).")),
                .parameter(OpenAPI.Parameter.query(name: "table", required: false, schema: Self.tableSchema,
                                                   description: "Only this table's changes (repeatable).")),
            ],
            responses: responses)))
    }
}
