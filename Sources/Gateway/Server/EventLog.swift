import DAOEngine
import DAOValue
import Foundation
import Logging
import Synchronization

/// The engine's table events and the module reloads, logged, counted and kept for `GET /events`.
public final class EventLog: EngineObserver {
    private struct State {
        var counts: [TableEvent.Kind: Int] = [:]
        /// The most recent events, oldest first.
        var recent: [(event: TableEvent, time: Date)] = []
    }

    private let state = Mutex(State())
    let logger: Logger?
    /// The module reloads (Gateway+Reload.swift).
    let reloads = ReloadLog()
    /// The background sweep's passes (PurgeSweep.swift).
    let sweeps = SweepLog()
    /// How many recent events are kept.
    public let capacity: Int

    public init(logger: Logger? = nil, capacity: Int = 100) {
        self.logger = logger
        self.capacity = capacity
    }

    public func engine(_ engine: Engine, didEmit event: TableEvent) {
        state.withLock { state in
            state.counts[event.kind, default: 0] += 1
            state.recent.append((event, Date()))
            if state.recent.count > capacity { state.recent.removeFirst(state.recent.count - capacity) }
        }
        let level: Logger.Level = event.kind == .upgradeFailed ? .error : .notice
        logger?.log(level: level, "\(event)")
    }

    public func count(of kind: TableEvent.Kind) -> Int { state.withLock { $0.counts[kind] ?? 0 } }

    /// `{"counts": {…}, "recent": [{kind, module, table, location, from, to, error, time}]}`.
    ///
    /// An event of a user's storage is that user's: `user` (nil: no user)
    /// sees the events of shared storages and of their own, and counts of
    /// those; `everything` (the admin) sees all events and counts them all.
    func summary(user: UserID?, everything: Bool) -> Value {
        var (counts, recent) = state.withLock { ($0.counts, $0.recent) }
        if !everything {
            recent.removeAll { entry in
                guard case .user(let owner, _) = entry.event.location else { return false }
                return owner != user
            }
            counts = Dictionary(grouping: recent, by: \.event.kind).mapValues(\.count)
        }
        let formatter = ISO8601DateFormatter()
        var summary: OrderedObject = [
            "counts": .object(OrderedObject(uniqueKeysWithValues: TableEvent.Kind.allCases.map {
                ($0.rawValue, .integer(Int64(counts[$0] ?? 0)))
            })),
            "recent": .array(recent.reversed().map { event, time in
                var entry: OrderedObject = [
                    "kind": .string(event.kind.rawValue), "module": .string(event.module), "table": .string(event.table),
                    "location": .string(event.location.description), "time": .string(formatter.string(from: time)),
                ]
                if let from = event.fromVersion { entry["fromVersion"] = .string(from.description) }
                if let to = event.toVersion { entry["toVersion"] = .string(to.description) }
                if let error = event.error { entry["error"] = .string(error) }
                return .object(entry)
            }),
            "reloads": reloads.value(everything: everything),
        ]
        // The sweep walks every user's files: its figures are the admin's.
        if everything { summary["sweeps"] = sweeps.value() }
        return .object(summary)
    }
}
