/// Which browser origins may call the server from their pages, and what they may send: the Fetch standard's
/// CORS protocol, as `CORSResponder` answers it.
public struct CORSPolicy: Sendable {
    /// The origins allowed, each as browsers send it (`scheme://host[:port]`, lower case; `Origin` is compared
    /// exactly with these).
    public var origins: Set<String>
    /// The methods a preflight allows (`Access-Control-Allow-Methods`).
    public var methods: [String]
    /// The request headers a preflight allows (`Access-Control-Allow-Headers`).
    public var headers: [String]
    /// Seconds a browser may keep a preflight's answer (`Access-Control-Max-Age`).
    public var maxAge: Int

    public init(origins: Set<String>, methods: [String], headers: [String], maxAge: Int = 3600) {
        self.origins = origins
        self.methods = methods
        self.headers = headers
        self.maxAge = maxAge
    }

    /// An origin as an operator writes it, checked and in the form browsers send: `scheme://host[:port]` with
    /// scheme http or https, in lower case, without a path, a trailing `/`, a user or a default port. `*` and
    /// `null` are refused: each origin allowed is named.
    public static func origin(_ text: String) throws(InvalidOrigin) -> String {
        let lowered = text.lowercased()
        guard let separator = lowered.firstRange(of: "://") else {
            throw InvalidOrigin(text: text, reason: "an origin is scheme://host[:port], for example https://app.example.com")
        }
        let scheme = String(lowered[..<separator.lowerBound])
        var authority = String(lowered[separator.upperBound...])
        guard scheme == "http" || scheme == "https" else {
            throw InvalidOrigin(text: text, reason: "the scheme is http or https")
        }
        if authority.hasSuffix("/") { authority.removeLast() }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-._:[]")
        guard !authority.isEmpty, authority.allSatisfy({ allowed.contains($0) }) else {
            throw InvalidOrigin(text: text, reason: "an origin has no path, query, user or wildcard: scheme://host[:port]")
        }
        for (defaultScheme, port) in [("http", ":80"), ("https", ":443")] where scheme == defaultScheme && authority.hasSuffix(port) {
            authority.removeLast(port.count)  // browsers leave the default port out of Origin
        }
        return scheme + "://" + authority
    }

    /// An origin that `origin(_:)` refused.
    public struct InvalidOrigin: Error, CustomStringConvertible, Sendable {
        public var text: String
        public var reason: String
        public var description: String { "the CORS origin '\(text)': \(reason)" }
    }
}

/// CORS as a layer around a responder (the responder itself knows nothing of it):
///
/// - a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin is a 204
///   with `Access-Control-Allow-Origin` (that origin), `-Allow-Methods`, `-Allow-Headers` and `-Max-Age`;
/// - any other answer to an allowed origin, problems and transport refusals included, carries
///   `Access-Control-Allow-Origin` (so a page can read a 4xx's problem);
/// - a request from an origin not allowed, or without `Origin`, is answered as without the layer, with no CORS
///   header (a preflight from such an origin gets what `OPTIONS` gets: the browser then refuses the call).
///
/// Every answer carries `Vary: Origin`, since it depends on that header: a cache in between must not give one
/// origin's answer to another.
public struct CORSResponder<Wrapped: HTTPResponder>: HTTPResponder {
    public let wrapped: Wrapped
    public let policy: CORSPolicy
    private let preflightHeaders: [(name: String, value: String)]

    public init(wrapping wrapped: Wrapped, policy: CORSPolicy) {
        self.wrapped = wrapped
        self.policy = policy
        preflightHeaders = [
            ("Access-Control-Allow-Methods", policy.methods.joined(separator: ", ")),
            ("Access-Control-Allow-Headers", policy.headers.joined(separator: ", ")),
            ("Access-Control-Max-Age", String(policy.maxAge)),
        ]
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        guard let origin = allowedOrigin(request) else {
            let response = wrapped.respond(to: request)
            return response.offWorkerThread == nil ? Self.varying(response) : response.changed(Self.varying)
        }
        if request.method == "OPTIONS", request.firstValue(of: "Access-Control-Request-Method") != nil {
            return HTTPResponse(status: 204, headers: [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")] + preflightHeaders)
        }
        // The answer's headers are added to what is sent: for one worked out off the worker thread, once it is.
        let response = wrapped.respond(to: request)
        return response.offWorkerThread == nil ? Self.allowing(response, origin) : response.changed { Self.allowing($0, origin) }
    }

    public func respond(to refusal: TransportRefusal, request: HTTPRequest) -> HTTPResponse {
        let response = wrapped.respond(to: refusal, request: request)
        guard let origin = allowedOrigin(request) else { return Self.varying(response) }
        return Self.allowing(response, origin)
    }

    /// The request's `Origin` when the policy allows it (sent once, exactly as listed).
    private func allowedOrigin(_ request: HTTPRequest) -> String? {
        guard let origin = try? request.header("Origin"), policy.origins.contains(origin) else { return nil }
        return origin
    }

    private static func allowing(_ response: HTTPResponse, _ origin: String) -> HTTPResponse {
        var response = varying(response)
        response.headers.append(("Access-Control-Allow-Origin", origin))
        return response
    }

    @Sendable private static func varying(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.append(("Vary", "Origin"))
        return response
    }
}
