import OpenAPIKit

/// The description of `--auth jwt`: the bearer (JWT) scheme on every operation
/// that reaches storage, the admin requirement where an admin's token is needed.
extension OpenAPIDescription {
    /// `publicPaths`: those of the routes answered without a token (`Route.isPublic`).
    mutating func requireBearer(publicPaths: Set<OpenAPI.Path>) {
        let bearer: OpenAPI.SecurityRequirement = [.component(named: "bearer"): []]
        let admin: OpenAPI.SecurityRequirement = [.component(named: "admin"): []]
        components.securitySchemes["bearer"] = .init(OpenAPI.SecurityScheme(
            type: .http(scheme: "bearer", bearerFormat: "JWT"),
            description: "A JWT the server verifies; its user claim (sub by default) is the caller's user, which X-User-Id, when sent, must equal."))
        components.securitySchemes["admin"] = .init(OpenAPI.SecurityScheme(
            type: .http(scheme: "bearer", bearerFormat: "JWT"),
            description: "A JWT carrying the admin claim (--jwt-admin-claim), or the static admin token the server was started with."))
        components.responses["Problem401"] = .init(OpenAPI.Response(
            description: "The token is missing or refused; the code says why (token_expired, token_bad_signature, …).",
            content: [OpenAPI.ContentType(rawValue: "application/problem+json")!: .init(OpenAPI.Content(schema: .reference(.component(named: "Problem"))))]))
        components.responses["Problem403"] = .init(OpenAPI.Response(
            description: "The token is valid but not enough: X-User-Id names another user (user_mismatch), or an admin's token is needed.",
            content: [OpenAPI.ContentType(rawValue: "application/problem+json")!: .init(OpenAPI.Content(schema: .reference(.component(named: "Problem"))))]))
        // The token names the user; X-User-Id is optional, and must then be the token's.
        for name in ["RequiredUser", "OptionalUser"] {
            components.parameters[OpenAPI.ComponentKey(rawValue: name)!] = .init(OpenAPI.Parameter.header(
                name: "X-User-Id", required: false, schema: Self.userSchema,
                description: "Optional: the token's user claim names the caller; a user id sent must be the same (else 403 user_mismatch)."))
        }
        for (path, item) in paths {
            guard case .b(var pathItem) = item else { continue }
            let isPublic = publicPaths.contains(path)
            for endpoint in pathItem.endpoints {
                var operation = endpoint.operation
                if isPublic {
                    operation.security = []
                } else {
                    // An admin-or-owner operation: the admin's token, or any valid one (on the caller's own storage).
                    let requirements = operation.security ?? [bearer]
                    operation.security = requirements.map { $0.isEmpty ? bearer : $0 }
                    if operation.security == [admin] || operation.security == [admin, bearer] || operation.security == [bearer] {
                        for status in [401, 403] where operation.responses[OpenAPI.Response.StatusCode(integerLiteral: status)] == nil {
                            operation.responses[OpenAPI.Response.StatusCode(integerLiteral: status)] = .reference(.component(named: "Problem\(status)"))
                        }
                    }
                }
                pathItem[endpoint.method] = operation
            }
            paths[path] = .b(pathItem)
        }
    }
}
