import DAOEngine
#if canImport(Glibc)
import Glibc
#endif

/// The process's file descriptor limit (`RLIMIT_NOFILE`) checked against
/// what the settings may need, before anything is served: the soft limit is
/// raised when the hard one allows, and otherwise the server refuses to
/// start, rather than answer calls with errors once the descriptors run out.
public struct DescriptorLimit {
    /// Descriptors the server needs besides its databases and connections:
    /// standard streams, listening sockets, and an epoll set and an eventfd per
    /// HTTP thread (measured: 10 at rest with 2 threads), plus room for the
    /// files read at start and for directory listings.
    static func reserve(threads: Int) -> Int { 32 + 2 * threads }

    /// What one server may hold at once: the engine's databases, one socket
    /// per HTTP connection, and the reserve.
    static func needed(engine: Engine.Configuration, threads: Int, connections: Int) -> Int {
        engine.maximumDescriptors(threads: threads) + connections + reserve(threads: threads)
    }

    /// The default descriptor budget of the open database files: three
    /// quarters of the hard limit (what `ensure` may raise the soft one to),
    /// less the HTTP connections, at most 60,000 and at least 64.
    public static func defaultDatabaseDescriptors(connections: Int) -> Int {
        var limits = rlimit()
        let hard = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 ? count(limits.rlim_max) : 1024
        return max(64, min(60_000, min(hard, 1 << 24) / 4 * 3 - connections))
    }

    /// What `ensure` did.
    enum Outcome: Equatable {
        /// The soft limit was enough already.
        case enough(limit: Int)
        /// The soft limit was raised to the hard one.
        case raised(from: Int, to: Int)
    }

    /// Raises the soft limit to the hard one when it is below what the
    /// settings need; throws, naming the settings and `ulimit -n`, when even
    /// the hard limit is below it.
    static func ensure(engine: Engine.Configuration, threads: Int, connections: Int) throws(DescriptorLimitError) -> Outcome {
        let needed = needed(engine: engine, threads: threads, connections: connections)
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else {
            throw DescriptorLimitError(message: "cannot read the file descriptor limit (getrlimit: \(String(cString: strerror(errno))))")
        }
        let soft = Self.count(limits.rlim_cur)
        let hard = Self.count(limits.rlim_max)
        if soft >= needed { return .enough(limit: soft) }
        if hard >= needed {
            // All the hard limit allows: room for what the estimate cannot see, at no cost until used.
            limits.rlim_cur = limits.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 { return .raised(from: soft, to: hard) }
            limits.rlim_cur = rlim_t(needed)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 { return .raised(from: soft, to: needed) }
        }
        let perDatabase = engine.descriptorsPerDatabase
        let fitting = max(soft, hard) - connections - reserve(threads: threads) - threads * (perDatabase + 1)
        var message = """
            the settings may need \(needed) file descriptors, but the process may open \(soft) \
            (hard limit \(hard)): --max-open-descriptors \(engine.maximumOpenDescriptors) \
            (DAOGATE_MAX_OPEN_DESCRIPTORS) for the open databases, plus for each of --threads \(threads) \
            a database at its most, \(perDatabase) (a writer and \(engine.database.maximumReaders) readers, \
            each with its -wal, and a shared -shm), \(connections) HTTP connections and \
            \(reserve(threads: threads)) more. Raise the limit \
            (ulimit -n \(needed), LimitNOFILE= in a systemd unit, --ulimit nofile= in docker)
            """
        if fitting >= 16 { message += ", or lower --max-open-descriptors to \(fitting) at most" }
        throw DescriptorLimitError(message: message)
    }

    private static func count(_ value: rlim_t) -> Int {
        value > rlim_t(Int.max) ? Int.max : Int(value)  // RLIM_INFINITY is all ones
    }
}

/// Why the server will not start with these settings under this limit.
struct DescriptorLimitError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
