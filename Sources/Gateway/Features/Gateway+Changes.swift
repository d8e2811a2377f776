import DAODialect
import DAOEngine
import DAOValue
import Foundation
import HTTPTransport
import JWT
import Synchronization

/// The limits of `GET /changes` streams.
public struct ChangeStreamLimits: Sendable {
    /// Streams one user may have open at once (callers without a user count only towards `total`).
    public var perUser: Int
    /// Streams open at once in all.
    public var total: Int
    /// Bytes held for one stream's client; a client slower than that is sent a final `closing` event and cut off.
    public var bufferBytes: Int
    /// How often an idle stream gets a comment line, which also finds clients gone away.
    public var heartbeat: Duration

    public init(perUser: Int = 8, total: Int = 1000, bufferBytes: Int = 1 << 20, heartbeat: Duration = .seconds(15)) {
        self.perUser = perUser
        self.total = total
        self.bufferBytes = bufferBytes
        self.heartbeat = heartbeat
    }
}

/// `GET /changes`: the caller's committed changes as Server-Sent Events.
///
/// A stream follows the caller's user database and the common database (of
/// the storage `X-Storage` names), or one of them (`space=user|common`),
/// optionally only some modules (`module=`, repeated) and tables (`table=`).
/// Each event is one committed transaction of one database:
///
///     id: 5f3a91c2-42
///     event: change
///     data: {"space":"user","changes":[{"module":"Notes","table":"notes","operation":"insert","rowids":[7],"rows":1}],"truncated":false}
///
/// A client reconnecting with `Last-Event-ID` first gets what it missed (the
/// feed's window, `ChangeFeed`), or a `reset` event when that cannot be told.
/// A fresh stream starts with a `ready` event carrying the current id.
///
/// A stream lasts as long as what admitted it: in jwt mode it ends at its token's `exp`, and when a key
/// reload makes the token invalid (`event: closing`, `data: {"reason": "token_expired"}` or the refusal's
/// code); on a shard it is admitted like every route (421 for a user of another shard's bucket), and it ends
/// when its bucket leaves the shard (`{"reason": "bucket_moved"}`), so that the client reconnects through the
/// proxy to the new owner.
extension Gateway {
    func changesRoute(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let request = call.request
        let caller = try caller(call)
        // A shard holds the user's space or the common space, rarely both: there a stream follows one.
        var spaces: Set<String> = caller.user == nil ? ["common"] : configuration.shard == nil ? ["user", "common"] : ["user"]
        var modules: Set<String> = []
        var tables: [String] = []
        for (name, value) in request.query {
            switch name {
            case "space":
                guard value == "user" || value == "common" else {
                    throw Problem(.invalidQuery, "space is user or common, not '\(value.prefix(40))'")
                }
                guard value == "common" || caller.user != nil else {
                    throw Problem(.userRequired, "space=user follows the caller's own storage: the call needs a user id")
                }
                spaces = [value]
            case "module":
                guard engine.modules[value] != nil else {
                    throw Problem(.unknownModule, "no module is named '\(value.prefix(80))'")
                }
                modules.insert(value)
            case "table":
                if let problem = tableNameProblem(value) {
                    throw Problem(.invalidTable, "table '\(value.prefix(80))': \(problem)")
                }
                tables.append(value)
            default:
                throw Problem(.invalidQuery, "unknown query argument '\(name.prefix(40))': /changes takes space, module and table")
            }
        }
        var locations: [DatabaseLocation] = []
        if spaces.contains("user"), let user = caller.user { locations.append(.user(user, storage: caller.storage)) }
        if spaces.contains("common") { locations.append(.common(storage: caller.storage)) }
        let lastEventID = nonEmpty(try header(request, "Last-Event-ID"))
        var credential: StreamCredential?
        if case .jwt(let verifier) = configuration.authentication, let token = caller.token {
            credential = StreamCredential(token: token.text, expiry: token.expiry, verifier: verifier)
        }
        let stream = try changeStreams.open(
            user: caller.user?.rawValue, locations: locations,
            filter: ChangeFilter(modules: modules, tables: tables), lastEventID: lastEventID, credential: credential)
        var response = HTTPResponse(status: 200, headers: [
            ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-store"),
            ("X-Accel-Buffering", "no"),
        ])
        response.stream = stream
        return response
    }
}

/// Which changes a stream wants: nothing set, every change.
struct ChangeFilter: Sendable {
    var modules: Set<String>
    var tables: [String]

    var isEmpty: Bool { modules.isEmpty && tables.isEmpty }

    func admits(_ change: TableChange) -> Bool {
        (modules.isEmpty || modules.contains(change.module))
            && (tables.isEmpty || tables.contains { sameTable($0, change.table) })
    }
}

/// What keeps a stream's caller entitled to it: the JWT it was opened with, until its `exp` and through key reloads.
struct StreamCredential: Sendable {
    let token: String
    /// `exp`, in seconds since 1970.
    let expiry: Double
    let verifier: JWTVerifier
}

/// The open `GET /changes` streams: their limits, their heartbeats, their tokens' lifetimes, and the events' text.
final class ChangeStreams: Sendable {
    let feed: ChangeFeed
    let limits: ChangeStreamLimits
    private let open = Mutex(Open())
    private let keeping = Atomic<Bool>(false)
    /// How often the keeper looks at the streams' tokens: a stream ends at most this long after its `exp`.
    static let credentialCheck: Double = 0.25
    /// The last event's text without a filter, made once for every stream that gets it whole.
    private let lastText = Mutex<(id: UInt64, text: [UInt8])>((0, []))

    private struct Open {
        var listeners: [ObjectIdentifier: ChangeListener] = [:]
        var perUser: [String: Int] = [:]
    }

    init(feed: ChangeFeed, limits: ChangeStreamLimits) {
        self.feed = feed
        self.limits = limits
    }

    /// Streams open now.
    var count: Int { open.withLock { $0.listeners.count } }

    /// A new stream of `locations`' changes, or 429 beyond the limits.
    func open(user: String?, locations: [DatabaseLocation], filter: ChangeFilter, lastEventID: String?,
              credential: StreamCredential? = nil) throws(Problem) -> HTTPStream {
        let resumeAfter: UInt64?? = lastEventID.map(parseEventID)
        let closing = Self.event(nil, "closing", ["reason": "shutdown"])
        let overflow = Self.event(nil, "closing", ["reason": "slow-consumer"])
        let box = ListenerBox()
        let stream = HTTPStream(capacity: limits.bufferBytes, overflowNotice: overflow, closingNotice: closing) { [weak self] in
            guard let self, let listener = box.listener else { return }
            box.listener = nil
            self.close(listener)
        }
        let listener = ChangeListener(streams: self, stream: stream, user: user, locations: locations, filter: filter,
                                      credential: credential)
        box.listener = listener
        let refusal: String? = open.withLock { open in
            if open.listeners.count >= limits.total { return "\(limits.total) change streams are open, the most in all" }
            if let user {
                if open.perUser[user, default: 0] >= limits.perUser { return "this user has \(limits.perUser) change streams open, the most for one user" }
                open.perUser[user, default: 0] += 1
            }
            open.listeners[ObjectIdentifier(listener)] = listener
            return nil
        }
        if let refusal {
            box.listener = nil
            var problem = Problem(.tooManyStreams, refusal + "; close one first")
            problem.retry(after: 5)
            throw problem
        }
        startKeeper()
        feed.subscribe(listener, to: locations, after: resumeAfter.map { $0 ?? .max }) { resumption, lastID in
            let retry = Array("retry: 2000\n\n".utf8)
            let reset = { (reason: String) in
                retry + Self.event(self.eventID(lastID), "reset", [
                    "reason": .string(reason + "; reload, then follow from this id"), "id": .string(self.eventID(lastID)),
                ])
            }
            switch resumption {
            case .reset:
                stream.send(reset("the last event id is unknown or older than the window"))
            case .resumed(let missed):
                var preamble = retry
                if resumeAfter == nil {
                    preamble += Self.event(eventID(lastID), "ready", ["id": .string(eventID(lastID))])
                }
                for event in missed {
                    if let text = text(of: event, filter: filter) { preamble += text }
                }
                // Missed events beyond the buffer would cut the stream off at once, and again at every retry.
                stream.send(preamble.count > limits.bufferBytes / 2 ? reset("more was missed than a stream's buffer holds") : preamble)
            }
        }
        return stream
    }

    /// A stream ended (sent, cut off, or its client gone): it stops following and stops counting.
    private func close(_ listener: ChangeListener) {
        feed.unsubscribe(listener, from: listener.locations)
        open.withLock { open in
            guard open.listeners.removeValue(forKey: ObjectIdentifier(listener)) != nil, let user = listener.user else { return }
            open.perUser[user, default: 1] -= 1
            if open.perUser[user] == 0 { open.perUser[user] = nil }
        }
    }

    /// Ends each stream `closing` gives data for with a last `closing` event carrying it (its `reason`, and
    /// what the client needs to know); returns how many ended.
    @discardableResult
    func end(_ closing: (ChangeListener) -> OrderedObject?) -> Int {
        let chosen = open.withLock { $0.listeners.values.compactMap { listener in closing(listener).map { (listener, $0) } } }
        for (listener, data) in chosen { listener.stream.finish(Self.event(nil, "closing", data)) }
        return chosen.count
    }

    /// The keeper, one thread for every stream: a comment to each stream every `heartbeat` (which also finds
    /// clients gone away, and lets the feed forget windows nobody came back for), and, every
    /// `credentialCheck`, the end of streams whose token expired or no longer verifies after a key reload.
    private func startKeeper() {
        guard !keeping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let interval = limits.heartbeat
        let heartbeat = max(0.05, interval.seconds)
        Thread.detachNewThread { [weak self] in
            var nextBeat = Date().timeIntervalSince1970 + heartbeat
            while true {
                Thread.sleep(forTimeInterval: max(0.01, min(Self.credentialCheck, nextBeat - Date().timeIntervalSince1970)))
                guard let self else { return }
                let listeners = self.open.withLock { Array($0.listeners.values) }
                let now = Date().timeIntervalSince1970
                for listener in listeners {
                    if let reason = listener.credentialProblem(now: now) {
                        listener.stream.finish(Self.event(nil, "closing", ["reason": .string(reason)]))
                    }
                }
                guard now >= nextBeat else { continue }
                nextBeat = now + heartbeat
                for listener in listeners { listener.stream.send(Array(": heartbeat\n\n".utf8)) }
                self.feed.trim()
            }
        }
    }

    /// The event's text for a stream with `filter`; nil when the filter leaves nothing.
    func text(of event: ChangeEvent, filter: ChangeFilter) -> [UInt8]? {
        if filter.isEmpty {
            return lastText.withLock { last in
                if last.id != event.id { last = (event.id, changeText(event, event.changes)) }
                return last.text
            }
        }
        let changes = event.changes.filter(filter.admits)
        return changes.isEmpty ? nil : changeText(event, changes)
    }

    private func eventID(_ id: UInt64) -> String { "\(feed.epoch)-\(id)" }

    /// The number of an id of this epoch; nil for any other text (a reset).
    private func parseEventID(_ text: String) -> UInt64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == feed.epoch else { return nil }
        return UInt64(parts[1])
    }

    private func changeText(_ event: ChangeEvent, _ changes: [TableChange]) -> [UInt8] {
        var data: OrderedObject = [:]
        switch event.location {
        case .user(_, let storage):
            data["space"] = "user"
            if let storage { data["storage"] = .string(storage) }
        case .common(let storage):
            data["space"] = "common"
            if let storage { data["storage"] = .string(storage) }
        case .file:
            break
        }
        data["changes"] = .array(changes.map { change in
            [
                "module": .string(change.module), "table": .string(change.table),
                "operation": .string(change.operation.rawValue),
                "rowids": .array(change.rowids.map(Value.integer)), "rows": .integer(Int64(change.rows)),
            ]
        })
        data["truncated"] = .bool(event.truncated)
        return Self.event(eventID(event.id), "change", data)
    }

    private static func event(_ id: String?, _ name: String, _ data: OrderedObject) -> [UInt8] {
        var text = id.map { "id: \($0)\n" } ?? ""
        text += "event: \(name)\ndata: "
        var bytes = Array(text.utf8)
        bytes += Value.object(data).jsonBytes(options: JSONWriteOptions())
        bytes += Array("\n\n".utf8)
        return bytes
    }
}

/// One stream following the feed.
final class ChangeListener: ChangeSubscriber {
    let streams: ChangeStreams
    let stream: HTTPStream
    let user: String?
    let locations: [DatabaseLocation]
    let filter: ChangeFilter
    let credential: StreamCredential?
    /// The key generation the token last verified with; -1 until the keeper checked it once (the keys may
    /// have been swapped between the request's verification and the stream's opening).
    private let verifiedGeneration = Atomic<Int>(-1)

    init(streams: ChangeStreams, stream: HTTPStream, user: String?, locations: [DatabaseLocation], filter: ChangeFilter,
         credential: StreamCredential?) {
        self.streams = streams
        self.stream = stream
        self.user = user
        self.locations = locations
        self.filter = filter
        self.credential = credential
    }

    /// Why the stream's token no longer admits it (a problem code: `token_expired`, `token_unknown_key`, …);
    /// nil while it does. The token is verified again (its signature, with the keys in use) after each key reload.
    func credentialProblem(now: Double) -> String? {
        guard let credential else { return nil }
        guard now < credential.expiry else { return TokenRefusal.Cause.expired.rawValue }
        let generation = credential.verifier.generation
        guard verifiedGeneration.load(ordering: .relaxed) != generation else { return nil }
        do {
            _ = try credential.verifier.verify(credential.token)
        } catch {
            return error.cause.rawValue
        }
        verifiedGeneration.store(generation, ordering: .relaxed)
        return nil
    }

    func deliver(_ event: ChangeEvent) {
        guard let text = streams.text(of: event, filter: filter) else { return }
        stream.send(text)
    }
}

/// Lets the stream's end find its listener, made after the stream.
private final class ListenerBox: @unchecked Sendable {
    var listener: ChangeListener?
}
