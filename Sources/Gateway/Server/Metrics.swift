import DAOEngine
import DAOKeyValue
import Synchronization

/// Request counters for `GET /metrics`: one atomic counter per status, so
/// counting takes no lock on the request path, and, the counters being in one
/// allocation of their own, reads no object whose count it would move.
final class Metrics: Sendable {
    private static let statuses = 600
    /// Written only through `Atomic`; allocated for the life of the server.
    private nonisolated(unsafe) let responses: UnsafeMutablePointer<Atomic<Int>>

    init() {
        responses = .allocate(capacity: Self.statuses)
        for status in 0..<Self.statuses { (responses + status).initialize(to: Atomic(0)) }
    }

    deinit {
        responses.deinitialize(count: Self.statuses)
        responses.deallocate()
    }

    func count(status: Int) {
        guard (0..<Self.statuses).contains(status) else { return }
        responses[status].add(1, ordering: .relaxed)
    }

    /// The Prometheus text exposition format.
    func exposition(events: EventLog, openDatabases: Int, userDatabases: [Int64], memory: MemoryBudget) -> String {
        var lines = [
            "# HELP daogate_responses_total HTTP responses by status.",
            "# TYPE daogate_responses_total counter",
        ]
        for status in 0..<Self.statuses {
            let count = responses[status].load(ordering: .relaxed)
            if count > 0 { lines.append(#"daogate_responses_total{status="\#(status)"} \#(count)"#) }
        }
        lines += ["# HELP daogate_table_events_total Table events by kind.", "# TYPE daogate_table_events_total counter"]
        for kind in TableEvent.Kind.allCases {
            lines.append(#"daogate_table_events_total{kind="\#(kind.rawValue)"} \#(events.count(of: kind))"#)
        }
        lines += ["# HELP daogate_open_databases Database files open now.", "# TYPE daogate_open_databases gauge",
                  "daogate_open_databases \(openDatabases)"]
        // Per user, GET /storage/usage (admin): a label per user would make a series per user.
        lines += ["# HELP daogate_user_databases User database files on disk.", "# TYPE daogate_user_databases gauge",
                  "daogate_user_databases \(userDatabases.count)",
                  "# HELP daogate_user_database_bytes Bytes user databases take on disk (file and write-ahead log), all together.",
                  "# TYPE daogate_user_database_bytes gauge", "daogate_user_database_bytes \(userDatabases.reduce(0, +))",
                  "# HELP daogate_user_database_largest_bytes Bytes the largest user database takes on disk.",
                  "# TYPE daogate_user_database_largest_bytes gauge", "daogate_user_database_largest_bytes \(userDatabases.max() ?? 0)"]
        lines += ["# HELP daogate_memory_cache_bytes Bytes the memory caches hold of their budget (entries, their lists' storage, each cache's fixed cost).",
                  "# TYPE daogate_memory_cache_bytes gauge", "daogate_memory_cache_bytes \(memory.used)",
                  "# HELP daogate_memory_cache_limit_bytes The memory caches' budget (--memory-cache-bytes).",
                  "# TYPE daogate_memory_cache_limit_bytes gauge", "daogate_memory_cache_limit_bytes \(memory.limit)",
                  "# HELP daogate_memory_cache_user_limit_bytes What one user's memory caches, or the common spaces', may hold (--memory-cache-user-bytes).",
                  "# TYPE daogate_memory_cache_user_limit_bytes gauge", "daogate_memory_cache_user_limit_bytes \(memory.shareLimit)",
                  "# HELP daogate_memory_caches Memory caches that exist now.",
                  "# TYPE daogate_memory_caches gauge", "daogate_memory_caches \(memory.cacheCount)",
                  "# HELP daogate_memory_cache_evictions_total Entries evicted to make room in the budget or a user's share.",
                  "# TYPE daogate_memory_cache_evictions_total counter", "daogate_memory_cache_evictions_total \(memory.evicted)"]
        lines += events.sweeps.exposition()
        return lines.joined(separator: "\n") + "\n"
    }
}
