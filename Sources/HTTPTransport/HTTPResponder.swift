/// What the transport itself refuses before a responder sees the request.
public enum TransportRefusal: Sendable, Equatable {
    /// The body is (or grew) larger than `HTTPServerConfiguration.maximumBodySize`: 413.
    case bodyTooLarge(limit: Int)
    /// The server is draining on shutdown and takes no new request: 503.
    case shuttingDown
    /// A request whose target or framing is malformed or ambiguous (two
    /// `Content-Length`s, `Content-Length` with `Transfer-Encoding`, a raw
    /// control byte in the target, …): 400, refused before any body is read.
    case invalidRequest(String)
    /// A `Transfer-Encoding` other than `chunked`, which the server does not implement: 501 (RFC 9112 §6.1).
    case unsupportedTransferCoding
    /// As many answers as `HTTPServerConfiguration.offWorkerAnswerLimit` allows are being worked out off the
    /// worker threads, and this one would be another: 503, nothing of it done.
    case tooManyLongCalls(limit: Int)

    /// The status code of the refusal.
    public var status: Int {
        switch self {
        case .bodyTooLarge: 413
        case .shuttingDown: 503
        case .invalidRequest: 400
        case .unsupportedTransferCoding: 501
        case .tooManyLongCalls: 503
        }
    }

    /// A short English sentence saying why, free of quotes and backslashes.
    public var reason: String {
        switch self {
        case .bodyTooLarge(let limit): "request body larger than \(limit) bytes"
        case .shuttingDown: "server is shutting down"
        case .invalidRequest(let reason): reason
        case .unsupportedTransferCoding: "the only transfer coding taken is chunked"
        case .tooManyLongCalls(let limit): "\(limit) long calls are being answered already"
        }
    }
}

/// The application side of the server, the one place where the transport meets it.
///
/// Both methods are called on libmicrohttpd's worker threads, synchronously:
/// a slow answer holds that thread (and the connections it serves) until it
/// returns, unless it is worked out on a thread of its own
/// (`HTTPResponse.answeredOffWorkerThread`).
public protocol HTTPResponder: Sendable {
    /// The response to a complete request.
    func respond(to request: HTTPRequest) -> HTTPResponse

    /// The response for a refusal (so the application can keep one error format); has a default implementation returning a plain JSON body {"error": "..."}.
    ///
    /// `request` has its method, path, query and headers, never a body. The
    /// transport sends the answer with `Connection: close`, but for `tooManyLongCalls`, whose request was
    /// read whole.
    func respond(to refusal: TransportRefusal, request: HTTPRequest) -> HTTPResponse
}

extension HTTPResponder {
    public func respond(to refusal: TransportRefusal, request: HTTPRequest) -> HTTPResponse {
        HTTPResponse(
            status: refusal.status,
            headers: [("Content-Type", "application/json")],
            body: Array(#"{"error":"\#(refusal.reason)"}"#.utf8)
        )
    }
}
