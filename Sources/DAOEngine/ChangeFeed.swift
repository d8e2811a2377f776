import Foundation
import Synchronization

/// The rows one committed transaction changed in one module table, with one operation.
public struct TableChange: Sendable, Equatable {
    public var module: String
    public var table: String
    public var operation: RowChange.Operation
    /// The rowids, in the order changed, each once; at most `ChangeFeed.maximumRowids`.
    public var rowids: [Int64]
    /// How many rows changed (more than `rowids.count` when the list was cut).
    public var rows: Int
}

/// One committed transaction of one database, as the change feed reports it.
public struct ChangeEvent: Sendable {
    /// Increasing across every database of the process (so one stream can follow several and resume from one id).
    public let id: UInt64
    public let location: DatabaseLocation
    public let changes: [TableChange]
    /// Some rows went unnamed (a list cut at `maximumRowids`, or a transaction beyond `ChangeHooks.maximumRows`):
    /// a client should reload the tables named.
    public let truncated: Bool
}

/// What follows a change feed: called with each event of the databases it subscribed to, in id order, on the
/// writer's thread inside the write, under the feed's lock: it must be quick and must not call the feed.
public protocol ChangeSubscriber: AnyObject, Sendable {
    func deliver(_ event: ChangeEvent)
}

/// The committed changes of users' and common databases, for the streams that follow them (`GET /changes`).
///
/// Nothing is recorded for a database nobody follows. While a database is
/// followed, and for `retention` after its last follower left, its last
/// `window` events are kept in memory, so that a client reconnecting with the
/// id of the last event it saw gets what it missed. Memory rather than a table
/// of the user's file: a write then costs no extra row, a feed nobody follows
/// costs nothing, and the window is for reconnecting, not for history. A
/// restart starts a new `epoch`; ids of another epoch, or older than the window,
/// cannot be resumed (`Resumption.reset`).
public final class ChangeFeed: Sendable {
    /// Events kept per database for resuming.
    public let window: Int
    /// How long a database's window is kept once its last follower left.
    public let retention: Duration
    /// Databases whose window is kept with no follower, at most; the longest idle go first.
    public let maximumIdleChannels: Int
    /// The most rowids one `TableChange` lists.
    public static let maximumRowids = 1000
    /// Names this process's ids: an id of another epoch is from before a restart.
    public let epoch: String

    private let state = Mutex(State())
    /// Channels open: 0 lets every write skip the lock.
    private let channelCount = Atomic<Int>(0)

    private struct Channel {
        var events: [ChangeEvent] = []
        /// Every event of this database with a larger id is in `events`.
        var floor: UInt64
        var subscribers: [ObjectIdentifier: any ChangeSubscriber] = [:]
        /// When the last follower left; nil while followed.
        var idleSince: ContinuousClock.Instant?
    }

    private struct State {
        var lastID: UInt64 = 0
        var channels: [DatabaseLocation: Channel] = [:]
    }

    public init(window: Int = 256, retention: Duration = .seconds(300), maximumIdleChannels: Int = 10_000) {
        self.window = max(1, window)
        self.retention = retention
        self.maximumIdleChannels = max(0, maximumIdleChannels)
        self.epoch = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
    }

    /// What a follower resuming after an id gets.
    public enum Resumption: Sendable {
        /// The events after the id (none when it is the latest).
        case resumed([ChangeEvent])
        /// The id cannot be resumed (another epoch, or older than the window): reload.
        case reset
    }

    /// The id of the latest event, to name where a follower starts.
    public var lastID: UInt64 { state.withLock { $0.lastID } }

    /// Starts delivering the events of `locations` to `subscriber`. `start` runs first, under the feed's lock
    /// (before any event is delivered), with the latest id and, given `after` (a Last-Event-ID's number), what
    /// the subscriber missed since that id or that it cannot tell; with nil, `.resumed([])`.
    public func subscribe(_ subscriber: any ChangeSubscriber, to locations: [DatabaseLocation], after: UInt64?,
                          start: (Resumption, _ lastID: UInt64) -> Void) {
        state.withLock { state in
            var missed: [ChangeEvent] = []
            var complete = after.map { $0 <= state.lastID } ?? true
            for location in locations {
                var channel = state.channels[location] ?? Channel(floor: state.lastID)
                if state.channels[location] == nil { channelCount.add(1, ordering: .sequentiallyConsistent) }
                if let after {
                    if after < channel.floor { complete = false }
                    missed += channel.events.filter { $0.id > after }
                }
                channel.subscribers[ObjectIdentifier(subscriber)] = subscriber
                channel.idleSince = nil
                state.channels[location] = channel
            }
            start(complete ? .resumed(missed.sorted { $0.id < $1.id }) : .reset, state.lastID)
        }
    }

    /// Stops delivering to `subscriber`; the databases' windows are kept for `retention`.
    public func unsubscribe(_ subscriber: any ChangeSubscriber, from locations: [DatabaseLocation]) {
        let now = ContinuousClock.now
        state.withLock { state in
            for location in locations {
                guard var channel = state.channels[location] else { continue }
                channel.subscribers[ObjectIdentifier(subscriber)] = nil
                if channel.subscribers.isEmpty { channel.idleSince = now }
                state.channels[location] = channel
            }
        }
    }

    /// Forgets the windows idle for longer than `retention`, and the longest idle beyond `maximumIdleChannels`.
    public func trim() {
        let now = ContinuousClock.now
        state.withLock { state in
            var idle: [(DatabaseLocation, ContinuousClock.Instant)] = []
            for (location, channel) in state.channels {
                guard let since = channel.idleSince else { continue }
                if now - since > retention {
                    state.channels[location] = nil
                } else {
                    idle.append((location, since))
                }
            }
            if idle.count > maximumIdleChannels {
                for (location, _) in idle.sorted(by: { $0.1 < $1.1 }).prefix(idle.count - maximumIdleChannels) {
                    state.channels[location] = nil
                }
            }
            channelCount.store(state.channels.count, ordering: .sequentiallyConsistent)
        }
    }

    /// Whether `location`'s changes are wanted now (followed, or its window kept).
    func isWatched(_ location: DatabaseLocation) -> Bool {
        guard channelCount.load(ordering: .relaxed) > 0 else { return false }
        return state.withLock { $0.channels[location] != nil }
    }

    /// Publishes one committed transaction of `location`: the rows of module tables (`module(of:)` names a
    /// table's module, nil for the storage layers' own tables), grouped by table and operation.
    func publish(_ location: DatabaseLocation, _ rows: [RowChange], overflowed: Bool, module: (String) -> String?) {
        var changes: [TableChange] = []
        var seen: [Int: Set<Int64>] = [:]
        var modules: [String: String?] = [:]
        var truncated = overflowed
        for row in rows {
            let owner: String?
            if let known = modules[row.table] { owner = known } else {
                owner = module(row.table)
                modules[row.table] = owner
            }
            guard let owner else { continue }
            let index = changes.firstIndex { $0.table == row.table && $0.operation == row.operation } ?? {
                changes.append(TableChange(module: owner, table: row.table, operation: row.operation, rowids: [], rows: 0))
                return changes.count - 1
            }()
            guard seen[index, default: []].insert(row.rowid).inserted else { continue }
            changes[index].rows += 1
            if changes[index].rowids.count < Self.maximumRowids {
                changes[index].rowids.append(row.rowid)
            } else {
                truncated = true
            }
        }
        guard !changes.isEmpty else { return }
        state.withLock { state in
            guard var channel = state.channels[location] else { return }
            state.lastID += 1
            let event = ChangeEvent(id: state.lastID, location: location, changes: changes, truncated: truncated)
            channel.events.append(event)
            if channel.events.count > window {
                channel.floor = channel.events.removeFirst().id
            }
            state.channels[location] = channel
            for subscriber in channel.subscribers.values { subscriber.deliver(event) }
        }
    }
}

extension Engine {
    /// Installs the change hooks on a writer connection of `database` (once per connection): a user's or common
    /// database's committed changes of module tables go to `changes`.
    func observeChanges(_ db: Database, of database: OpenDatabase) {
        guard !db.isObservingChanges else { return }
        let location = database.location
        switch location {
        case .user, .common: break
        case .file: return
        }
        let feed = changes
        db.observeChanges(ChangeHooks(
            isWatched: { feed.isWatched(location) },
            committed: { [weak database] rows, overflowed in
                feed.publish(location, rows, overflowed: overflowed) { table in database?.module(owning: table) }
            }))
    }
}

extension OpenDatabase {
    /// The module whose table `table` is in this file (as readied by this process), nil for any other table.
    func module(owning table: String) -> String? {
        if let owner = readiness.owners.withLock({ $0[table.lowercased()] }) { return owner }
        return readiness.readyModuleTables.withLock { tables in tables.keys.first { sameTable($0.table, table) }?.module }
    }
}
