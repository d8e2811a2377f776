import ASCIIBytes
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// The access log's lines, buffered as nginx's `access_log … buffer= flush=`: formatted into memory and written
/// when a buffer fills, every `interval`, and on `stop()` (a graceful stop loses no line).
///
/// A write per line (swift-log's `StreamLogHandler` flushes stdout after each,
/// and formats the time with `localtime`, which re-checks the time zone file)
/// cost daogate about a third of its PK-select throughput. Each thread that
/// writes lines has a buffer of its own, as each nginx worker has: the
/// server's worker threads never wait for one another's lines, nor pass a
/// shared buffer's memory between their cores. So lines of different
/// threads reach the output in chunks, one thread's after another's, not in
/// the order they were written across threads (each line has its time of
/// day). A crash or SIGKILL loses what the buffers hold: at most `interval`'s
/// lines, and at most `capacity` bytes per thread.
///
/// On a pipe (or a terminal, a socket) a buffer leaves in `write`s of whole
/// lines and at most `PIPE_BUF` bytes each, which a pipe keeps whole: the
/// other log lines (one `write` each, through stdio) can come between two
/// writes, never inside a line. To a regular file it leaves in one `write`
/// (Linux writes a regular file's bytes of one `write` together), a system
/// call per buffer instead of one per 4 KiB.
public final class AccessLogWriter: Sendable {
    /// Where the lines go: standard output unless a test gives a file.
    private let descriptor: Int32
    /// The bytes a thread's buffer holds before it is written.
    public let capacity: Int
    /// The most bytes one `write` takes: `PIPE_BUF`, or no limit when the descriptor is a regular file.
    public let largestWrite: Int
    public let interval: Duration
    /// This writer's number, which names it in a thread's cache (an address could be reused by a later writer).
    private let number = nextWriterNumber.add(1, ordering: .relaxed).newValue
    /// Every thread's buffer, for `flush()`.
    private let buffers = Mutex<[LineBuffer]>([])
    /// Held while a chunk is written, so that chunks leave in the order they were taken.
    private let writing = Mutex<Void>(())
    private let stopped = Atomic<Bool>(false)

    public init(descriptor: Int32 = STDOUT_FILENO, capacity: Int = 64 * 1024, interval: Duration = .seconds(1)) {
        self.descriptor = descriptor
        self.capacity = capacity
        self.interval = interval
        var status = stat()
        let isRegularFile = fstat(descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        self.largestWrite = isRegularFile ? Int.max : Int(PIPE_BUF)
    }

    /// Starts the thread that writes the buffers every `interval`; it ends after `stop()`.
    public func start() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        guard pthread_create(&thread, nil, accessLogFlusher, context) == 0 else {
            Unmanaged<AccessLogWriter>.fromOpaque(context).release()
            return
        }
        pthread_detach(thread)
    }

    /// Writes what is buffered and makes every later line go out at once.
    public func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        flush()
    }

    /// Writes what every thread's buffer holds.
    public func flush() {
        for buffer in buffers.withLock({ $0 }) { flush(buffer) }
    }

    private func flush(_ buffer: LineBuffer) {
        writing.withLock { _ in
            let chunk = buffer.pending.withLock { pending -> [UInt8] in
                guard pending.bytes.count > 0 else { return [] }
                defer { pending.bytes.removeAll() }
                return pending.bytes.copied()
            }
            chunk.withUnsafeBytes { write($0) }
        }
    }

    /// The calling thread's buffer: the one it used last (a thread-local cache), else the one this writer has
    /// for the thread, else a new one.
    private func threadBuffer() -> LineBuffer {
        let cache = ThreadCache.current
        if cache.writer == number, let buffer = cache.buffer { return buffer }
        let thread = pthread_self()
        let buffer = buffers.withLock { buffers -> LineBuffer in
            if let known = buffers.first(where: { pthread_equal($0.thread, thread) != 0 }) { return known }
            let made = LineBuffer(thread: thread, capacity: capacity)
            buffers.append(made)
            return made
        }
        cache.writer = number
        cache.buffer = buffer
        return buffer
    }

    /// Writes the lines in pieces of whole lines of at most `largestWrite` bytes (a longer line alone); gives up
    /// on an error other than EINTR (a closed standard output loses the log, not the server).
    private func write(_ bytes: UnsafeRawBufferPointer) {
        let newline = UInt8(ascii: "\n")
        var start = 0
        while start < bytes.count {
            var end = bytes.count - start > largestWrite ? start + largestWrite : bytes.count
            if end < bytes.count {
                if let last = bytes[start..<end].lastIndex(of: newline) {
                    end = last + 1
                } else {
                    end = (bytes[end...].firstIndex(of: newline) ?? (bytes.count - 1)) + 1
                }
            }
            while start < end {
                let written = Glibc.write(descriptor, bytes.baseAddress! + start, end - start)
                if written < 0 {
                    guard errno == EINTR else { return }
                    continue
                }
                start += written
            }
        }
    }

    /// Appends one line in `StreamLogHandler`'s format: `time level label: key=value… [source] message`, the
    /// fields (one per name) sorted by name, the time of day recomputed once a second.
    func append(level: Logger.Level, label: String, fields: [(name: String, value: String)], source: String, message: String) {
        let sorted = fields.sorted(by: { $0.name < $1.name })
        let prefix = AccessLogLine.prefix(level: level, label: label)
        let suffix = AccessLogLine.suffix(source: source, message: message)
        append { line in
            line.append(prefix)
            for field in sorted { line.field(field.name, field.value) }
            line.append(suffix)
        }
    }

    /// Appends one line to the calling thread's buffer: its time of day, then what `write` puts after it
    /// (`AccessLogLine`'s pieces, ending with its `suffix`), written straight into the buffer (no line of its own to
    /// allocate and copy: a cost paid on every request).
    func append(_ write: (inout AccessLogLine) -> Void) {
        let buffer = threadBuffer()
        let full = buffer.pending.withLock { pending -> Bool in
            let now = time(nil)
            if now != pending.second || pending.stamp.isEmpty {
                pending.second = now
                pending.stamp = timestamp(now)
            }
            var line = AccessLogLine(taking: pending.bytes)
            line.append(pending.stamp)
            write(&line)
            pending.bytes = line.bytes
            return pending.bytes.count >= capacity
        }
        // A line appended after `stop()` took this buffer sees `stopped` (set before), and goes out here.
        if full || stopped.load(ordering: .sequentiallyConsistent) { flush(buffer) }
    }

    fileprivate func flushEveryInterval() {
        while !stopped.load(ordering: .relaxed) {
            var pause = timespec(interval)
            nanosleep(&pause, nil)  // a signal cutting it short only flushes sooner
            flush()
        }
    }
}

/// One thread's access-log lines not yet written.
private final class LineBuffer: Sendable {
    let thread: pthread_t
    let pending: Mutex<Pending>

    struct Pending {
        var bytes = LineBytes()
        /// The time of day as `StreamLogHandler` writes it, recomputed once a second.
        var second = 0
        var stamp: [UInt8] = []
    }

    init(thread: pthread_t, capacity: Int) {
        self.thread = thread
        var pending = Pending()
        pending.bytes.reserve(capacity + 1024)
        self.pending = Mutex(pending)
    }

    deinit {
        pending.withLock { $0.bytes.deallocate() }
    }
}

/// Bytes in memory of their own, written in place: what a thread's lines are appended to. No reference is
/// counted and no uniqueness checked per piece, as an array's `append` does (a line is some fifteen pieces,
/// on every request). A plain value: the copy in `LineBuffer.Pending` owns the memory and frees it; a line being
/// written holds it (`AccessLogLine`) until it is handed back, grown or not.
struct LineBytes {
    private(set) var base: UnsafeMutablePointer<UInt8>?
    private(set) var count = 0
    private(set) var capacity = 0

    /// Room for at least `capacity` bytes in all.
    mutating func reserve(_ capacity: Int) {
        guard capacity > self.capacity else { return }
        let grown = max(capacity, self.capacity * 2)
        guard let moved = realloc(base, grown)?.assumingMemoryBound(to: UInt8.self) else { fatalError("out of memory") }
        base = moved
        self.capacity = grown
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return }
        if count + bytes.count > capacity { reserve(count + bytes.count) }
        (base! + count).update(from: start.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        count += bytes.count
    }

    mutating func append(_ byte: UInt8) {
        if count == capacity { reserve(count + 1) }
        base![count] = byte
        count += 1
    }

    /// The bytes, as an array of their own.
    func copied() -> [UInt8] {
        guard let base else { return [] }
        return Array(UnsafeBufferPointer(start: base, count: count))
    }

    mutating func removeAll() {
        count = 0
    }

    func deallocate() {
        free(base)
    }
}

private let nextWriterNumber = Atomic<UInt64>(0)

/// The buffer a thread last appended to, and its writer's number: a thread-local lookup instead of a search
/// under a lock shared by every thread. One per thread, released when the thread ends.
private final class ThreadCache {
    var writer: UInt64 = 0
    var buffer: LineBuffer?

    static var current: ThreadCache {
        if let pointer = pthread_getspecific(threadCacheKey) {
            return Unmanaged<ThreadCache>.fromOpaque(pointer).takeUnretainedValue()
        }
        let cache = ThreadCache()
        pthread_setspecific(threadCacheKey, Unmanaged.passRetained(cache).toOpaque())
        return cache
    }
}

private let threadCacheKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { pointer in
        if let pointer { Unmanaged<ThreadCache>.fromOpaque(pointer).release() }
    }
    return key
}()

/// One access-log line after its time of day, written as bytes into the writer's buffer:
/// ` level label: key=value… [source] message\n`.
///
/// Values have their control characters written as `%XX` (`escapingControlCharacters`), so a line stays one
/// line; a control character is one byte in UTF-8 and no other character's bytes are below 0x80, so this is
/// done byte by byte. Every piece is a copy of contiguous bytes or digits written in place: no string is made.
struct AccessLogLine {
    /// The buffer the line is written at the end of; its owner takes it back, with the line, when it is written.
    private(set) var bytes: LineBytes

    init(taking buffer: LineBytes) {
        bytes = buffer
    }

    /// ` level label:`, the line's start after the time of day; made once per logger.
    static func prefix(level: Logger.Level, label: String) -> [UInt8] {
        Array(" \(level.rawValue) \(label):".utf8)
    }

    /// ` [source] message\n`, the line's end; made once per logger.
    static func suffix(source: String, message: String) -> [UInt8] {
        Array(" [\(source)] \(message)\n".utf8)
    }

    /// Bytes as they are (a prefix, a suffix, a field's ` name=`).
    mutating func append(_ piece: [UInt8]) {
        piece.withUnsafeBytes { bytes.append($0) }
    }

    /// A literal's bytes (a field's ` name=`).
    mutating func append(_ piece: StaticString) {
        bytes.append(UnsafeRawBufferPointer(start: piece.utf8Start, count: piece.utf8CodeUnitCount))
    }

    private mutating func name(_ name: String) {
        bytes.append(0x20)
        appendUTF8(name)
        bytes.append(UInt8(ascii: "="))
    }

    /// ` name=value`, the value's control characters escaped.
    mutating func field(_ name: String, _ value: String) {
        self.name(name)
        appendEscaped(value)
    }

    /// `value` after a ` name=` already written, its control characters escaped.
    mutating func value(_ value: String) {
        appendEscaped(value)
    }

    /// `value` in decimal, after a ` name=` already written.
    mutating func value(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDecimal(UInt64(value.magnitude))
    }

    /// `nanoseconds` as milliseconds with three decimals (`milliseconds(_:)`), after a ` name=` already written.
    mutating func milliseconds(nanoseconds: UInt64) {
        let microseconds = nanoseconds / 1000
        appendDecimal(microseconds / 1000)
        // Up to 999: the digits are taken before the narrowing to a byte (a fraction of 345 is not 345 mod 256).
        let fraction = microseconds % 1000
        let zero = UInt8(ascii: "0")
        let digits = (UInt8(ascii: "."), zero + UInt8(fraction / 100), zero + UInt8(fraction / 10 % 10), zero + UInt8(fraction % 10))
        withUnsafeBytes(of: digits) { bytes.append($0) }
    }

    /// The text's bytes, copied at once when they are contiguous (native and literal strings).
    private mutating func appendUTF8(_ text: String) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes.append(UnsafeRawBufferPointer($0)) }
        if copied == nil { for byte in text.utf8 { bytes.append(byte) } }
    }

    private mutating func appendEscaped(_ value: String) {
        // Most values have nothing to escape: one copy of their bytes.
        let plain = value.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard firstASCIIControl(in: UnsafeRawBufferPointer(bytes)) == nil else { return false }
            self.bytes.append(UnsafeRawBufferPointer(bytes))
            return true
        }
        if plain == true { return }
        for byte in value.utf8 {
            if isASCIIControl(byte) {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigit(byte >> 4))
                bytes.append(hexDigit(byte & 0x0F))
            } else {
                bytes.append(byte)
            }
        }
    }

    private func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    /// The digits of `value`, from the most significant (no string made): written from the least into 20 bytes
    /// on the stack (the most a `UInt64` has), then copied at once.
    private mutating func appendDecimal(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { digits in
            var start = 20, rest = value
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(UnsafeRawBufferPointer(rebasing: digits[start..<20]))
        }
    }
}

/// `StreamLogHandler`'s time format, `%Y-%m-%dT%H:%M:%S%z` in local time; `localtime_r` reads the zone once.
private func timestamp(_ time: time_t) -> [UInt8] {
    var time = time
    var local = tm()
    guard localtime_r(&time, &local) != nil else { return Array("<unknown>".utf8) }
    var buffer = [CChar](repeating: 0, count: 64)
    let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
    return buffer[..<count].map { UInt8(bitPattern: $0) }
}

private func accessLogFlusher(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let writer = Unmanaged<AccessLogWriter>.fromOpaque(context!).takeRetainedValue()
    writer.flushEveryInterval()
    return nil
}

/// A swift-log handler writing through an `AccessLogWriter`: the access log's `Logger`.
public struct AccessLogHandler: LogHandler {
    public let writer: AccessLogWriter
    public let label: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, writer: AccessLogWriter, logLevel: Logger.Level) {
        self.label = label
        self.writer = writer
        self.logLevel = logLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata {
            if merged.isEmpty { merged = explicit } else { merged.merge(explicit) { $1 } }
        }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let fields = merged.map { field -> (name: String, value: String) in
            switch field.value {
            case .string(let text): (field.key, text)
            default: (field.key, "\(field.value)")
            }
        }
        writer.append(level: event.level, label: label, fields: fields, source: event.source, message: event.message.description)
    }

    /// The writer and label of a logger that writes through an `AccessLogWriter` at info level, which the server
    /// hands a request's fields directly (no `Logger.Metadata` dictionary per request).
    static func direct(_ logger: Logger?) -> (writer: AccessLogWriter, label: String)? {
        guard let logger, logger.logLevel <= .info, let handler = logger.handler as? AccessLogHandler,
              handler.metadata.isEmpty, handler.metadataProvider == nil else { return nil }
        return (handler.writer, handler.label)
    }
}
