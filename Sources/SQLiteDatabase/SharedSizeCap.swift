import CSQLite
import Foundation
import Synchronization

/// One cap on the bytes several database files hold together (one user's
/// files of every storage, say), where SQLite's `max_page_count` caps one
/// file on one connection.
///
/// A write to a member file holds the group's lock for its whole body: the
/// writer's `max_page_count` is set to what the cap leaves the file (the cap
/// less what the other members hold), the body runs, and the file's pages are
/// counted (`page_count × page_size`) when it ends. Writes to the members of
/// one group are thus serialized, so that two of them never both grow into the
/// same free bytes; a write that would go beyond fails `SQLITE_FULL` and rolls
/// back, as under a fixed `max_page_count`. (Each file has one writer anyway;
/// what is given up is one group's writes to two files at once. A budget split
/// between the files ahead of the writes would refuse a write to one file
/// while another held unused room; a check at commit would need to undo a
/// commit.)
///
/// What a member holds before its first write here is read on disk
/// (`onDisk`, the policy owner's: which files make the group, and where):
/// when the group is made, no file of it is open, so the files are whole on
/// disk. `forget` drops one member's count after its file was removed or
/// replaced outside a write; it is read on disk again at the next write.
///
///     let cap = SharedSizeCap(bytes: 1 << 20) { ["": size(of: "a.db"), "s1": size(of: "b.db")] }
///     let pool = try DatabasePool(path: "b.db", share: SizeShare(cap: cap, member: "s1"))
public final class SharedSizeCap: Sendable {
    /// The most bytes the members may hold together.
    public let bytes: Int
    /// Held for a whole write body of a member (recursive: a body that writes another member does not wait for
    /// itself).
    private let writing = NSRecursiveLock()
    private let state = Mutex(State())
    /// The members that have a file, with the bytes each holds on disk; `only` asks for that member alone.
    private let onDisk: @Sendable (_ only: String?) -> [String: Int]

    private struct State {
        /// What each member held at the end of its last write (or on disk), nil before the first write.
        var held: [String: Int]?
        /// Members whose files changed outside a write: read on disk at the next write.
        var forgotten: Set<String> = []
    }

    public init(bytes: Int, onDisk: @escaping @Sendable (_ only: String?) -> [String: Int]) {
        self.bytes = bytes
        self.onDisk = onDisk
    }

    /// What the members hold together, as last counted (0 before the first write).
    public var heldBytes: Int { state.withLock { $0.held?.values.reduce(0, +) ?? 0 } }

    /// Forgets what `member` holds: its file was removed or replaced without a write of this group.
    public func forget(_ member: String) {
        state.withLock { state in
            state.held?[member] = nil
            state.forgotten.insert(member)
        }
    }

    /// Runs a write body of `member` with the bytes its file may hold meanwhile; `body` returns what the file
    /// holds when it ends (nil when it cannot tell: it is read on disk at the next write).
    func whileWriting(_ member: String, _ body: (_ allowance: Int) -> Int?) {
        writing.lock()
        defer { writing.unlock() }
        let others = othersHold(besides: member)
        let after = body(max(0, bytes - others))
        state.withLock { state in
            if let after {
                state.held?[member] = after
                state.forgotten.remove(member)
            } else {
                state.forgotten.insert(member)
            }
        }
    }

    /// What the other members hold; reads the disk for the group's first write and for forgotten members
    /// (under the state's lock, so that a `forget` meanwhile is not lost).
    private func othersHold(besides member: String) -> Int {
        state.withLock { state in
            var held = state.held ?? onDisk(nil)
            if state.held != nil {
                for name in state.forgotten where name != member { held[name] = onDisk(name)[name] }
            }
            state.held = held
            state.forgotten = state.forgotten.contains(member) ? [member] : []
            return held.reduce(0) { $0 + ($1.key == member ? 0 : $1.value) }
        }
    }
}

/// A file's membership of a `SharedSizeCap`: the pool of `member`'s file counts it against `cap`.
public struct SizeShare: Sendable {
    public let cap: SharedSizeCap
    public let member: String

    public init(cap: SharedSizeCap, member: String) {
        self.cap = cap
        self.member = member
    }
}

extension Database {
    /// The bytes of the database's pages (`page_count × page_size`), a write-ahead log's pages included.
    func storedBytes() throws(SQLiteError) -> Int {
        let statement = try cachedStatement("select page_count * page_size from pragma_page_count(), pragma_page_size()")
        defer { statement.reset() }
        return try statement.step() ? Int(statement.int64(at: 0)) : 0
    }

    /// The database's page size.
    func pageSize() throws(SQLiteError) -> Int {
        // Asked once per connection: not worth a place in its statement cache.
        let statement = try makeStatement("PRAGMA page_size")
        defer { statement.reset() }
        return try statement.step() ? max(512, Int(statement.int64(at: 0))) : 4096
    }

    /// Sets `max_page_count`; returns the limit SQLite set, which is never lower than the pages the file has.
    func limitPages(to pages: Int) throws(SQLiteError) -> Int {
        let statement = try makeStatement("PRAGMA max_page_count = \(max(1, pages))")
        return try statement.step() ? Int(statement.int64(at: 0)) : pages
    }
}
