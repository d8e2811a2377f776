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
        var reloadResponses = responses(Self.reloadSchema, errors: [400, 401, 403, 409],
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
}
