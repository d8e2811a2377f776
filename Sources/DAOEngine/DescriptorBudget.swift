/// The budget of the open database files, and the file descriptors the
/// engine may hold at once, to check its settings against the process's
/// limit (`RLIMIT_NOFILE`) before serving: past the limit, every database
/// that cannot open fails its call.
extension Engine.Configuration {
    /// What the registry of open files holds them to.
    public var openFileBudget: ResourceBudget {
        ResourceBudget(descriptors: maximumOpenDescriptors, bytes: maximumOpenBytes, files: maximumOpenDatabases)
    }

    /// Descriptors one open database may hold at most: its file and its
    /// `-wal` for each connection (the writer and up to `maximumReaders`
    /// readers), and one `-shm` the connections share (SQLite's unix VFS
    /// keeps one per file and process). Measured in `DescriptorBudgetTests`.
    public var descriptorsPerDatabase: Int { 2 * (1 + database.maximumReaders) + 1 }

    /// The most descriptors the engine holds when `threads` calls run at
    /// once: `maximumOpenDescriptors`, plus for each thread a database at
    /// its most (files in use are never closed, so each busy thread may keep
    /// one past the budget) and a temporary file (a sort or an index build
    /// spilling to disk).
    public func maximumDescriptors(threads: Int) -> Int {
        maximumOpenDescriptors + threads * (descriptorsPerDatabase + 1)
    }
}
