import DAODialect
import DAOEngine
import HTTPTransport
import JWT

/// How the gateway knows who calls.
public enum Authentication: Sendable {
    /// `X-User-Id` names the caller, as an authenticating proxy in front sets it;
    /// admin operations take the static admin token.
    case trustedHeader
    /// `Authorization: Bearer <JWT>` on every request that reaches storage; the
    /// token's user claim names the caller. The static admin token, when
    /// configured, is taken in its place for admin operations.
    case jwt(JWTVerifier)

    public var name: String {
        switch self {
        case .trustedHeader: "trusted-header"
        case .jwt: "jwt"
        }
    }
}

/// Who calls, and in which storage: what every route derives from the headers, in `Gateway.caller`.
struct Caller {
    var user: UserID?
    var storage: String?
    /// An admin: the static admin token, or a JWT with the admin claim (in jwt mode only).
    var isAdmin = false
    /// The verified JWT the caller sent (jwt mode; not the static admin token) and its `exp`: what a long
    /// response (a change stream) checks again while it lasts.
    var token: (text: String, expiry: Double)?
}

extension Gateway {

    /// In jwt mode, the caller's user from their token: the token's user claim,
    /// which a sent `X-User-Id` must equal; the static admin token acts as
    /// an admin and may name a user with `X-User-Id`.
    func authenticate(_ verifier: JWTVerifier, _ request: HTTPRequest, userHeader: String?) throws(Problem) -> Caller {
        guard let authorization = try header(request, "Authorization") else {
            throw Self.refusal(TokenRefusal(.missing, "this request needs Authorization: Bearer <JWT>"))
        }
        guard let token = Self.bearerToken(authorization) else {
            throw Self.refusal(TokenRefusal(.malformed, "the Authorization header is not Bearer <JWT>"))
        }
        if let adminToken = configuration.adminToken, constantTimeEqual(token, adminToken) {
            do {
                return Caller(user: try userHeader.map(UserID.init), isAdmin: true)
            } catch {
                throw Problem(error)
            }
        }
        let verified: VerifiedToken
        do {
            verified = try verifier.verify(token)
        } catch {
            throw Self.refusal(error)
        }
        if let userHeader, userHeader != verified.user.rawValue {
            var problem = Problem(.userMismatch, "\(Self.userHeader) names another user than the token's \(verifier.settings.userClaim) claim")
            problem.headers = [("WWW-Authenticate", #"Bearer realm="daogate", error="insufficient_scope""#)]
            throw problem
        }
        return Caller(user: verified.user, isAdmin: verified.isAdmin, token: (token, verified.expiry))
    }

    /// A problem with what only the gateway knows added: a `user_required` (from the engine, the KV routes or
    /// the change feed, which know that a user is needed but not how this server is told who it is) says how.
    func explained(_ problem: Problem) -> Problem {
        guard problem.errorCode == .engine(.userRequired) else { return problem }
        var explained = problem
        explained.detail += "; " + userRemedy
        return explained
    }

    /// How this server learns the caller's user: the header in trusted-header mode; in jwt mode the bearer
    /// token's user claim (the static admin token names the user with the header).
    var userRemedy: String {
        switch configuration.authentication {
        case .trustedHeader:
            "send it in the \(Self.userHeader) header"
        case .jwt(let verifier):
            "it is the \(verifier.settings.userClaim) claim of the bearer token (Authorization: Bearer <JWT>); "
                + "with the admin token, send it in the \(Self.userHeader) header"
        }
    }

    /// A refused token: 401 with `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1).
    static func refusal(_ refusal: TokenRefusal) -> Problem {
        var problem = Problem(.token(refusal.cause), refusal.detail)
        problem.headers = [("WWW-Authenticate", #"Bearer realm="daogate", error="invalid_token""#)]
        return problem
    }

    /// An admin operation: the static admin token in trusted-header mode; in
    /// jwt mode, that token or a JWT carrying the admin claim (else a 403).
    func authorizeAdmin(_ call: RouteCall) throws(Problem) {
        let request = call.request
        if case .jwt = configuration.authentication {
            guard try caller(call).isAdmin else {
                var problem = Problem(.adminClaimRequired, "this operation is an admin's: it needs a token with the admin claim")
                problem.headers = [("WWW-Authenticate", #"Bearer realm="daogate", error="insufficient_scope""#)]
                throw problem
            }
            return
        }
        var required = Problem(.adminRequired, "this operation needs Authorization: Bearer <admin token>"
            + (configuration.adminToken == nil ? ", and this server has no admin token: " + Self.adminTokenRemedy : ""))
        required.headers = [("WWW-Authenticate", #"Bearer realm="daogate""#)]
        guard let given = try header(request, "Authorization") else { throw required }
        guard let token = configuration.adminToken else {
            throw Problem(.adminDisabled, "this operation needs the admin token, and none is configured: " + Self.adminTokenRemedy)
        }
        guard constantTimeEqual(given, "Bearer " + token) else { throw required }
    }

    /// How an operator gives the server its admin token.
    static let adminTokenRemedy = "start daogate with --admin-token-file FILE (DAOGATE_ADMIN_TOKEN_FILE), or the token itself in DAOGATE_ADMIN_TOKEN"

    /// A call of a module or method declared `access="admin"` is an admin's.
    func authorizeAccess(module name: String, method: String?, _ call: RouteCall) throws(Problem) {
        guard moduleSet.hasAdminOnlyAccess, let module = engine.modules[name], module.isAdminOnly(method: method) else { return }
        do {
            try authorizeAdmin(call)
        } catch where error.errorCode == .auth(.adminClaimRequired) {
            var problem = Problem(.adminOnly, "\(name)\(method.map { ".\($0)" } ?? "") is declared access=\"admin\": only an admin may call it")
            problem.headers = error.headers
            throw problem
        }
    }

    /// The user the access log shows (as a digest): the token's in jwt mode, else `X-User-Id`.
    /// The caller, when the request derived it, says it without a second look at the headers.
    func loggedUser(_ request: HTTPRequest, _ context: RequestContext) -> String? {
        // The user read where the context keeps the caller: no copy of the whole caller.
        if context.hasCaller { return context.caller?.user?.rawValue }
        guard case .jwt(let verifier) = configuration.authentication else {
            return request.firstValue(of: Self.userHeader).flatMap { try? Self.decodedUserHeader($0) }
        }
        guard let authorization = request.firstValue(of: "Authorization"), let token = Self.bearerToken(authorization) else { return nil }
        return verifier.cached(token)?.user.rawValue
    }

    /// The token of `Bearer <token>` (the scheme in any case, RFC 9110 §11.1); nil for another scheme or none.
    /// Every request in jwt mode asks, so it allocates nothing but the token's own string.
    static func bearerToken(_ authorization: String) -> String? {
        let bytes = authorization.utf8
        var index = bytes.startIndex
        for expected in "bearer".utf8 {
            guard index < bytes.endIndex, bytes[index] | 0x20 == expected else { return nil }
            bytes.formIndex(after: &index)
        }
        guard index < bytes.endIndex, bytes[index] == 0x20 else { return nil }
        while index < bytes.endIndex, bytes[index] == 0x20 { bytes.formIndex(after: &index) }
        return index == bytes.endIndex ? nil : String(authorization[index...])
    }
}
