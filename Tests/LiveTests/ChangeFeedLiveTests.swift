import Foundation
import Testing

/// `GET /changes` against a real `daogate serve`, read by a Server-Sent Events client on a raw socket (HTTP/1.1,
/// chunked), with writes from curl: each rule of issue 14's change feed.
@Suite(.serialized) struct ChangeFeedLiveTests {
    /// A user's notes and a board in the common database.
    static let modules = """
    <module name="Notes" initializer="createTable" tableName="notes" version="1.0" userDependent="true">
      <update id="createTable">create table if not exists ${T} (id integer primary key, body text not null unique)</update>
      <insert id="add" arguments="$body:string">insert into ${T} (body) values (#{body})</insert>
      <insert id="addMany" arguments="$count:int, $tag:string">
        insert into ${T} (body) with recursive n(i) as (select 1 union all select i + 1 from n where i &lt; #{count})
        select #{tag} || '-' || i from n
      </insert>
      <update id="edit" arguments="$id:int, $body:string">update ${T} set body = #{body} where id = #{id}</update>
      <delete id="remove" arguments="$id:int">delete from ${T} where id = #{id}</delete>
    </module>
    """
    static let board = """
    <module name="Board" initializer="createTable" tableName="board" version="1.0">
      <update id="createTable">create table if not exists ${T} (id integer primary key, text text)</update>
      <insert id="post" arguments="$text:string">insert into ${T} (text) values (#{text})</insert>
    </module>
    """

    static func server(_ arguments: [String] = [], environment: [String: String] = [:]) throws -> (LiveServer, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-feed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try modules.write(to: folder.appendingPathComponent("Notes.xml"), atomically: true, encoding: .utf8)
        try board.write(to: folder.appendingPathComponent("Board.xml"), atomically: true, encoding: .utf8)
        return (try LiveServer(arguments: arguments, environment: environment, modules: folder.path), folder)
    }

    @discardableResult
    static func call(_ server: LiveServer, _ user: String?, _ module: String, _ method: String, _ arguments: String,
                     headers: [String] = []) throws -> LiveServer.Reply {
        try server.curl("/dao/\(module)/\(method)", body: arguments, headers: (user.map { ["X-User-Id: \($0)"] } ?? []) + headers)
    }

    @Test func onlyCommittedTransactionsAreEventsWithModuleTableOperationAndRowids() throws {
        let (server, folder) = try Self.server()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
        #expect(stream.status == 200)
        #expect(stream.headers["content-type"]?.hasPrefix("text/event-stream") == true)
        let ready = try #require(stream.next())
        #expect(ready.event == "ready")

        try Self.call(server, "ann", "Notes", "add", #"{"body": "one"}"#)
        // Rolled back: the second call breaks the unique constraint, so the first one's row never was.
        let failed = try server.curl("/transaction", body: #"{"calls": [{"module": "Notes", "method": "add", "arguments": {"body": "two"}}, {"module": "Notes", "method": "add", "arguments": {"body": "one"}}]}"#,
                                     headers: ["X-User-Id: ann"])
        #expect(failed.status == 409)
        try Self.call(server, "ann", "Notes", "edit", #"{"id": 1, "body": "uno"}"#)
        try Self.call(server, "ann", "Notes", "remove", #"{"id": 1}"#)
        // A failed statement outside any transaction changes nothing either.
        #expect(try Self.call(server, "ann", "Notes", "edit", #"{"id": 5, "body": null}"#).status == 400)

        let events = (0..<3).compactMap { _ in stream.next() }
        #expect(events.map(\.event) == ["change", "change", "change"])
        let changes = events.map { ($0.json?["changes"] as? [[String: Any]])?.first ?? [:] }
        #expect(changes.map { $0["operation"] as? String } == ["insert", "update", "delete"])
        #expect(changes.allSatisfy { $0["module"] as? String == "Notes" && $0["table"] as? String == "notes" })
        #expect(changes.map { $0["rowids"] as? [Int] } == [[1], [1], [1]])
        #expect(events.allSatisfy { $0.json?["space"] as? String == "user" })
        #expect(stream.next(timeout: 0.5) == nil, "no event for the rolled-back transaction")
    }

    @Test func lastEventIDResumesWithinTheWindowAndBeyondItIsAReset() throws {
        let (server, folder) = try Self.server(["--changes-window", "3"])
        defer { try? FileManager.default.removeItem(at: folder) }
        var stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
        let start = try #require(stream.next()?.id)
        stream.close()
        for body in ["a", "b"] { try Self.call(server, "ann", "Notes", "add", #"{"body": "\#(body)"}"#) }

        stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann", "Last-Event-ID: \(start)"])
        let missed = [stream.next(), stream.next()]
        #expect(missed.map { $0?.event } == ["change", "change"])
        #expect(missed.map { ($0?.json?["changes"] as? [[String: Any]])?.first?["rowids"] as? [Int] } == [[1], [2]])
        // Live events follow on the same stream.
        try Self.call(server, "ann", "Notes", "add", #"{"body": "c"}"#)
        let live = try #require(stream.next())
        #expect((live.json?["changes"] as? [[String: Any]])?.first?["rowids"] as? [Int] == [3])
        stream.close()

        // From the first missed event's id: only what came after it.
        let after = try #require(missed[0]?.id)
        stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann", "Last-Event-ID: \(after)"])
        #expect([stream.next(), stream.next()].map { $0?.id } == [missed[1]?.id, live.id])
        stream.close()

        // Two more writes push the first events out of a window of 3: the start id cannot be resumed.
        for body in ["d", "e"] { try Self.call(server, "ann", "Notes", "add", #"{"body": "\#(body)"}"#) }
        stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann", "Last-Event-ID: \(start)"])
        let reset = try #require(stream.next())
        #expect(reset.event == "reset")
        #expect(reset.id != nil && reset.id == reset.json?["id"] as? String)
        // An id of another process (or no id at all) is a reset too.
        let foreign = try SSEClient(port: server.port, headers: ["X-User-Id: ann", "Last-Event-ID: 0000-12"])
        #expect(foreign.next()?.event == "reset")
        // Resuming from the reset's id loses nothing after it.
        try Self.call(server, "ann", "Notes", "add", #"{"body": "f"}"#)
        let next = try SSEClient(port: server.port, headers: ["X-User-Id: ann", "Last-Event-ID: \(reset.id!)"])
        #expect((next.next()?.json?["changes"] as? [[String: Any]])?.first?["rowids"] as? [Int] == [6])
    }

    @Test func aSlowConsumerGetsAFinalEventAndIsCutOff() throws {
        let (server, folder) = try Self.server(["--changes-buffer", "16384"])
        defer { try? FileManager.default.removeItem(at: folder) }
        // A client that reads nothing, with a small receive buffer.
        let stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann"], receiveBuffer: 4096)
        // 80 transactions of 1000 rows: about 560 KB of events, more than the socket buffers and 16 KiB hold.
        var arguments: [String] = []
        for index in 0..<80 {
            if index > 0 { arguments.append("--next") }
            arguments += ["-s", "-o", "/dev/null", "-H", "X-User-Id: ann", "-H", "Content-Type: application/json",
                          "--data-binary", #"{"count": 1000, "tag": "t\#(index)"}"#, "\(server.base)/dao/Notes/addMany"]
        }
        try run("/usr/bin/curl", arguments)
        let events = stream.readAll(timeout: 15)
        let changes = events.filter { $0.event == "change" }.count
        #expect(changes < 80, "the stream was cut off before the end")
        let last = try #require(events.last)
        #expect(last.event == "closing")
        #expect(last.json?["reason"] as? String == "slow-consumer")
        #expect(stream.closed, "the server closed the stream")
        // The server is fine, and a new stream of the same user resumes from the last event it got.
        let resumed = try SSEClient(port: server.port, headers: ["X-User-Id: ann", "Last-Event-ID: \(events.last(where: { $0.id != nil })!.id!)"])
        #expect(resumed.status == 200)
        // What it missed is more than its buffer holds: a reset, not a cut-off at every retry.
        #expect(resumed.next()?.event == "reset")
    }

    @Test func streamsPerUserAndInAllAreLimitedWith429() throws {
        let (server, folder) = try Self.server(["--changes-streams-per-user", "2", "--changes-streams", "3", "--changes-heartbeat", "1"])
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
        let second = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
        #expect(first.status == 200 && second.status == 200)
        let third = try server.curl("/changes", headers: ["X-User-Id: ann"])
        #expect(third.status == 429)
        #expect(third.code == "too_many_streams")
        #expect(third.headers["content-type"] == "application/problem+json")
        let bob = try SSEClient(port: server.port, headers: ["X-User-Id: bob"])
        #expect(bob.status == 200)
        let carl = try server.curl("/changes", headers: ["X-User-Id: carl"])
        #expect(carl.status == 429, "three streams are open in all")
        // A stream whose client left frees its place (noticed at the next heartbeat at the latest).
        first.close()
        let deadline = Date().addingTimeInterval(5)
        var again: SSEClient?
        while again == nil && Date() < deadline {
            let attempt = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
            if attempt.status == 200 { again = attempt } else { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(again != nil)
        _ = second
    }

    @Test func aStreamSeesOnlyItsUsersAndTheCommonSpacesChanges() throws {
        let (server, folder) = try Self.server()
        defer { try? FileManager.default.removeItem(at: folder) }
        let ann = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
        let bob = try SSEClient(port: server.port, headers: ["X-User-Id: bob"])
        let annBoard = try SSEClient(port: server.port, path: "/changes?module=Board", headers: ["X-User-Id: ann"])
        for stream in [ann, bob, annBoard] { #expect(stream.next()?.event == "ready") }
        try Self.call(server, "bob", "Notes", "add", #"{"body": "bob's"}"#)
        try Self.call(server, "ann", "Notes", "add", #"{"body": "ann's"}"#)
        try Self.call(server, nil, "Board", "post", #"{"text": "all"}"#)
        let annEvents = [ann.next(), ann.next()]
        #expect(annEvents.map { $0?.json?["space"] as? String } == ["user", "common"])
        #expect(annEvents.map { ($0?.json?["changes"] as? [[String: Any]])?.first?["module"] as? String } == ["Notes", "Board"])
        #expect(ann.next(timeout: 0.5) == nil, "bob's change never reaches ann")
        let bobEvents = [bob.next(), bob.next()]
        #expect(bobEvents.map { $0?.json?["space"] as? String } == ["user", "common"])
        #expect(bob.next(timeout: 0.3) == nil)
        // A module filter keeps only that module's changes.
        #expect((annBoard.next()?.json?["changes"] as? [[String: Any]])?.first?["module"] as? String == "Board")
        #expect(annBoard.next(timeout: 0.3) == nil)
        // Filters are checked.
        #expect(try server.curl("/changes?module=Nope", headers: ["X-User-Id: ann"]).code == "unknown_module")
        #expect(try server.curl("/changes?space=elsewhere", headers: ["X-User-Id: ann"]).code == "invalid_query")
        #expect(try server.curl("/changes?space=user").code == "user_required")
    }

    @Test func withJWTAStreamIsItsTokensUsersOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-feed-jwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = try AuthLiveTests.secret(in: folder, "jwt.secret")
        let (server, modules) = try Self.server(["--auth", "jwt"], environment: ["DAOGATE_JWT_SECRET_FILE": secret])
        defer { try? FileManager.default.removeItem(at: modules) }
        let ann = try AuthLiveTests.mint(secret, "ann")
        let bob = try AuthLiveTests.mint(secret, "bob")
        #expect(try server.curl("/changes").code == "token_missing")
        #expect(try server.curl("/changes", headers: ["Authorization: Bearer \(ann)", "X-User-Id: bob"]).code == "user_mismatch")
        let stream = try SSEClient(port: server.port, headers: ["Authorization: Bearer \(ann)"])
        #expect(stream.next()?.event == "ready")
        try Self.call(server, nil, "Notes", "add", #"{"body": "bob's"}"#, headers: ["Authorization: Bearer \(bob)"])
        try Self.call(server, nil, "Notes", "add", #"{"body": "ann's"}"#, headers: ["Authorization: Bearer \(ann)"])
        let event = try #require(stream.next())
        #expect((event.json?["changes"] as? [[String: Any]])?.first?["rowids"] as? [Int] == [1])
        #expect(stream.next(timeout: 0.5) == nil, "bob's change never reaches ann's stream")
    }

    /// A stream lasts as long as its token: at `exp` it gets `closing` with the reason and the connection ends,
    /// heartbeats or not; a stream whose token lasts longer is untouched meanwhile.
    @Test func aStreamEndsAtItsTokensExpiry() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-feed-exp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = try AuthLiveTests.secret(in: folder, "jwt.secret")
        let (server, modules) = try Self.server(["--auth", "jwt", "--changes-heartbeat", "1"], environment: ["DAOGATE_JWT_SECRET_FILE": secret])
        defer { try? FileManager.default.removeItem(at: modules) }
        let short = try AuthLiveTests.mint(secret, "ann", ["--ttl", "3"])
        let long = try AuthLiveTests.mint(secret, "ann")
        let expiring = try SSEClient(port: server.port, headers: ["Authorization: Bearer \(short)"])
        let lasting = try SSEClient(port: server.port, headers: ["Authorization: Bearer \(long)"])
        #expect(expiring.next()?.event == "ready")
        #expect(lasting.next()?.event == "ready")
        let opened = Date()
        let events = expiring.readAll(timeout: 8)
        #expect(events.last?.event == "closing")
        #expect(events.last?.json?["reason"] as? String == "token_expired")
        #expect(expiring.closed, "the connection ends with the stream")
        #expect(Date().timeIntervalSince(opened) < 5, "the stream ended about its exp, not later")
        // The other stream, whose token lasts, still gets the user's changes.
        try Self.call(server, nil, "Notes", "add", #"{"body": "after"}"#, headers: ["Authorization: Bearer \(long)"])
        #expect(lasting.next()?.event == "change")
        #expect(!lasting.closed)
    }

    /// A key reload (here the key-file watcher; SIGHUP does the same) ends each stream whose token the new keys
    /// no longer verify, with the refusal's code as the reason; a reload after which the token still verifies
    /// leaves the stream open.
    @Test func aKeyReloadEndsTheStreamsOfTokensItInvalidates() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-feed-rot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = try AuthLiveTests.secret(in: folder, "jwt.secret")
        let (server, modules) = try Self.server(["--auth", "jwt", "--changes-heartbeat", "1"], environment: ["DAOGATE_JWT_SECRET_FILE": secret])
        defer { try? FileManager.default.removeItem(at: modules) }
        let ann = try AuthLiveTests.mint(secret, "ann")
        let stream = try SSEClient(port: server.port, headers: ["Authorization: Bearer \(ann)"])
        #expect(stream.next()?.event == "ready")

        // The same key written again: reloaded, and the token still verifies.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: secret))
        try FileManager.default.removeItem(atPath: secret)
        try bytes.write(to: URL(fileURLWithPath: secret))
        #expect(stream.next(timeout: 3) == nil, "a reload that keeps the token valid does not end the stream")
        #expect(!stream.closed)

        // A new key: the token no longer verifies.
        let rotated = folder.appendingPathComponent("new.secret").path
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: rotated))
        #expect(rename(rotated, secret) == 0)
        let events = stream.readAll(timeout: 5)
        #expect(events.last?.event == "closing")
        #expect(events.last?.json?["reason"] as? String == "token_bad_signature")
        #expect(stream.closed)
        #expect(try server.curl("/changes", headers: ["Authorization: Bearer \(ann)"]).code == "token_bad_signature")
    }

    @Test func streamsHoldNoWorkerThreadAndGetHeartbeats() throws {
        let (server, folder) = try Self.server(["--threads", "1", "--changes-heartbeat", "1"])
        defer { try? FileManager.default.removeItem(at: folder) }
        let streams = try (0..<6).map { _ in try SSEClient(port: server.port, headers: ["X-User-Id: ann"]) }
        // One worker thread, six open streams: a request is still answered at once.
        let started = Date()
        #expect(try server.curl("/healthz").status == 200)
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(try Self.call(server, "ann", "Notes", "add", #"{"body": "x"}"#).status == 200)
        for stream in streams { #expect(stream.next()?.event == "ready"); #expect(stream.next()?.event == "change") }
        #expect(streams[0].next(timeout: 3, comments: true)?.comment == "heartbeat")
    }

    @Test func theDescriptionHasTheStream() throws {
        let (server, folder) = try Self.server()
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = try #require(try server.curl("/openapi.json").json)
        let changes = try #require((document["paths"] as? [String: Any])?["/changes"] as? [String: Any])
        let responses = try #require((changes["get"] as? [String: Any])?["responses"] as? [String: Any])
        #expect(((responses["200"] as? [String: Any])?["content"] as? [String: Any])?["text/event-stream"] != nil)
        #expect(responses["429"] != nil)
        #expect(try server.curl("/changes", method: "POST", body: "{}").status == 405)
    }

    @Test func aGracefulStopEndsStreamsWithAClosingEvent() throws {
        let (server, folder) = try Self.server()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stream = try SSEClient(port: server.port, headers: ["X-User-Id: ann"])
        #expect(stream.next()?.event == "ready")
        #expect(server.stop() == 0)
        // Until the process exits: the wait for its output's end is the test's, not the server's.
        #expect(try #require(server.stopSeconds) < 5, "the stream did not hold the stop for its grace period")
        let events = stream.readAll(timeout: 5)
        #expect(events.last?.event == "closing")
        #expect(events.last?.json?["reason"] as? String == "shutdown")
        #expect(stream.closed)
    }
}

/// One Server-Sent Event (or, when asked for, a comment line).
struct SSEEvent: Equatable {
    var id: String?
    var event = "message"
    var data = ""
    var comment: String?

    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] }

    static func == (a: Self, b: Self) -> Bool { a.id == b.id && a.event == b.event && a.data == b.data && a.comment == b.comment }
}

/// A Server-Sent Events client on a raw socket: `GET` over HTTP/1.1, the chunked body decoded, events parsed as
/// they arrive.
final class SSEClient {
    private let descriptor: Int32
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    /// The body of a refusal (not a stream).
    private(set) var body = ""
    private(set) var closed = false
    private var raw: [UInt8] = []
    private var decoded: [UInt8] = []
    private var isClosedByUs = false

    init(port: Int, path: String = "/changes", headers: [String], receiveBuffer: Int? = nil) throws {
        descriptor = try connectToLoopback(port: port) { descriptor in
            if var size = receiveBuffer.map(Int32.init) {
                setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
        }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "\r\n"
        _ = Array(request.utf8).withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if receiveBuffer == nil { try readHead() } else { status = 200 }
    }

    deinit { close() }

    func close() {
        guard !isClosedByUs else { return }
        isClosedByUs = true
        Glibc.close(descriptor)
    }

    /// Reads until the response head is in.
    private func readHead() throws {
        let deadline = Date().addingTimeInterval(5)
        while true {
            if let end = find([13, 10, 13, 10], in: raw) {
                let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                raw.removeFirst(end + 4)
                if status != 200 {
                    let length = Int(headers["content-length"] ?? "") ?? 0
                    while raw.count < length && !closed && Date() < deadline { receive(until: deadline) }
                    body = String(decoding: raw, as: UTF8.self)
                }
                return
            }
            guard !closed, Date() < deadline else { throw LiveError("no response head: \(String(decoding: raw, as: UTF8.self))") }
            receive(until: deadline)
        }
    }

    /// One recv, waiting at most until `deadline`.
    private func receive(until deadline: Date) {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let wait = max(0, Int32(deadline.timeIntervalSinceNow * 1000))
        guard poll(&poller, 1, wait) > 0 else { return }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count > 0 { raw += chunk[..<count] } else { closed = true }
    }

    /// Moves whole chunks of `raw` into `decoded`.
    private func dechunk() {
        while let lineEnd = find([13, 10], in: raw) {
            let sizeText = String(decoding: raw[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return }
            guard raw.count >= lineEnd + 2 + size + 2 else { return }
            decoded += raw[(lineEnd + 2)..<(lineEnd + 2 + size)]
            raw.removeFirst(lineEnd + 2 + size + 2)
            if size == 0 { closed = true; return }
        }
    }

    /// The next event (comments skipped unless `comments`), nil if none comes within `timeout` seconds.
    func next(timeout: TimeInterval = 5, comments: Bool = false) -> SSEEvent? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            dechunk()
            while let end = find([10, 10], in: decoded) {
                let block = String(decoding: decoded[..<end], as: UTF8.self)
                decoded.removeFirst(end + 2)
                var event = SSEEvent()
                var isEvent = false
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") {
                        event.comment = line.dropFirst().trimmingCharacters(in: .whitespaces)
                        continue
                    }
                    let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
                    let value = parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""
                    switch parts.first ?? "" {
                    case "id": event.id = value; isEvent = true
                    case "event": event.event = value; isEvent = true
                    case "data": event.data += value; isEvent = true
                    default: break
                    }
                }
                if isEvent || (comments && event.comment != nil) { return event }
            }
            guard !closed, Date() < deadline else { return nil }
            receive(until: deadline)
        }
    }

    /// Every event until the server closes the stream or `timeout` passes.
    func readAll(timeout: TimeInterval) -> [SSEEvent] {
        if status == 200 && headers.isEmpty {
            try? readHead()
        }
        let deadline = Date().addingTimeInterval(timeout)
        var events: [SSEEvent] = []
        while Date() < deadline, let event = next(timeout: deadline.timeIntervalSinceNow) { events.append(event) }
        return events
    }
}

private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
        if Array(haystack[index..<(index + needle.count)]) == needle { return index }
    }
    return nil
}
