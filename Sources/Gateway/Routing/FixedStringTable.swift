#if canImport(Glibc)
import Glibc
#endif
import ASCIIBytes

/// A table from strings to values, made once and then only read, for a lookup on every request
/// (`ModuleSet.callPaths`).
///
/// A key is hashed by FNV-1a over its UTF-8 bytes, not by Swift's seeded SipHash, which costs a few hundred
/// instructions for a path of twenty bytes; the slots are probed in turn from the hash's. A seeded hash is
/// what keeps a caller from filling a table with keys that collide; here no caller inserts anything, so a
/// lookup costs at most the longest run of the table's own keys, whatever the caller sends.
struct FixedStringTable<Value> {
    /// Where each slot's key is in `bytes`; `count` -1 for an empty slot. The key's value is at the same index
    /// of `values`.
    private let slots: [(start: Int, count: Int)]
    /// The keys' UTF-8 bytes, one after another: a lookup compares bytes and touches no string (no reference
    /// count that every worker thread would share).
    private let bytes: [UInt8]
    private let values: [Value?]
    private let mask: Int
    let count: Int

    init(_ entries: [String: Value]) {
        var size = 8
        while size < 2 * entries.count { size *= 2 }  // at most half full: runs stay short
        var slots = [(start: Int, count: Int)](repeating: (0, -1), count: size)
        var bytes: [UInt8] = []
        var values = [Value?](repeating: nil, count: size)
        for (key, value) in entries {
            var slot = withUTF8Bytes(of: key, Self.hash) & (size - 1)
            while slots[slot].count >= 0 { slot = (slot + 1) & (size - 1) }
            slots[slot] = (bytes.count, key.utf8.count)
            bytes += key.utf8
            values[slot] = value
        }
        self.slots = slots
        self.bytes = bytes
        self.values = values
        self.mask = size - 1
        self.count = entries.count
    }

    /// The value of the key whose bytes are `key`'s: a string that `==` calls equal (canonically equivalent) but
    /// spelled with other bytes is not found. A path so spelled goes to the router (`Gateway.match`).
    subscript(key: String) -> Value? {
        let found = withUTF8Bytes(of: key) { key in
            bytes.withUnsafeBufferPointer { bytes -> Int? in
                var slot = Self.hash(key) & mask
                while slots[slot].count >= 0 {
                    if slots[slot].count == key.count,
                       key.isEmpty || memcmp(bytes.baseAddress! + slots[slot].start, key.baseAddress!, key.count) == 0 {
                        return slot
                    }
                    slot = (slot + 1) & mask
                }
                return nil
            }
        }
        return found.flatMap { values[$0] }
    }

    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        Int(truncatingIfNeeded: FNV1a.hash(bytes))
    }
}

extension FixedStringTable: Sendable where Value: Sendable {}
