import DAODialect
import DAOEngine
import DAOKeyValue
import JWT

/// Every code the gateway answers with, by area, and its HTTP status: the one place an error becomes a status
/// (PostgREST's `Error.hs`, each constructor with its status and code).
///
/// The layers below the gateway name their errors without knowing HTTP (`EngineError.Code`, `RenderError.Code`,
/// `KeyValueError.Code`, `TokenRefusal.Cause`); the gateway's own areas are declared here. A problem is made from
/// a code and a sentence (`Problem(.invalidBody, "…")`), a route declares the codes it can give
/// (`Route.get(errors:)`), and the OpenAPI document lists the statuses of those codes. docs/errors.md lists
/// every code at its status (`ProblemRemedyTests`).
public enum ErrorCode: Hashable, Sendable {
    case request(Request)
    case auth(Auth)
    case token(TokenRefusal.Cause)
    case admin(Admin)
    case sharding(Sharding)
    case changeFeed(ChangeFeed)
    case engine(EngineError.Code)
    case render(RenderError.Code)
    case storage(KeyValueError.Code)

    /// The request itself: its framing, path, headers, body, and the route it reaches.
    public enum Request: String, Sendable, CaseIterable {
        case invalidJSON = "invalid_json"
        case invalidBody = "invalid_body"
        case invalidHeader = "invalid_header"
        case duplicateHeader = "duplicate_header"
        case invalidPath = "invalid_path"
        case invalidRequest = "invalid_request"
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case bodyTooLarge = "body_too_large"
        case unsupportedMediaType = "unsupported_media_type"
        case unsupportedTransferCoding = "unsupported_transfer_coding"
        case shuttingDown = "shutting_down"
        case tooManyLongCalls = "too_many_long_calls"
        case `internal` = "internal"
    }

    /// Who may call: the admin token, the admin claim, the user a token names (its refusals are `token`).
    public enum Auth: String, Sendable, CaseIterable {
        case adminRequired = "admin_required"
        case adminDisabled = "admin_disabled"
        case userMismatch = "user_mismatch"
        case adminClaimRequired = "admin_claim_required"
        case adminOnly = "admin_only"
    }

    /// The admin operations on the server: module reload, rekey.
    public enum Admin: String, Sendable, CaseIterable {
        case modulesRefused = "modules_refused"
        case reloadUnavailable = "reload_unavailable"
        case keysRefused = "keys_refused"
        case rekeyRunning = "rekey_running"
        case rekeyUnavailable = "rekey_unavailable"
    }

    /// A shard: admission by the shard map, and the bucket moves.
    public enum Sharding: String, Sendable, CaseIterable {
        case misdirectedRequest = "misdirected_request"
        case bucketMoving = "bucket_moving"
        case notAShard = "not_a_shard"
        case bucketOwned = "bucket_owned"
        case moveFailed = "move_failed"
        case unknownShard = "unknown_shard"
        case importRefused = "import_refused"
    }

    /// `GET /changes`.
    public enum ChangeFeed: String, Sendable, CaseIterable {
        case tooManyStreams = "too_many_streams"
        case invalidQuery = "invalid_query"
    }

    /// The HTTP status of the code.
    public var status: Int {
        switch self {
        case .request(let code):
            switch code {
            case .invalidJSON, .invalidBody, .invalidHeader, .duplicateHeader, .invalidPath, .invalidRequest: 400
            case .notFound: 404
            case .methodNotAllowed: 405
            case .bodyTooLarge: 413
            case .unsupportedMediaType: 415
            case .unsupportedTransferCoding: 501
            case .shuttingDown, .tooManyLongCalls: 503
            case .internal: 500
            }
        case .auth(let code):
            switch code {
            case .adminRequired: 401
            case .adminDisabled, .userMismatch, .adminClaimRequired, .adminOnly: 403
            }
        case .token: 401
        case .admin: 409
        case .sharding(let code):
            switch code {
            case .unknownShard: 400
            case .notAShard: 404
            case .bucketOwned: 409
            case .misdirectedRequest: 421
            case .importRefused: 422
            case .moveFailed: 502
            case .bucketMoving: 503
            }
        case .changeFeed(let code):
            switch code {
            case .invalidQuery: 400
            case .tooManyStreams: 429
            }
        case .engine(let code):
            switch code {
            case .invalidArguments, .invalidReference, .userRequired, .invalidUser, .invalidTable, .invalidStorage, .invalidRegex: 400
            case .unknownModule, .unknownMethod: 404
            case .constraintViolation, .tableOwned, .tooManyStorages: 409
            case .tooBig: 413
            case .statementFailed, .upgradeFailed, .resultConversion, .encryption, .keyMissing, .storageFailed: 500
            case .busy, .overloaded: 503
            case .storageFull: 507
            }
        case .render: 400
        case .storage(let code):
            switch code {
            case .invalidName, .invalidValue, .limitExceeded, .encryptionUnavailable: 400
            case .keyNotFound, .unknownCache: 404
            case .typeMismatch, .cacheConflict: 409
            case .memoryFull: 507
            }
        }
    }

    /// The stable code a problem carries (`invalid_body`).
    public var name: String {
        switch self {
        case .request(let code): code.rawValue
        case .auth(let code): code.rawValue
        case .token(let cause): cause.rawValue
        case .admin(let code): code.rawValue
        case .sharding(let code): code.rawValue
        case .changeFeed(let code): code.rawValue
        case .engine(let code): code.rawValue
        case .render(let code): code.rawValue
        case .storage(let code): code.rawValue
        }
    }

    /// Every code of every area. A name may be declared by two areas (`invalid_arguments`, `invalid_table`: the
    /// engine's and the renderer's) with one status (`ErrorCodeTests`).
    public static let allCases: [ErrorCode] =
        Request.allCases.map(ErrorCode.request) + Auth.allCases.map(ErrorCode.auth) + TokenRefusal.Cause.allCases.map(ErrorCode.token)
        + Admin.allCases.map(ErrorCode.admin) + Sharding.allCases.map(ErrorCode.sharding) + ChangeFeed.allCases.map(ErrorCode.changeFeed)
        + EngineError.Code.allCases.map(ErrorCode.engine) + RenderError.Code.allCases.map(ErrorCode.render)
        + KeyValueError.Code.allCases.map(ErrorCode.storage)
}

/// The codes a route's method can give, as the route declares them (`Route.get(errors:)`): the OpenAPI document
/// lists their statuses. Declared from the groups below and single codes: `.get(errors: .names, .file, [.storage(.keyNotFound)])`.
public struct RouteErrors: Sendable, ExpressibleByArrayLiteral {
    public var codes: [ErrorCode]

    public init(_ codes: [ErrorCode]) {
        var unique: [ErrorCode] = []
        for code in codes where !unique.contains(code) { unique.append(code) }
        self.codes = unique
    }

    public init(arrayLiteral codes: ErrorCode...) { self.init(codes) }

    /// The groups' codes together.
    public init(_ groups: [RouteErrors]) { self.init(groups.flatMap(\.codes)) }

    /// The statuses of the codes, each once, ascending: what the document lists.
    public var statuses: [Int] { Set(codes.map(\.status)).sorted() }

    public func contains(_ name: String) -> Bool { codes.contains { $0.name == name } }

    /// The codes but those of the given statuses: what a route gives only on some of the concrete paths the
    /// document writes out (a disk cache has no `memory_full`; a method written out exists).
    func without(statuses excluded: Set<Int>) -> RouteErrors { RouteErrors(codes.filter { !excluded.contains($0.status) }) }

    /// A JSON body: not JSON, not the shape the route takes, not `application/json`.
    public static let body: RouteErrors = [.request(.invalidJSON), .request(.invalidBody), .request(.unsupportedMediaType)]
    /// A body over `--max-body-size`.
    public static let bodyLimit: RouteErrors = [.request(.bodyTooLarge)]
    /// A storage file opened and used: it failed, it stayed locked, the server is out of descriptors.
    public static let file: RouteErrors = [.engine(.storageFailed), .engine(.busy), .engine(.overloaded)]
    /// The caller's user and storage, from the headers (`X-User-Id`, `X-Storage`).
    public static let caller: RouteErrors = [.engine(.userRequired), .engine(.invalidUser), .engine(.invalidStorage),
                                             .request(.duplicateHeader), .request(.invalidHeader)]
    /// An admin operation: the admin token (trusted-header mode) or the admin claim (jwt mode).
    public static let admin: RouteErrors = [.auth(.adminRequired), .auth(.adminDisabled), .auth(.adminClaimRequired)]
    /// A module named in the path.
    public static let module: RouteErrors = [.engine(.unknownModule)]
    /// A business, key or cache name in the path.
    public static let names: RouteErrors = [.storage(.invalidName)]
    /// A module's table: the one `X-Table-Name` names, made by another module.
    public static let table: RouteErrors = [.engine(.invalidTable), .engine(.tableOwned)]
    /// A call of a DAO method: its module and method, its arguments, its statements, what it stores, and who may call it.
    public static let call: RouteErrors = RouteErrors([module, caller, table, file, body, bodyLimit, [
        .engine(.unknownMethod), .engine(.invalidArguments), .engine(.constraintViolation), .engine(.tooManyStorages),
        .engine(.tooBig), .engine(.statementFailed), .engine(.upgradeFailed), .engine(.resultConversion),
        .engine(.encryption), .engine(.keyMissing), .engine(.storageFull), .auth(.adminOnly), .auth(.adminRequired),
        .auth(.adminDisabled),
    ], RouteErrors(RenderError.Code.allCases.map(ErrorCode.render))])
    /// The operations of a shard, and the server started without `--shard`.
    public static let shard: RouteErrors = RouteErrors([admin, [.sharding(.notAShard)]])
}
