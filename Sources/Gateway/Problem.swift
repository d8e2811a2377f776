import DAODialect
import DAOEngine
import DAOStorage
import DAOValue
import HTTPTransport

/// An error response: an RFC 9457 `application/problem+json` body with a
/// stable, machine-readable `code`. The one place where any error becomes an
/// HTTP status.
public struct Problem: Error, Sendable {
    public var status: Int
    /// Stable and documented in the README; clients switch on it.
    public var code: String
    /// One human sentence saying what is wrong.
    public var detail: String
    /// Extension members: `method`, `methods`, `argument`, `line`, `call`, …
    public var extensions: OrderedObject = [:]
    /// Response headers the problem needs (`Allow`, `WWW-Authenticate`).
    public var headers: [(name: String, value: String)] = []

    public init(_ status: Int, _ code: String, _ detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    /// Every code the gateway can answer with, and its status.
    public static let statusOfCode: [String: Int] = {
        var statuses: [String: Int] = [
            "invalid_json": 400, "invalid_body": 400, "invalid_header": 400, "not_found": 404,
            "method_not_allowed": 405, "unsupported_media_type": 415, "body_too_large": 413,
            "admin_required": 401, "admin_disabled": 403, "shutting_down": 503, "internal": 500,
            "invalid_path": 400, "duplicate_header": 400, "invalid_request": 400, "unsupported_transfer_coding": 501,
            "modules_refused": 409, "reload_unavailable": 409,
            "keys_refused": 409, "rekey_running": 409, "rekey_unavailable": 409,
        ]
        statuses.merge(Gateway.authenticationCodes) { current, _ in current }
        statuses.merge(Gateway.shardCodes) { current, _ in current }
        statuses.merge(Gateway.changeFeedCodes) { current, _ in current }
        for code in RenderError.Code.allCases { statuses[code.rawValue] = 400 }
        for code in EngineError.Code.allCases where code != .invalidArguments {
            statuses[code.rawValue] = status(of: code)
        }
        for code in StorageError.Code.allCases { statuses[code.rawValue] = StorageError(code, "").status }
        return statuses
    }()

    static func status(of code: EngineError.Code) -> Int {
        switch code {
        case .unknownModule, .unknownMethod: 404
        case .invalidArguments, .invalidReference, .userRequired, .invalidUser, .invalidTable, .invalidStorage, .invalidRegex: 400
        case .constraintViolation, .tableOwned, .tooManyStorages: 409
        case .tooBig: 413
        case .busy, .overloaded: 503
        case .storageFull: 507
        case .statementFailed, .upgradeFailed, .resultConversion, .encryption, .keyMissing, .storageFailed: 500
        }
    }

    /// The problem of an engine error: the render error's own code when the
    /// arguments were at fault, the engine's otherwise.
    init(_ error: EngineError) {
        if let render = error.render {
            self.init(render)
        } else {
            self.init(Self.status(of: error.code), error.code.rawValue, error.message)
            if let method = error.method { extensions["method"] = .string(method) }
            if let methods = error.methods { extensions["methods"] = .array(methods.map(Value.string)) }
            if let owner = error.owner { extensions["owner"] = .string(owner) }
            // Out of descriptors is a moment's trouble: a client may retry, not at once.
            if error.code == .overloaded { headers.append(("Retry-After", "1")) }
        }
        if let line = error.line { extensions["line"] = .integer(Int64(line)) }
        if let index = error.callIndex { extensions["call"] = .integer(Int64(index)) }
        if let keyID = error.keyID { extensions["keyId"] = .string(keyID) }
        if let reference = error.reference { extensions["reference"] = .string(reference) }
    }

    init(_ error: RenderError) {
        self.init(400, error.code.rawValue, error.detail)
        extensions["method"] = .string(error.method)
        if let argument = error.argument { extensions["argument"] = .string(argument) }
    }

    init(_ error: StorageError) {
        self.init(error.status, error.code.rawValue, error.message)
    }

    /// The problem of whatever a route's work threw; an error of no known
    /// kind is the server's, and says nothing of itself.
    init(thrown error: any Error) {
        switch error {
        case let problem as Problem: self = problem
        case let error as StorageError: self.init(error)
        case let error as EngineError: self.init(error)
        case let error as RenderError: self.init(error)
        case let error as JSONError: self.init(error)
        default: self.init(500, "internal", "an internal error occurred")
        }
    }

    init(_ error: JSONError) {
        self.init(400, "invalid_json", "the body is not valid JSON: \(error)")
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
