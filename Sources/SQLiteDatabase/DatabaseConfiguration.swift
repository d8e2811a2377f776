/// `PRAGMA synchronous` for writer connections: `NORMAL` is durable across
/// application crashes in WAL mode; `FULL` also across power loss. With a
/// rollback journal `NORMAL` already syncs every commit (see `JournalMode`).
public enum Synchronous: String, Sendable {
    case normal = "NORMAL"
    case full = "FULL"
}

/// How a database file keeps its journal: what its connections cost, and what they give up.
public enum JournalMode: String, Sendable, CaseIterable {
    /// Write-ahead log: readers never wait for the writer (each on its own
    /// connection and snapshot), and a commit costs no `fsync` with
    /// `synchronous=NORMAL` (the last commits may be lost on power loss, the
    /// file never corrupted). An open file holds three descriptors (the file,
    /// its `-wal`, its `-shm`) and the 32 KiB `-shm` index in memory.
    case wal
    /// A rollback journal (`journal_mode=DELETE`): one file on disk per
    /// database (the `-journal` lives only while a write runs; making it costs
    /// a sync of the folder per commit, which `TRUNCATE` spares at the price of
    /// an empty `-journal` beside every file written once; docs/performance.md
    /// measures both), one descriptor per open file (two while a write runs)
    /// and no `-shm`, so three times as many
    /// files stay open under one descriptor limit and half the memory; but a
    /// commit syncs the journal and the file (two `fsync`s with `NORMAL`, which makes
    /// an acknowledged write durable on power loss; three with `FULL`), and
    /// reads wait for a write in flight: the pool runs every call on its one
    /// connection, one at a time.
    case rollback
}

/// How connections to one database file are opened and pooled.
public struct DatabaseConfiguration: Sendable {
    /// Applied to writable connections.
    public var synchronous: Synchronous
    /// How long a connection waits for a lock held by another before `SQLITE_BUSY`.
    public var busyTimeoutMilliseconds: Int32
    /// Read-only connections per pool, created on demand; at least 1. A
    /// rollback-journal pool opens none: its reads wait for the writer.
    public var maximumReaders: Int
    /// The file's journal; applied to the writer when it opens.
    public var journal: JournalMode
    /// Whether SQLite takes POSIX file locks on the file (its default `unix`
    /// VFS). false opens it through `unix-none`, which takes none: for a
    /// rollback-journal file that one connection of this process alone uses
    /// (the pool of a users' file, with a lock on the whole data folder
    /// keeping other servers out). SQLite's `unix` VFS finds each file it
    /// opens in a list of every file it has open, so an open costs time in
    /// proportion to the files open (1.2 ms with 9,000 open, against 0.1 ms
    /// with none; `bench/journal-modes.py`); `unix-none` keeps no such list.
    /// Another process must then not write the file while it is open here;
    /// readers of a copy check it (`Database.consistentCopy`).
    public var usesFileLocks: Bool
    /// Prepared statements kept per connection, least recently used evicted; 0 caches nothing.
    public var statementCacheCapacity: Int
    /// The most bytes a database file may hold (SQLite's `max_page_count`, set on the writer connection in
    /// pages of the file's size, at least one); a write beyond it fails with `SQLITE_FULL` and its statement or
    /// transaction rolls back. nil: no cap. A file already larger keeps its size and cannot grow. (The engine
    /// caps what one user stores, their files of every storage together, at it: `SharedSizeCap`.)
    public var maximumDatabaseBytes: Int?
    /// The most page cache each connection keeps, in KiB (`PRAGMA cache_size = -N`):
    /// per-user files are small, and ten thousand open connections with
    /// SQLite's default 2 MB each would not fit in memory. A larger cache
    /// makes a large file's reads cheaper, for memory.
    public var pageCacheKibibytes: Int
    /// The page size a new file is created with (`PRAGMA page_size`, a power of two from 512 to 65536),
    /// set by the writer before the file's first write; a file that has pages keeps its size. nil: SQLite's
    /// default, 4096. Every page an open connection caches costs its size and some 300 bytes: a per-user
    /// file holding a few rows is read through four or five pages (the schema, each table's root, an
    /// index's), 22 KB cached with 4096-byte pages and 7 KB with 1024. Smaller pages make a large file's
    /// B-tree deeper and a large value's overflow chain longer (a 256 KiB value is 256 pages of 1024).
    public var newFilePageSize: Int?

    public init(
        synchronous: Synchronous = .normal,
        busyTimeoutMilliseconds: Int32 = 5000,
        maximumReaders: Int = 4,
        statementCacheCapacity: Int = 256,
        maximumDatabaseBytes: Int? = nil,
        pageCacheKibibytes: Int = 64,
        journal: JournalMode = .wal,
        usesFileLocks: Bool = true,
        newFilePageSize: Int? = nil
    ) {
        self.synchronous = synchronous
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.maximumReaders = maximumReaders
        self.statementCacheCapacity = statementCacheCapacity
        self.maximumDatabaseBytes = maximumDatabaseBytes
        self.pageCacheKibibytes = max(8, pageCacheKibibytes)
        self.journal = journal
        self.usesFileLocks = usesFileLocks
        self.newFilePageSize = newFilePageSize.map { size in
            // SQLite ignores a size that is not a power of two in 512...65536; so does this.
            (512...65536).contains(size) && size & (size - 1) == 0 ? size : 4096
        }
    }
}
