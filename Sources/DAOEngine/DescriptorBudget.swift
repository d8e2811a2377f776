/// The file descriptors the engine may hold at once, to check its settings
/// against the process's limit (`RLIMIT_NOFILE`) before serving: past the
/// limit, every database that cannot open fails its call.
extension Engine.Configuration {
    /// Descriptors one open database may hold: its file and its `-wal` for
    /// each connection (the writer and up to `maximumReaders` readers), and
    /// one `-shm` the connections share (SQLite's unix VFS keeps one per file
    /// and process). Measured in `DescriptorBudgetTests`.
    public var descriptorsPerDatabase: Int { 2 * (1 + database.maximumReaders) + 1 }

    /// The most descriptors the engine holds when `threads` calls run at
    /// once: `maximumOpenDatabases` databases, plus one for each thread (a
    /// database in use is never closed, so each busy thread may keep one more
    /// open), plus a temporary file per thread (a sort or an index build
    /// spilling to disk).
    public func maximumDescriptors(threads: Int) -> Int {
        (maximumOpenDatabases + threads) * descriptorsPerDatabase + threads
    }
}
