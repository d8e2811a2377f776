import ASCIIBytes
#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Logging
import Synchronization

/// What libmicrohttpd's callbacks reach through their `cls` pointer: the responder, the body limit, the access log, the watchdog and the counts shutdown watches.
///
/// The server passes it unretained: it owns the context and stops the daemon
/// before letting it go.
final class DaemonContext: Sendable {
    let responder: any HTTPResponder
    let maximumBodySize: Int
    let accessLog: Logger?
    /// The access log's writer when `accessLog` is an `AccessLogHandler`'s: each request's line goes to it directly.
    let accessLogWriter: AccessLogWriter?
    /// The pieces of a request's line that never change: ` info label:` and ` [HTTPTransport] message\n`.
    let requestLinePieces: RequestLinePieces
    /// The deadlines of requests' headers and bodies; nil when neither has one.
    let watchdog: ConnectionWatchdog?
    /// Requests presented to the access handler whose completion has not been notified yet.
    let inFlightRequests = Atomic<Int>(0)
    /// Set when shutdown begins: new requests are refused from then on.
    let isDraining = Atomic<Bool>(false)
    /// The last message libmicrohttpd logged, which says why the daemon failed to start.
    let lastDiagnostic = Mutex<String?>(nil)
    /// The streamed responses being sent, which a graceful stop ends.
    let streams = HTTPStreams()
    /// The answers being worked out off the worker threads, which a stop waits for.
    let offWorkerAnswers: OffWorkerAnswers

    init(responder: any HTTPResponder, maximumBodySize: Int, offWorkerAnswerLimit: Int, accessLog: Logger?,
         watchdog: ConnectionWatchdog?) {
        self.responder = responder
        self.maximumBodySize = maximumBodySize
        self.offWorkerAnswers = OffWorkerAnswers(limit: offWorkerAnswerLimit)
        self.accessLog = accessLog
        let direct = AccessLogHandler.direct(accessLog)
        self.accessLogWriter = direct?.writer
        self.requestLinePieces = RequestLinePieces(label: direct?.label ?? "")
        self.watchdog = watchdog
    }
}

/// One request's state between libmicrohttpd's calls, held retained by its `con_cls` from the request line to the completion callback.
final class RequestState {
    /// `CLOCK_MONOTONIC` nanoseconds when the request line arrived, for the access log's duration.
    let started = monotonicNanoseconds()
    /// The request target (path and query) as the client sent it, read before libmicrohttpd cuts it.
    let target: RequestTarget
    /// The deadlines of the request's connection; nil without a watchdog.
    let connection: ConnectionDeadline?
    /// Set by the access handler's first call, once the headers are in.
    var begun = false
    var request = HTTPRequest(method: "", path: "")
    /// Set once the body grew past the limit: the rest is read and dropped, and the answer is 413.
    var bodyLimitExceeded = false
    /// The status of the response queued, nil until then.
    var status: Int?
    var logMetadata: [(name: String, value: String)] = []
    /// The answer being worked out off the worker thread, while the connection is suspended; nil for most.
    var offWorkerAnswer: OffWorkerAnswer?

    init(target: RequestTarget, connection: ConnectionDeadline?) {
        self.target = target
        self.connection = connection
    }
}

extension DaemonContext {
    /// A connection opened: the watchdog starts the deadline of its first request's headers.
    func opened(connection: OpaquePointer, socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let watchdog else { return }
        let socket = daogate_mhd_connection_socket(connection)
        guard socket >= 0 else { return }
        socketContext.pointee = Unmanaged.passRetained(watchdog.opened(socket: socket)).toOpaque()
    }

    /// A connection is closing (its socket is still open): the watchdog lets it go.
    func closed(socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let pointer = socketContext.pointee else { return }
        socketContext.pointee = nil
        watchdog?.closed(Unmanaged<ConnectionDeadline>.fromOpaque(pointer).takeRetainedValue())
    }

    /// The request line is in: the request's state, with the target read as sent (libmicrohttpd then cuts
    /// the query off and decodes the path in place, into a C string that a `%00` would end).
    func arrive(target: UnsafePointer<CChar>, connection: OpaquePointer?) -> RequestState {
        let bytes = UnsafeRawBufferPointer(start: target, count: strlen(target)).assumingMemoryBound(to: UInt8.self)
        let deadline = connection.flatMap(daogate_mhd_connection_context)
            .map { Unmanaged<ConnectionDeadline>.fromOpaque($0).takeUnretainedValue() }
        return RequestState(target: RequestTarget(bytes), connection: deadline)
    }

    /// The access handler's first call, once the headers are in: builds the request, or refuses it at once.
    ///
    /// libmicrohttpd ends the target where the version begins (`url` and
    /// `version` point into the request line): a shorter copy means a raw NUL
    /// ended it early.
    func begin(
        state: RequestState,
        connection: OpaquePointer,
        method: UnsafePointer<CChar>?,
        url: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?
    ) -> MHD_Result {
        state.begun = true
        inFlightRequests.add(1, ordering: .sequentiallyConsistent)
        if let deadline = state.connection { watchdog?.awaitBody(deadline) }
        let (fields, facts) = connectionValues(connection, kind: .HEADER_KIND)
        // The fields are read where they are, then moved into the request: not copied into a structure of their
        // own and destroyed (a retain and release of each part, every request).
        let refusal = RequestFraming.refusal(
            target: state.target,
            targetIsWhole: url.map { $0 + state.target.count + 1 } == version,
            // Compared where libmicrohttpd keeps it: no string is made of it (every request passes here).
            isHTTP10: version.map { strcmp($0, "HTTP/1.0") == 0 } ?? false,
            headers: fields,
            facts: facts,
            transferEncoding: facts.encodings > 0
                ? MHD_lookup_connection_value(connection, .HEADER_KIND, "Transfer-Encoding").map { String(cString: $0) } : nil
        )
        state.request = HTTPRequest(
            method: method.map { KnownStrings.string(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0))) } ?? "",
            path: state.target.path ?? "",
            query: state.target.hasQuery ? connectionValues(connection, kind: .GET_ARGUMENT_KIND).fields : [],
            headers: consume fields
        )
        if isDraining.load(ordering: .sequentiallyConsistent) {
            return refuse(.shuttingDown, state: state, connection: connection)
        }
        if let refusal {
            return refuse(refusal, state: state, connection: connection)
        }
        if let first = facts.firstLength, let length = declaredLength(state.request.headers[first].value) {
            if length > UInt64(maximumBodySize) {
                return refuse(.bodyTooLarge(limit: maximumBodySize), state: state, connection: connection)
            }
            state.request.body.reserveCapacity(Int(length))
        }
        return .YES
    }

    /// Keeps a piece of the body, or drops it once the body has grown past the limit.
    func receive(_ data: UnsafePointer<CChar>, count: Int, state: RequestState) {
        guard !state.bodyLimitExceeded else { return }
        guard count <= maximumBodySize - state.request.body.count else {
            state.bodyLimitExceeded = true
            state.request.body = []
            return
        }
        state.request.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
    }

    /// The access handler's last call, with the request complete: asks the responder and queues its answer.
    func finish(state: RequestState, connection: OpaquePointer) -> MHD_Result {
        guard state.status == nil else { return .YES }
        if let answer = state.offWorkerAnswer {
            // Called again once the connection was resumed: the answer is there (or, before, nothing to do).
            guard let response = answer.take() else { return .YES }
            state.offWorkerAnswer = nil
            return queue(response, state: state, connection: connection, closing: isDraining.load(ordering: .sequentiallyConsistent))
        }
        if let deadline = state.connection { watchdog?.answering(deadline) }
        if state.bodyLimitExceeded {
            return refuse(.bodyTooLarge(limit: maximumBodySize), state: state, connection: connection)
        }
        // The request is lent to the responder, not copied (a retain and release of each of its parts), and
        // comes back without its body: the access log needs its method and path.
        var request = HTTPRequest(method: "", path: "")
        swap(&request, &state.request)
        let response = responder.respond(to: request)
        request.body = []
        swap(&request, &state.request)
        if let work = response.offWorkerThread { return answerOffWorkerThread(work, state: state, connection: connection) }
        return queue(response, state: state, connection: connection, closing: isDraining.load(ordering: .sequentiallyConsistent))
    }

    /// The completion callback: writes the access-log line, stops counting the request and starts the deadline
    /// of the connection's next request.
    func complete(state: RequestState, termination: MHD_RequestTerminationCode) {
        if let deadline = state.connection { watchdog?.awaitHeaders(deadline) }
        guard state.begun else { return }
        if let accessLogWriter {
            let duration = monotonicNanoseconds() &- state.started
            accessLogWriter.append { line in
                writeRequestLine(into: &line, state: state, termination: termination, nanoseconds: duration)
            }
        } else if let accessLog {
            var metadata = Logger.Metadata(minimumCapacity: 8)
            for field in accessLogFields(state: state, termination: termination) { metadata[field.name] = .string(field.value) }
            accessLog.info(state.status == nil ? "request not answered" : "request", metadata: metadata)
        }
        inFlightRequests.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// A message libmicrohttpd logged: kept for start-up errors, and passed to the log at debug level.
    func diagnose(_ message: String) {
        lastDiagnostic.withLock { $0 = message }
        accessLog?.debug("libmicrohttpd: \(escapingControlCharacters(message))")
    }

    /// Suspends the connection and works the answer out on a thread of the pool's; the thread resumes the
    /// connection when it is done, and libmicrohttpd's next call of the access handler (`finish`) queues it.
    /// The connection's worker thread goes on serving its other connections meanwhile, and a suspended
    /// connection is not timed out. Past the limit of such answers at once, the request is refused instead and
    /// `work` never runs.
    private func answerOffWorkerThread(_ work: @escaping @Sendable () -> HTTPResponse, state: RequestState,
                                       connection: OpaquePointer) -> MHD_Result {
        guard offWorkerAnswers.reserve() else {
            // The request was read whole: the connection stays open for the client's next one.
            state.request.body = []
            let refusal = responder.respond(to: .tooManyLongCalls(limit: offWorkerAnswers.limit), request: state.request)
            return queue(refusal, state: state, connection: connection, closing: false)
        }
        let answer = OffWorkerAnswer(connection: connection)
        state.offWorkerAnswer = answer
        // From the access handler, as libmicrohttpd documents: the connection leaves the event loop on return.
        MHD_suspend_connection(connection)
        offWorkerAnswers.run(work, then: answer.deliver)
        return .YES
    }

    private func refuse(_ refusal: TransportRefusal, state: RequestState, connection: OpaquePointer) -> MHD_Result {
        state.request.body = []
        let response = responder.respond(to: refusal, request: state.request)
        return queue(response, state: state, connection: connection, closing: true)
    }

    /// Hands a response to libmicrohttpd, which copies the body; `closing` adds `Connection: close`.
    private func queue(
        _ response: HTTPResponse,
        state: RequestState,
        connection: OpaquePointer,
        closing: Bool
    ) -> MHD_Result {
        if let deadline = state.connection { watchdog?.answering(deadline) }
        let created = if let stream = response.stream {
            makeStreamResponse(stream, connection: connection)
        } else {
            response.body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let handle = created else { return .NO }
        defer { MHD_destroy_response(handle) }
        for field in response.headers where !asciiCaseInsensitiveEquals(field.name, "Content-Length") {
            // `withCString`: a native string's own bytes, or a small one's on the stack (no array made per field).
            let added = field.name.withCString { name in field.value.withCString { MHD_add_response_header(handle, name, $0) } }
            if added == .NO {
                accessLog?.warning(
                    "response header refused by libmicrohttpd",
                    metadata: ["header": .string(escapingControlCharacters(field.name))]
                )
            }
        }
        if closing {
            _ = MHD_add_response_header(handle, "Connection", "close")
        }
        let status = (100...999).contains(response.status) ? response.status : 500
        let result = MHD_queue_response(connection, UInt32(status), handle)
        if result == .YES {
            state.status = status
            state.logMetadata = response.logMetadata
        }
        return result
    }

    /// The request's access-log line as `AccessLogWriter.append(level:label:fields:source:message:)` writes it
    /// (after the time of day), from the same fields as `accessLogFields`, written straight into the log's
    /// buffer: no array of fields, no sorting, no string per field (a cost paid on every request).
    private func writeRequestLine(into line: inout AccessLogLine, state: RequestState,
                                  termination: MHD_RequestTerminationCode, nanoseconds: UInt64) {
        let pieces = requestLinePieces
        line.append(pieces.prefix)
        // The response's fields (one per name, the last kept) sorted by name, merged with the transport's own,
        // which come in name order: duration_ms, method, path, status, termination.
        var extra = state.logMetadata
        if extra.count > 1 {
            var unique: [(name: String, value: String)] = []
            for field in extra.reversed() where !unique.contains(where: { $0.name == field.name }) { unique.append(field) }
            extra = unique.sorted { $0.name < $1.name }
        }
        var next = 0
        func extraBefore(_ name: String) {
            while next < extra.count, extra[next].name < name {
                if !isAccessLogOwnField(extra[next].name) { line.field(extra[next].name, extra[next].value) }
                next += 1
            }
        }
        extraBefore("duration_ms")
        line.append(pieces.duration)
        line.milliseconds(nanoseconds: nanoseconds)
        extraBefore("method")
        line.append(pieces.method)
        line.value(state.request.method)
        extraBefore("path")
        line.append(pieces.path)
        line.value(state.request.path)
        extraBefore("status")
        line.append(pieces.status)
        if let status = state.status { line.value(status) } else { line.value("-") }
        if termination != .REQUEST_TERMINATED_COMPLETED_OK {
            extraBefore("termination")
            line.append(pieces.termination)
            line.value(terminationName(termination))
        }
        for field in extra[next...] where !isAccessLogOwnField(field.name) { line.field(field.name, field.value) }
        line.append(state.status == nil ? pieces.notAnswered : pieces.answered)
    }

    /// The access-log line's fields, one per name: the response's, then method, path, status, duration and the
    /// termination when not a normal one.
    private func accessLogFields(state: RequestState, termination: MHD_RequestTerminationCode) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(state.logMetadata.count + 5)
        for field in state.logMetadata where !accessLogOwnFields.contains(field.name) {
            let value = escapingControlCharacters(field.value)
            if let index = fields.firstIndex(where: { $0.name == field.name }) {
                fields[index].value = value
            } else {
                fields.append((field.name, value))
            }
        }
        fields.append(("method", escapingControlCharacters(state.request.method)))
        fields.append(("path", escapingControlCharacters(state.request.path)))
        fields.append(("status", state.status.map { String($0) } ?? "-"))
        fields.append(("duration_ms", milliseconds(.nanoseconds(monotonicNanoseconds() &- state.started))))
        if termination != .REQUEST_TERMINATED_COMPLETED_OK {
            fields.append(("termination", terminationName(termination)))
        }
        return fields
    }
}

/// The bytes of a request's access-log line that are the same on every line, made once per server.
struct RequestLinePieces: Sendable {
    let prefix: [UInt8]
    let answered: [UInt8]
    let notAnswered: [UInt8]
    // Literals: their bytes are in the binary, and reading them retains nothing.
    let duration: StaticString = " duration_ms="
    let method: StaticString = " method="
    let path: StaticString = " path="
    let status: StaticString = " status="
    let termination: StaticString = " termination="

    init(label: String) {
        prefix = AccessLogLine.prefix(level: .info, label: label)
        answered = AccessLogLine.suffix(source: "HTTPTransport", message: "request")
        notAnswered = AccessLogLine.suffix(source: "HTTPTransport", message: "request not answered")
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds (the clock of the access log's durations).
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The access-log fields the transport sets itself, which a response's log metadata cannot replace.
private let accessLogOwnFields: Set<String> = ["method", "path", "status", "duration_ms", "termination"]

private func isAccessLogOwnField(_ name: String) -> Bool {
    switch name {
    case "method", "path", "status", "duration_ms", "termination": true
    default: false
    }
}

/// The length a `Content-Length` value declares (libmicrohttpd has already refused a malformed one); a run of digits too long for 64 bits counts as the largest length.
private func declaredLength(_ value: String) -> UInt64? {
    // A loop over the bytes in place (every request with a body asks).
    return withUTF8Bytes(of: value) { bytes -> UInt64? in
        var start = 0, end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        guard start < end else { return nil }
        var length: UInt64 = 0
        for index in start..<end {
            let digit = bytes[index]
            guard (0x30...0x39).contains(digit) else { return nil }
            let (shifted, overflowed) = length.multipliedReportingOverflow(by: 10)
            let (sum, carried) = shifted.addingReportingOverflow(UInt64(digit - 0x30))
            if overflowed || carried { return .max }
            length = sum
        }
        return length
    }
}

/// The request's values of one kind (headers or query arguments), in order, and for headers what their bytes
/// say (`HeaderFacts`); sizes are given, so a decoded `%00` is kept.
private func connectionValues(_ connection: OpaquePointer,
                              kind: MHD_ValueKind) -> (fields: [(name: String, value: String)], facts: HeaderFacts) {
    var values = ConnectionValues()
    // Counted first (no callback: a walk of libmicrohttpd's list), so the array is allocated once, or not at all.
    let count = MHD_get_connection_values_n(connection, kind, nil, nil)
    guard count > 0 else { return ([], values.facts) }
    values.fields.reserveCapacity(Int(count))
    withUnsafeMutablePointer(to: &values) { pointer in
        _ = MHD_get_connection_values_n(connection, kind, collectConnectionValue, pointer)
    }
    return (values.fields, values.facts)
}

/// A duration in milliseconds with three decimals, "12.345".
func milliseconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let microseconds = max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    let fraction = String(microseconds % 1000)
    return "\(microseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
}

/// The text with each control character written as `%XX`, so that a logged value stays on one line.
func escapingControlCharacters(_ text: String) -> String {
    guard text.utf8.contains(where: isASCIIControl) else { return text }
    var escaped = ""
    for scalar in text.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7F {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            escaped += hex.count == 1 ? "%0\(hex)" : "%\(hex)"
        } else {
            escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped
}

private func terminationName(_ code: MHD_RequestTerminationCode) -> String {
    switch code {
    case .REQUEST_TERMINATED_WITH_ERROR: "error"
    case .REQUEST_TERMINATED_TIMEOUT_REACHED: "timeout"
    case .REQUEST_TERMINATED_DAEMON_SHUTDOWN: "shutdown"
    case .REQUEST_TERMINATED_READ_ERROR: "read error"
    case .REQUEST_TERMINATED_CLIENT_ABORT: "client abort"
    default: "code \(code.rawValue)"
    }
}
