#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD

// libmicrohttpd's callbacks: file-scope functions that capture nothing, reaching
// the server through `cls` (a `DaemonContext`, unretained) and each request
// through `con_cls` (a `RequestState`, retained from the request line until
// completion) and each connection through `socket_context` (a
// `ConnectionDeadline`, retained from its start until its close). The context and a request's state are
// borrowed where a callback finds them (`_withUnsafeGuaranteedRef`), not retained and released on each call:
// the access handler alone runs three times a request, on every worker thread, and the context's count is
// one all threads would write.

/// Called with the request line's target, before libmicrohttpd parses it: the request's state, retained.
func handleTarget(
    _ cls: UnsafeMutableRawPointer?,
    _ uri: UnsafePointer<CChar>?,
    _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls, let uri else { return nil }
    return Unmanaged<DaemonContext>.fromOpaque(cls)._withUnsafeGuaranteedRef { context in
        Unmanaged.passRetained(context.arrive(target: uri, connection: connection)).toOpaque()
    }
}

/// Called when a connection starts and when it closes (before libmicrohttpd closes its socket).
func handleConnection(
    _ cls: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ event: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    Unmanaged<DaemonContext>.fromOpaque(cls)._withUnsafeGuaranteedRef { context in
        switch event {
        case .CONNECTION_NOTIFY_STARTED: context.opened(connection: connection, socketContext: socketContext)
        default: context.closed(socketContext: socketContext)
        }
    }
}

/// The access handler: called once the headers are in, for each piece of the body, and once the request is complete.
func handleAccess(
    _ cls: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?,
    _ version: UnsafePointer<CChar>?,
    _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?,
    _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    // Every request has its state from the request line (handleTarget).
    guard let cls, let connection, let uploadDataSize, let slot, let pointer = slot.pointee else { return .NO }
    return Unmanaged<DaemonContext>.fromOpaque(cls)._withUnsafeGuaranteedRef { context in
        Unmanaged<RequestState>.fromOpaque(pointer)._withUnsafeGuaranteedRef { state in
            guard state.begun else {
                return context.begin(state: state, connection: connection, method: method, url: url, version: version)
            }
            if uploadDataSize.pointee > 0 {
                if let uploadData {
                    context.receive(uploadData, count: uploadDataSize.pointee, state: state)
                }
                uploadDataSize.pointee = 0
                return .YES
            }
            return context.finish(state: state, connection: connection)
        }
    }
}

/// The completion callback: releases the request's state, whether it was answered or the client went away.
func handleCompletion(
    _ cls: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ termination: MHD_RequestTerminationCode
) {
    guard let cls, let slot, let pointer = slot.pointee else { return }
    slot.pointee = nil
    let state = Unmanaged<RequestState>.fromOpaque(pointer).takeRetainedValue()
    Unmanaged<DaemonContext>.fromOpaque(cls)._withUnsafeGuaranteedRef { $0.complete(state: state, termination: termination) }
}

/// libmicrohttpd's error logger: formats the message and hands it to the context.
func handleDiagnostic(_ cls: UnsafeMutableRawPointer?, _ format: UnsafePointer<CChar>?, _ arguments: CVaListPointer?) {
    guard let cls, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    guard vsnprintf(&buffer, buffer.count, format, arguments) >= 0 else { return }
    var message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    while message.last?.isNewline == true { message.removeLast() }
    Unmanaged<DaemonContext>.fromOpaque(cls)._withUnsafeGuaranteedRef { $0.diagnose(message) }
}

/// Appends one header or query argument to the `ConnectionValues` that `cls` points to; a header field's raw
/// bytes are checked on the way (`HeaderFacts`).
///
/// libmicrohttpd drops the whitespace before a header value; the whitespace
/// after it, not part of the value either (RFC 9110 §5.5), is dropped here.
func collectConnectionValue(
    _ cls: UnsafeMutableRawPointer?,
    _ kind: MHD_ValueKind,
    _ key: UnsafePointer<CChar>?,
    _ keySize: Int,
    _ value: UnsafePointer<CChar>?,
    _ valueSize: Int
) -> MHD_Result {
    guard let cls else { return .NO }
    var valueBytes = UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : valueSize)
    let nameBytes = UnsafeRawBufferPointer(start: key, count: key == nil ? 0 : keySize)
    let values = cls.assumingMemoryBound(to: ConnectionValues.self)
    if kind == .HEADER_KIND {
        while let last = valueBytes.last, last == 0x20 || last == 0x09 {
            valueBytes = UnsafeRawBufferPointer(rebasing: valueBytes.dropLast())
        }
        values.pointee.facts.note(name: nameBytes, value: valueBytes, at: values.pointee.fields.count)
    }
    // The names and values most requests send are literals (`KnownStrings`): no string to make for them.
    values.pointee.fields.append((name: KnownStrings.string(decoding: nameBytes),
                                  value: KnownStrings.string(decoding: valueBytes)))
    return .YES
}

/// The header fields or query arguments of a request as `collectConnectionValue` collects them.
struct ConnectionValues {
    var fields: [(name: String, value: String)] = []
    /// For header fields: what their bytes say of the request's framing.
    var facts = HeaderFacts()
}
