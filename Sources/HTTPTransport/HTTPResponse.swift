import CMicroHTTPD

/// What a responder answers: status, header fields and body, sent as given.
///
/// libmicrohttpd writes `Content-Length` (from the body) and `Date` itself: a
/// `Content-Length` field here is ignored. A field with a name or value
/// libmicrohttpd refuses (a line break, say) is left out and logged.
public struct HTTPResponse: Sendable {
    /// The status code, 100–999; anything else is sent as 500.
    public var status: Int
    /// The header fields, sent in this order.
    public var headers: [(name: String, value: String)]
    /// The body; libmicrohttpd leaves it out for HEAD requests and for statuses that have none.
    public var body: [UInt8]
    /// Extra fields for this request's access-log line (e.g. a digest of the user), never sent to the client.
    public var logMetadata: [(name: String, value: String)]
    /// A body written while it is sent (Server-Sent Events): when set, `body` is ignored.
    public var stream: HTTPStream?
    /// The answer, worked out on a thread kept for such answers instead of libmicrohttpd's worker thread: when
    /// set, every other field is ignored, the connection is suspended while `offWorkerThread` runs, and what it
    /// returns is sent. For a call that may take seconds (a shard's freeze, export, import or archive during a
    /// bucket move): a worker thread serves many connections, and each would wait as long.
    public var offWorkerThread: (@Sendable () -> HTTPResponse)?

    public init(
        status: Int,
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        logMetadata: [(name: String, value: String)] = []
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.logMetadata = logMetadata
    }

    /// An answer worked out off libmicrohttpd's worker thread (`offWorkerThread`).
    public static func answeredOffWorkerThread(_ work: @escaping @Sendable () -> HTTPResponse) -> HTTPResponse {
        var response = HTTPResponse(status: 500)
        response.offWorkerThread = work
        return response
    }

    /// The response changed by `change`: now, or, for an answer worked out off the worker thread, when it is.
    public func changed(_ change: @escaping @Sendable (HTTPResponse) -> HTTPResponse) -> HTTPResponse {
        guard let work = offWorkerThread else { return change(self) }
        return .answeredOffWorkerThread { change(work()) }
    }

    /// The reason phrase of a status, as the status line says it: libmicrohttpd's own table (RFC 9110's phrases),
    /// so that what a body repeats of the status (a problem's `title`) is what the status line sent. "Unknown"
    /// for a status it has no phrase for.
    public static func reasonPhrase(of status: Int) -> String {
        guard let status = UInt32(exactly: status), let phrase = MHD_get_reason_phrase_for(status) else { return "Unknown" }
        return String(cString: phrase)
    }
}
