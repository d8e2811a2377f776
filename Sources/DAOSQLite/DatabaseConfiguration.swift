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
    /// The most bytes a database file may hold (SQLite's `max_page_count`, set on the writer connection in
    /// pages of the file's size, at least one); a write beyond it fails with `SQLITE_FULL` and its statement or
    /// transaction rolls back. nil: no cap. A file already larger keeps its size and cannot grow.
    public var maximumDatabaseBytes: Int?
    /// The most page cache each connection keeps, in KiB (`PRAGMA cache_size = -N`):
    /// per-user files are small, and ten thousand open connections with
    /// SQLite's default 2 MB each would not fit in memory. A larger cache
    /// makes a large file's reads cheaper, for memory.
    public var pageCacheKibibytes: Int

    public init(
        synchronous: Synchronous = .normal,
        busyTimeoutMilliseconds: Int32 = 5000,
        maximumReaders: Int = 4,
        statementCacheCapacity: Int = 256,
        maximumDatabaseBytes: Int? = nil,
        pageCacheKibibytes: Int = 64
    ) {
        self.synchronous = synchronous
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.maximumReaders = maximumReaders
        self.statementCacheCapacity = statementCacheCapacity
        self.maximumDatabaseBytes = maximumDatabaseBytes
        self.pageCacheKibibytes = max(8, pageCacheKibibytes)
    }
}
