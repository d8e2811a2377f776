#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Synchronization

/// A response body written while the response is being sent, of unknown length (chunked), for as long as the
/// application keeps it open: Server-Sent Events, say. Put it in `HTTPResponse.stream`.
///
/// Whoever produces the bytes calls `send(_:)` from any thread; libmicrohttpd
/// takes them as the socket can take them. A stream holds no worker thread
/// while it has nothing to send: its connection is suspended
/// (`MHD_suspend_connection`, from the content reader) and resumed by the next
/// `send` or `finish`. While suspended, a client that went away is noticed at
/// the next write, so an application sends something from time to time (a
/// heartbeat).
///
/// Memory is bounded: bytes not yet taken by libmicrohttpd are at most
/// `capacity`. A `send` that would go beyond drops them, queues
/// `overflowNotice` instead and ends the stream (a slow consumer is cut off,
/// never buffered without end; the socket's send buffer is bounded alike,
/// `makeStreamResponse`). On a graceful stop the server ends every
/// open stream with `closingNotice`.
public final class HTTPStream: Sendable {
    /// The most bytes held for the client at once.
    public let capacity: Int
    /// The last bytes sent to a consumer too slow for `capacity`.
    let overflowNotice: [UInt8]
    /// The last bytes sent when the server stops.
    let closingNotice: [UInt8]
    /// Called once, on whatever thread, when the response is done with (sent, or the client gone).
    private let onEnd: @Sendable () -> Void
    private let state = Mutex(State())

    /// Why a stream ended, as far as the transport knows.
    public enum Ending: Sendable, Equatable {
        /// Still open.
        case open
        /// The application finished it.
        case finished
        /// The consumer did not keep up with `capacity`.
        case overflowed
        /// The server is stopping.
        case closing
    }

    private struct State {
        var pending: [UInt8] = []
        /// Bytes of `pending` already handed to libmicrohttpd.
        var taken = 0
        /// Where each `send`'s bytes end in `pending`, past `taken`: a cut-off keeps whole sends only.
        var ends: [Int] = []
        /// Where the last send the client has whole ends (≤ `taken`).
        var boundary = 0
        /// Whether `taken` is inside a send's bytes (the client has part of it).
        var midSend: Bool { taken > boundary }
        var ending = Ending.open
        /// The response is queued on this connection, until libmicrohttpd lets the response go.
        var connection: SuspendedConnection?
        var suspended = false
        /// libmicrohttpd has let the response go: nothing is sent any more.
        var released = false

        var held: Int { pending.count - taken }

        /// Drops what was queued beyond the send the client has part of (so that it gets it whole), then
        /// queues `last`.
        mutating func cut(queueing last: [UInt8]) {
            let kept = midSend ? Array(pending[taken..<(ends.first ?? pending.count)]) : []
            pending = kept + last
            taken = 0
            boundary = 0
            ends = kept.isEmpty ? [pending.count] : [kept.count, pending.count]
        }

        mutating func append(_ bytes: [UInt8]) {
            if taken > 0 && taken >= pending.count / 2 {
                pending.removeFirst(taken)
                for index in ends.indices { ends[index] -= taken }
                boundary -= taken
                taken = 0
            }
            pending.append(contentsOf: bytes)
            ends.append(pending.count)
        }

        mutating func take(_ length: Int) {
            taken += length
            while let end = ends.first, end <= taken {
                boundary = end
                ends.removeFirst()
            }
            if taken == pending.count {
                pending.removeAll(keepingCapacity: pending.capacity <= 64 * 1024)
                ends = []
                taken = 0
                boundary = 0
            }
        }

        /// Resumes the connection if the content reader suspended it (under the stream's lock, so that a
        /// suspension decided under it has happened before).
        mutating func wake() {
            guard suspended, let connection else { return }
            suspended = false
            MHD_resume_connection(connection.handle)
        }
    }

    public init(capacity: Int, overflowNotice: [UInt8], closingNotice: [UInt8], onEnd: @escaping @Sendable () -> Void = {}) {
        self.capacity = max(1, capacity)
        self.overflowNotice = overflowNotice
        self.closingNotice = closingNotice
        self.onEnd = onEnd
    }

    /// Queues `bytes` for the client; false when the stream is no longer open (ended, gone, or cut off by
    /// this very call for going beyond `capacity`).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        state.withLock { state in
            guard state.ending == .open, !state.released else { return false }
            if state.held + bytes.count > capacity {
                state.cut(queueing: overflowNotice)
                state.ending = .overflowed
                state.wake()
                return false
            }
            state.append(bytes)
            state.wake()
            return true
        }
    }

    /// Sends `last` (after what is queued) and ends the response. Does nothing once the stream has ended.
    public func finish(_ last: [UInt8] = []) {
        end(.finished, last)
    }

    /// How the stream ended, `.open` while it has not.
    public var ending: Ending { state.withLock { $0.ending } }

    /// Whether the stream still takes bytes.
    public var isOpen: Bool { state.withLock { $0.ending == .open && !$0.released } }

    /// Ends the stream with `closingNotice`: the server is stopping.
    func close() {
        end(.closing, closingNotice)
    }

    private func end(_ ending: Ending, _ last: [UInt8]) {
        state.withLock { state in
            guard state.ending == .open, !state.released else { return }
            state.ending = ending
            if state.held + last.count > capacity {
                state.cut(queueing: last)
            } else if !last.isEmpty {
                state.append(last)
            }
            state.wake()
        }
    }

    /// The response is queued on `connection`.
    func attach(to connection: OpaquePointer) {
        let connection = SuspendedConnection(handle: connection)
        state.withLock { $0.connection = connection }
    }

    /// The content reader: copies up to `count` bytes into `buffer`; 0 after suspending the connection when
    /// there is nothing to send yet; `endOfStream` once ended and drained.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        state.withLock { state in
            if state.held > 0 {
                let length = min(count, state.held)
                state.pending.withUnsafeBytes { bytes in
                    buffer.copyMemory(from: bytes.baseAddress! + state.taken, byteCount: length)
                }
                state.take(length)
                return length
            }
            if state.ending != .open { return HTTPStream.endOfStream }
            guard let connection = state.connection else { return HTTPStream.endOfStream }
            // Documented as safe from the content reader: the connection leaves the event loop until resumed.
            state.suspended = true
            MHD_suspend_connection(connection.handle)
            return 0
        }
    }

    /// libmicrohttpd let the response go: the stream takes nothing more.
    func release() {
        let first = state.withLock { state -> Bool in
            guard !state.released else { return false }
            state.released = true
            state.connection = nil
            state.suspended = false
            state.pending = []
            state.taken = 0
            return true
        }
        if first { onEnd() }
    }

    /// `MHD_CONTENT_READER_END_OF_STREAM`, a cast macro Swift does not import.
    static let endOfStream = -1
}

/// The streams a server has open, so that a graceful stop can end them (a suspended connection must be
/// resumed before the daemon stops).
final class HTTPStreams: Sendable {
    private let open = Mutex<[ObjectIdentifier: HTTPStream]>([:])
    private let closing = Atomic<Bool>(false)

    /// Registers a stream being queued; a stream queued once closing began is closed at once.
    func add(_ stream: HTTPStream) {
        open.withLock { $0[ObjectIdentifier(stream)] = stream }
        if closing.load(ordering: .sequentiallyConsistent) { stream.close() }
    }

    func remove(_ stream: HTTPStream) {
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    /// Ends every open stream with its closing notice, and any queued from now on.
    func closeAll() {
        closing.store(true, ordering: .sequentiallyConsistent)
        for stream in open.withLock({ Array($0.values) }) { stream.close() }
    }

    var count: Int { open.withLock { $0.count } }
}

/// What a streamed response's callbacks reach through their `cls`: the stream and the server's registry, retained
/// from the response's creation until libmicrohttpd frees it.
final class StreamResponseContext {
    let stream: HTTPStream
    let streams: HTTPStreams

    init(stream: HTTPStream, streams: HTTPStreams) {
        self.stream = stream
        self.streams = streams
    }
}

extension DaemonContext {
    /// A libmicrohttpd response whose body is read from `stream` as the socket takes it (chunked).
    ///
    /// The socket's send buffer is set to the stream's capacity (16 KiB to 1 MiB) rather than left to grow to
    /// the kernel's maximum (4 MiB on Linux): what a client that stopped reading holds in the kernel is bounded
    /// too, and it is found slow after that much rather than after megabytes.
    func makeStreamResponse(_ stream: HTTPStream, connection: OpaquePointer) -> OpaquePointer? {
        stream.attach(to: connection)
        let socket = daogate_mhd_connection_socket(connection)
        if socket >= 0 {
            var size = Int32(min(max(stream.capacity, 16 * 1024), 1 << 20))
            setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let context = StreamResponseContext(stream: stream, streams: streams)
        let retained = Unmanaged.passRetained(context).toOpaque()
        guard let handle = MHD_create_response_from_callback(UInt64.max, 16 * 1024, readStream, retained, releaseStream) else {
            Unmanaged<StreamResponseContext>.fromOpaque(retained).release()
            stream.release()
            return nil
        }
        streams.add(stream)
        return handle
    }
}

/// The content reader of a streamed response (`MHD_ContentReaderCallback`).
func readStream(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
    guard let cls, let buffer else { return HTTPStream.endOfStream }
    return Unmanaged<StreamResponseContext>.fromOpaque(cls)._withUnsafeGuaranteedRef { context in
        context.stream.read(into: UnsafeMutableRawPointer(buffer), count: count)
    }
}

/// Called once libmicrohttpd is done with a streamed response (`MHD_ContentReaderFreeCallback`).
func releaseStream(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    let context = Unmanaged<StreamResponseContext>.fromOpaque(cls).takeRetainedValue()
    context.streams.remove(context.stream)
    context.stream.release()
}
