import DAODialect
import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport

/// An error response: an RFC 9457 `application/problem+json` body with a
/// stable, machine-readable `code`. Its status is its code's (`ErrorCode.status`, the one place an error
/// becomes a status); a problem is made from a code and one sentence: `Problem(.invalidBody, "…")`.
public struct Problem: Error, Sendable {
    public var errorCode: ErrorCode
    public var status: Int { errorCode.status }
    /// Stable and documented in docs/errors.md; clients switch on it.
    public var code: String { errorCode.name }
    /// One human sentence saying what is wrong.
    public var detail: String
    /// Extension members: `method`, `methods`, `argument`, `line`, `call`, …
    public var extensions: OrderedObject = [:]
    /// Response headers the problem needs (`Allow`, `WWW-Authenticate`).
    public var headers: [(name: String, value: String)] = []

    public init(_ code: ErrorCode, _ detail: String) {
        self.errorCode = code
        self.detail = detail
    }

    init(_ code: ErrorCode.Request, _ detail: String) { self.init(.request(code), detail) }
    init(_ code: ErrorCode.Auth, _ detail: String) { self.init(.auth(code), detail) }
    init(_ code: ErrorCode.Admin, _ detail: String) { self.init(.admin(code), detail) }
    init(_ code: ErrorCode.Sharding, _ detail: String) { self.init(.sharding(code), detail) }
    init(_ code: ErrorCode.ChangeFeed, _ detail: String) { self.init(.changeFeed(code), detail) }
    init(_ code: EngineError.Code, _ detail: String) { self.init(.engine(code), detail) }
    init(_ code: KeyValueError.Code, _ detail: String) { self.init(.storage(code), detail) }

    /// Says, in `Retry-After`, to try again after `seconds`: a moment's trouble, not a refusal for good.
    mutating func retry(after seconds: Int) {
        headers.append(("Retry-After", String(seconds)))
    }

    /// Every code the gateway can answer with, and its status (`ErrorCode.allCases`).
    public static let statusOfCode: [String: Int] = Dictionary(ErrorCode.allCases.map { ($0.name, $0.status) }) { first, _ in first }

    /// The problem of an engine error: the render error's own code when the
    /// arguments were at fault, the engine's otherwise.
    init(_ error: EngineError) {
        if let render = error.render {
            self.init(render)
        } else {
            self.init(.engine(error.code), error.message)
            if let method = error.method { extensions["method"] = .string(method) }
            if let methods = error.methods { extensions["methods"] = .array(methods.map(Value.string)) }
            if let owner = error.owner { extensions["owner"] = .string(owner) }
            // Out of descriptors is a moment's trouble: a client may retry, not at once.
            if error.code == .overloaded { retry(after: 1) }
        }
        if let line = error.line { extensions["line"] = .integer(Int64(line)) }
        if let index = error.callIndex { extensions["call"] = .integer(Int64(index)) }
        if let keyID = error.keyID { extensions["keyId"] = .string(keyID) }
        if let reference = error.reference { extensions["reference"] = .string(reference) }
    }

    init(_ error: RenderError) {
        self.init(.render(error.code), error.detail)
        extensions["method"] = .string(error.method)
        if let argument = error.argument { extensions["argument"] = .string(argument) }
    }

    init(_ error: KeyValueError) {
        self.init(.storage(error.code), error.message)
    }

    /// The problem of whatever a route's work threw; an error of no known
    /// kind is the server's, and says nothing of itself.
    init(thrown error: any Error) {
        switch error {
        case let problem as Problem: self = problem
        case let error as KeyValueError: self.init(error)
        case let error as EngineError: self.init(error)
        case let error as RenderError: self.init(error)
        case let error as JSONError: self.init(error)
        default: self.init(.internal, "an internal error occurred")
        }
    }

    init(_ error: JSONError) {
        self.init(.invalidJSON, "the body is not valid JSON: \(error)")
    }

    /// The response, `application/problem+json`.
    func response(_ encoding: JSONWriteOptions) -> HTTPResponse {
        var body: OrderedObject = [
            "type": "about:blank",
            "title": .string(Self.reason(status)),
            "status": .integer(Int64(status)),
            "code": .string(code),
            "detail": .string(detail),
        ]
        for (name, value) in extensions { body[name] = value }
        return HTTPResponse(status: status, headers: [("Content-Type", "application/problem+json")] + headers,
                            body: Value.object(body).jsonBytes(options: encoding))
    }

    /// The reason phrase of a status, the problem's `title`: the status line's own (`HTTPResponse.reasonPhrase`),
    /// one table for every status daogate answers.
    static func reason(_ status: Int) -> String {
        HTTPResponse.reasonPhrase(of: status)
    }
}
