import DAOValue
import Synchronization

/// The bytes all memory caches of a process may hold together.
///
/// The reference's `APLRUMemoryCache` bounds entries only by count and
/// relies on the system's memory warnings (`handleMemoryWarning`); a server
/// has no such warning, so every cache reserves what its entries cost here
/// before it holds them, and gives the bytes back whenever an entry leaves.
/// Lock-free: one atomic counter, checked and bumped with compare-and-swap so
/// that `used` never exceeds `limit`.
public final class MemoryBudget: Sendable {
    /// The most bytes the caches may hold together.
    public let limit: Int
    private let counter = Atomic<Int>(0)

    /// A budget of `bytes` (negative counts as zero).
    public init(bytes: Int) {
        limit = max(0, bytes)
    }

    /// The bytes reserved now.
    public var used: Int { counter.load(ordering: .relaxed) }

    /// The bytes still free.
    public var available: Int { limit - used }

    /// Reserves `bytes` if they fit under the limit; false, reserving
    /// nothing, when they do not.
    public func reserve(_ bytes: Int) -> Bool {
        precondition(bytes >= 0, "MemoryBudget: reserving \(bytes) bytes")
        var current = counter.load(ordering: .relaxed)
        while true {
            guard bytes <= limit - current else { return false }
            let (exchanged, original) = counter.compareExchange(
                expected: current, desired: current + bytes, successOrdering: .relaxed, failureOrdering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back bytes reserved before.
    public func release(_ bytes: Int) {
        precondition(bytes >= 0, "MemoryBudget: releasing \(bytes) bytes")
        let before = counter.subtract(bytes, ordering: .relaxed).oldValue
        assert(before >= bytes, "MemoryBudget: released \(bytes) bytes of \(before) reserved")
    }

    // MARK: Sizes

    /// What an entry costs beyond its key and value: its node in the LRU list
    /// (key, value, expiry, size and links: 64 bytes on 64-bit platforms) and
    /// its bucket in the key index (24 bytes at up to 3/4 load), rounded up.
    /// Without it a million one-byte entries would seem to cost a megabyte.
    public static let entryOverhead = 112

    /// What a value costs beyond its payload bytes: the enum itself inside its
    /// container (`MemoryLayout<Value>.stride`, 24 bytes on 64-bit platforms).
    public static let valueNodeOverhead = 24

    /// The bytes an entry is counted for: `entryOverhead`, the key's UTF-8
    /// bytes and `estimatedSize(of:)` its value.
    public static func entrySize(key: String, value: Value) -> Int {
        entryOverhead + key.utf8.count + estimatedSize(of: value)
    }

    /// An estimate of the heap a value holds, deliberately simple so that a
    /// client can predict it: every value node counts `valueNodeOverhead`;
    /// numbers add 8, strings their UTF-8 bytes, blobs their bytes; arrays add
    /// their elements; objects add, per member, the key's UTF-8 bytes, 16 for
    /// the key's string and the member's value. Booleans and nulls add
    /// nothing. Allocator rounding, the headers of heap buffers and the slack
    /// of growing collections are not counted, so the real footprint is
    /// somewhat larger: the budget bounds what clients store, it does not
    /// measure the heap.
    public static func estimatedSize(of value: Value) -> Int {
        switch value {
        case .null, .bool: valueNodeOverhead
        case .integer, .double: valueNodeOverhead + 8
        case .string(let string): valueNodeOverhead + string.utf8.count
        case .blob(let bytes): valueNodeOverhead + bytes.count
        case .array(let elements): elements.reduce(valueNodeOverhead) { $0 + estimatedSize(of: $1) }
        case .object(let members):
            members.reduce(valueNodeOverhead) { $0 + $1.key.utf8.count + 16 + estimatedSize(of: $1.value) }
        }
    }
}
