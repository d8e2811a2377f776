/// `PRAGMA synchronous` for writer connections: `NORMAL` is durable across
/// application crashes in WAL mode; `FULL` also across power loss.
public enum Synchronous: String, Sendable {
    case normal = "NORMAL"
    case full = "FULL"
}

/// How connections to one database file are opened and pooled.
public struct DatabaseConfiguration: Sendable {
    /// Applied to writable connections.
    public var synchronous: Synchronous
    /// How long a connection waits for a lock held by another before `SQLITE_BUSY`.
    public var busyTimeoutMilliseconds: Int32
    /// Read-only connections per pool, created on demand; at least 1.
    public var maximumReaders: Int
    /// Prepared statements kept per connection, least recently used evicted; 0 caches nothing.
    public var statementCacheCapacity: Int

    public init(
        synchronous: Synchronous = .normal,
        busyTimeoutMilliseconds: Int32 = 5000,
        maximumReaders: Int = 4,
        statementCacheCapacity: Int = 256
    ) {
        self.synchronous = synchronous
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.maximumReaders = maximumReaders
        self.statementCacheCapacity = statementCacheCapacity
    }
}
