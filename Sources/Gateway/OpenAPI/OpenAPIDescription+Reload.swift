import OpenAPIKit

/// `POST /admin/reload`, and the reload reports `GET /events` shows.
extension OpenAPIDescription {
    /// A reload's report: `problemCount` for everyone; `problems` and `warnings`, with their files and lines, for the admin.
    static let reloadSchema = JSONSchema.object(
        properties: [
            "outcome": .string(allowedValues: ["applied", "refused"]), "reason": .string, "time": .string(format: .dateTime),
            "modules": .integer(format: .int64), "added": .array(items: .string), "removed": .array(items: .string),
            "changed": .array(items: .object(properties: ["module": .string, "fromVersion": .string, "toVersion": .string],
                                             additionalProperties: .init(false))),
            "problemCount": .integer(format: .int64, description: "How many problems the module folder has."),
            "problems": .array(required: false, description: "The problems themselves (to the admin only).", items: loadProblemSchema),
            "warnings": .array(required: false, items: .string),
        ],
        additionalProperties: .init(false))

    /// One problem of a module file: `file:line: message`, as `daogate check` prints it.
    static let loadProblemSchema = JSONSchema.object(
        properties: ["file": .string, "line": .integer(format: .int64), "message": .string], additionalProperties: .init(false))

    /// `/admin/reload`.
    func reloadPaths(_ template: RouteTemplate) -> [DescribedPath] {
        var reloadResponses = responses(Self.reloadSchema, for: "POST",
                                        description: "The new module set is in use: the report, with its full table scans as warnings.")
        reloadResponses[409] = .init(OpenAPI.Response(
            description: "modules_refused: the module folder has problems (the problem's `problems` lists them, file, line and message), and the modules in use stay; reload_unavailable: the server has no module folder.",
            content: [OpenAPI.ContentType(rawValue: "application/problem+json")!: .init(OpenAPI.Content(schema: .reference(.component(named: "Problem"))))]))
        return one(template, OpenAPI.PathItem(post: OpenAPI.Operation(
            tags: ["daogate"], summary: "Reload the modules",
            description: """
                Loads the module folder (--modules) again with the checks of a start. Without a problem the new set \
                replaces the one in use at once: requests already running finish on the old set, later ones use the \
                new set and its OpenAPI description, and a module whose version changed upgrades its table on the next \
                call in each database. With a problem nothing changes. SIGHUP does the same. Takes no body.
                """,
            operationId: "reloadModules",
            responses: reloadResponses,
            security: [[.component(named: "admin"): []]])))
    }

    /// A rekey's summary (`RekeyReport.value`).
    static let rekeySchema = JSONSchema.object(
        properties: [
            "currentKey": .string(description: "The keyring's current key: what values without a module key of their own now use."),
            "databases": .integer(format: .int64, description: "Database files visited."),
            "reencrypted": .integer(format: .int64, description: "Ciphertexts written again with their target key."),
            "encrypted": .integer(format: .int64, description: "Plaintext values of crypt columns encrypted."),
            "failed": .integer(format: .int64, description: "Values left as they were: they do not decrypt."),
            "failures": .array(description: "The first failures.", items: .object(
                properties: ["database": .string, "table": .string, "column": .string, "message": .string],
                additionalProperties: .init(false))),
        ],
        additionalProperties: .init(false))

    /// What `GET /admin/rekey` answers: `running`, and the counts of the running or last rekey (none before the first).
    static let rekeyStatusSchema = JSONSchema.object(
        properties: [
            "running": .boolean(description: "Whether a rekey runs now."),
            "currentKey": .string(required: false), "databases": .integer(format: .int64, required: false),
            "reencrypted": .integer(format: .int64, required: false), "encrypted": .integer(format: .int64, required: false),
            "failed": .integer(format: .int64, required: false),
            "failures": .array(required: false, items: .object(
                properties: ["database": .string, "table": .string, "column": .string, "message": .string],
                additionalProperties: .init(false))),
        ],
        additionalProperties: .init(false))

    /// `/admin/rekey`.
    func rekeyPaths(_ template: RouteTemplate) -> [DescribedPath] {
        one(template, OpenAPI.PathItem(get: OpenAPI.Operation(
            tags: ["daogate"], summary: "The progress of a rekey",
            description: "Whether a rekey runs on this server, and the counts of the running one so far (after each database file), or of the last one. `daogate rekey` shows it while it waits.",
            operationId: "rekeyStatus",
            responses: responses(Self.rekeyStatusSchema, for: "GET"),
            security: [[.component(named: "admin"): []]]), post: OpenAPI.Operation(
            tags: ["daogate"], summary: "Re-encrypt every encrypted value with the current key",
            description: """
                Reads the key folder (--key-dir) again, then writes every encrypted value of every database file \
                (crypt columns, encrypted KV entries and disk-cache entries) again with its target key: the module's \
                own key (key="…") for its table, the keyring's current key otherwise; plaintext left in a crypt \
                column is encrypted. Runs in batches, one transaction each, while the server serves; running it \
                again continues where a stopped run left off. `daogate rekey` calls it. 409 rekey_unavailable: no \
                key is configured; rekey_running: one is running; keys_refused: the key folder has a problem. \
                Takes no body.
                """,
            operationId: "rekey",
            responses: responses(Self.rekeySchema, for: "POST",
                                 description: "The summary: values moved, encrypted, and those that did not decrypt."),
            security: [[.component(named: "admin"): []]])))
    }
}
