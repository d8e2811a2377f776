#if canImport(Glibc)
import Glibc
#endif
import HTTPTransport
import Logging
import Synchronization
import Testing

@Suite("The buffered access-log writer")
struct AccessLogWriterTests {
    /// A temporary file the writer writes to, read back by path.
    final class Sink {
        let path = "/tmp/daogate-access-\(UInt64.random(in: 0...UInt64.max)).log"
        let descriptor: Int32
        init() { descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600) }
        deinit { close(descriptor); unlink(path) }
        var text: String {
            guard let file = fopen(path, "r") else { return "" }
            defer { fclose(file) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = fread(&chunk, 1, chunk.count, file)
                if count == 0 { break }
                bytes += chunk[..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        var lines: [Substring] { text.split(separator: "\n") }
    }

    /// What swift-log's `StreamLogHandler` writes, for comparison.
    final class Shared: TextOutputStream, @unchecked Sendable {
        let lock = Mutex<String>("")
        func write(_ string: String) { lock.withLock { $0 += string } }
    }

    func logger(_ writer: AccessLogWriter, level: Logger.Level = .info) -> Logger {
        Logger(label: "daogate.access") { AccessLogHandler(label: $0, writer: writer, logLevel: level) }
    }

    @Test func aLineIsWhatStreamLogHandlerWrites() throws {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, interval: .seconds(3600))
        let reference = Shared()
        let streamLogger = Logger(label: "daogate.access") { StreamLogHandler(label: $0, stream: reference, metadataProvider: nil) }
        let metadata: Logger.Metadata = ["status": "200", "path": "/dao/Demo/getItem", "method": "POST",
                                         "duration_ms": "0.123", "user": "user#0123"]
        logger(writer).info("request", metadata: metadata)
        streamLogger.info("request", metadata: metadata)
        logger(writer).warning("no metadata")
        streamLogger.warning("no metadata")
        writer.flush()
        let ours = sink.lines
        let theirs = reference.lock.withLock { $0 }.split(separator: "\n")
        try #require(ours.count == 2 && theirs.count == 2)
        for (mine, reference) in zip(ours, theirs) {
            // The time of day (to the second, with the zone) may differ by a second; the rest is the same.
            let time = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} /#
            #expect(mine.prefixMatch(of: time) != nil, "\(mine)")
            #expect(mine.drop { $0 != " " } == reference.drop { $0 != " " })
        }
        #expect(ours[0].hasSuffix(" info daogate.access: duration_ms=0.123 method=POST path=/dao/Demo/getItem status=200 user=user#0123 [HTTPTransportTests] request"))
    }

    @Test func linesWaitInTheBufferUntilItFillsOrIsFlushed() {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, capacity: 1000, interval: .seconds(3600))
        let log = logger(writer)
        log.info("request", metadata: ["n": "1"])
        #expect(sink.text.isEmpty)
        writer.flush()
        #expect(sink.lines.count == 1)
        // Lines of about 80 bytes: 11 stay under 1,000 bytes; the one that crosses it writes them all.
        for n in 2...12 { log.info("request", metadata: ["n": "\(n)"]) }
        #expect(sink.lines.count == 1)
        var n = 12
        while sink.lines.count == 1 && n < 40 {
            n += 1
            log.info("request", metadata: ["n": "\(n)"])
        }
        #expect(sink.lines.count == n)
        #expect(n <= 15)
        #expect(sink.lines.enumerated().allSatisfy { $0.element.contains(" n=\($0.offset + 1) ") })
    }

    /// A line longer than the whole buffer grows it and is written whole, its control characters escaped; the
    /// lines after it go on in the same buffer.
    @Test func aLineLongerThanTheBufferIsWrittenWhole() {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, capacity: 1000, interval: .seconds(3600))
        let log = logger(writer)
        let long = String(repeating: "0123456789", count: 10_000) + "\n\u{7F}end"
        log.info("request", metadata: ["value": .string(long)])
        log.info("request", metadata: ["n": "2"])
        writer.flush()
        let lines = sink.lines
        #expect(lines.count == 2)
        #expect(lines.first?.hasSuffix(" value=" + String(repeating: "0123456789", count: 10_000) + "%0A%7Fend [HTTPTransportTests] request") == true)
        #expect(lines.last?.hasSuffix(" n=2 [HTTPTransportTests] request") == true)
    }

    @Test func theFlusherWritesWithinTheInterval() {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, interval: .milliseconds(50))
        writer.start()
        defer { writer.stop() }
        logger(writer).info("request")
        #expect(eventually(within: .seconds(5)) { sink.lines.count == 1 })
    }

    @Test func stopWritesWhatIsBufferedAndLaterLinesAtOnce() {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, interval: .seconds(3600))
        writer.start()
        let log = logger(writer)
        for n in 1...100 { log.info("request", metadata: ["n": "\(n)"]) }
        #expect(sink.text.isEmpty)
        writer.stop()
        #expect(sink.lines.count == 100)
        log.info("late")
        #expect(sink.lines.count == 101)
    }

    @Test func linesFromManyThreadsAreWholeAndNoneIsLost() {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, capacity: 4096, interval: .milliseconds(1))
        writer.start()
        let log = logger(writer)
        let threads = 8, each = 2000
        onThreads(threads) { thread in
            for n in 0..<each { log.info("request", metadata: ["thread": "\(thread)", "n": "\(n)"]) }
        }
        writer.stop()
        let lines = sink.lines
        #expect(lines.count == threads * each)
        #expect(lines.allSatisfy { $0.hasSuffix("[HTTPTransportTests] request") })
        #expect(Set(lines.map { $0.drop { $0 != " " } }).count == threads * each)
    }

    /// A buffer goes to a regular file in one `write` (counted by the thread's `syscw` in /proc, the thread
    /// `stop()` writes on); to a pipe in `write`s of whole lines of at most `PIPE_BUF` bytes.
    @Test func aBufferGoesToAFileInOneWriteAndToAPipeInPiecesOfWholeLines() throws {
        let sink = Sink()
        let toFile = AccessLogWriter(descriptor: sink.descriptor, interval: .seconds(3600))
        #expect(toFile.largestWrite == Int.max)
        let log = logger(toFile)
        for n in 0..<400 { log.info("request", metadata: ["n": "\(n)", "pad": "\(String(repeating: "p", count: 60))"]) }
        let before = try writeCalls()
        toFile.stop()
        #expect(try writeCalls() - before == 1)
        #expect(sink.lines.count == 400 && sink.text.utf8.count > 4 * Int(PIPE_BUF))

        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let toPipe = AccessLogWriter(descriptor: ends[1], interval: .seconds(3600))
        #expect(toPipe.largestWrite == Int(PIPE_BUF))
        let pipeLog = logger(toPipe)
        for n in 0..<400 { pipeLog.info("request", metadata: ["n": "\(n)", "pad": "\(String(repeating: "p", count: 60))"]) }
        let pipeBefore = try writeCalls()
        toPipe.stop()
        let written = try writeCalls() - pipeBefore
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        while true {
            let count = read(ends[0], &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 400 && lines.allSatisfy { $0.hasSuffix("[HTTPTransportTests] request") })
        #expect(written >= (bytes.count + Int(PIPE_BUF) - 1) / Int(PIPE_BUF) && written > 1)
    }

    /// The write system calls this thread has made (`syscw` in /proc/thread-self/io).
    private func writeCalls() throws -> Int {
        guard let file = fopen("/proc/thread-self/io", "r") else { throw POSIXFailure(code: errno) }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if text.hasPrefix("syscw:") { return Int(String(text.dropFirst(6).filter(\.isNumber))) ?? -1 }
        }
        return -1
    }

    /// Each thread has its buffer per writer: a thread writing to two writers in turn (and to a writer made
    /// after another was dropped, which may have its address) puts each line in its own writer's output.
    @Test func aThreadWritingToSeveralWritersKeepsTheirLinesApart() {
        let first = Sink(), second = Sink()
        let a = AccessLogWriter(descriptor: first.descriptor, interval: .seconds(3600))
        let b = AccessLogWriter(descriptor: second.descriptor, interval: .seconds(3600))
        for n in 0..<10 {
            logger(a).info("request", metadata: ["to": "a", "n": "\(n)"])
            logger(b).info("request", metadata: ["to": "b", "n": "\(n)"])
        }
        a.stop()
        b.stop()
        #expect(first.lines.count == 10 && first.lines.allSatisfy { $0.contains(" to=a ") })
        #expect(second.lines.count == 10 && second.lines.allSatisfy { $0.contains(" to=b ") })
        for round in 0..<20 {
            let sink = Sink()
            do {
                let writer = AccessLogWriter(descriptor: sink.descriptor, interval: .seconds(3600))
                logger(writer).info("request", metadata: ["round": "\(round)"])
                writer.stop()
            }
            #expect(sink.lines.count == 1 && sink.lines.first?.contains(" round=\(round) ") == true)
        }
    }

    /// A server whose access log is an `AccessLogHandler`'s hands it each request's fields directly: the same line.
    @Test func aServerWritesItsRequestLinesThroughTheWriter() throws {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor, interval: .seconds(3600))
        let responder = RecordingResponder { _ in
            HTTPResponse(status: 201, body: Array("created".utf8), logMetadata: [("user", "digest-1234"), ("path", "forged")])
        }
        try withServer(responder, accessLog: logger(writer)) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /log/me%0Ahere?q=v HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 201)
        }
        writer.stop()
        let lines = sink.lines
        try #require(lines.count == 1, "\(lines)")
        let line = try #require(lines[0].wholeMatch(of: #/\S+ info daogate\.access: duration_ms=(\d+\.\d{3}) (.*)/#))
        #expect(line.2 == "method=GET path=/log/me%0Ahere status=201 user=digest-1234 [HTTPTransport] request")
    }

    @Test func theLevelFiltersLines() {
        let sink = Sink()
        let writer = AccessLogWriter(descriptor: sink.descriptor)
        logger(writer, level: .warning).info("request")
        writer.stop()
        #expect(sink.text.isEmpty)
    }
}

private struct POSIXFailure: Error { let code: Int32 }

/// Runs `body` on `count` threads at once and waits for them all.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Work {
        let body: @Sendable (Int) -> Void
        let index: Int
        init(_ body: @escaping @Sendable (Int) -> Void, _ index: Int) { self.body = body; self.index = index }
    }
    var threads: [pthread_t] = []
    for index in 0..<count {
        var thread = pthread_t()
        let work = Unmanaged.passRetained(Work(body, index)).toOpaque()
        pthread_create(&thread, nil, { context in
            let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
            work.body(work.index)
            return nil
        }, work)
        threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
}
