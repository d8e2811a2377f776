#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection's prepared statements by SQL text, least recently used evicted at capacity.
///
/// A hit costs one hash of the SQL and one clock tick stamped on the
/// statement; only a miss at capacity scans for the stalest entry, which is
/// cheap next to the prepare it comes with.
struct StatementCache {
    let capacity: Int
    private var statements: [SQLKey: Statement] = [:]
    private var clock: UInt64 = 0
    /// The statement last asked for: a method-level `foreach` asks for the
    /// same SQL string (the same storage) once per element, found without hashing.
    private var last: Statement?

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The statement for `sql`, marked as just used; `nil` if not cached.
    mutating func statement(for sql: String) -> Statement? {
        clock &+= 1
        if let last, sharesStorage(last.sql, sql) {
            last.lastUse = clock
            return last
        }
        guard let statement = statements[SQLKey(sql)] else { return nil }
        statement.lastUse = clock
        last = statement
        return statement
    }

    /// Keeps `statement`, evicting the least recently used one when full.
    mutating func insert(_ statement: Statement) {
        guard capacity > 0 else { return }
        if statements.count >= capacity, let stalest = statements.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            statements.removeValue(forKey: stalest.key)
            if last === stalest.value { last = nil }
        }
        clock &+= 1
        statement.lastUse = clock
        statements[SQLKey(statement.sql)] = statement
    }

    /// Lets go of every statement; those nobody else holds are finalized now.
    mutating func removeAll() {
        statements.removeAll()
        last = nil
    }
}

/// Whether two strings are one and the same heap storage (so certainly equal
/// byte for byte); small strings, kept inline, never are.
private func sharesStorage(_ lhs: String, _ rhs: String) -> Bool {
    let same = lhs.utf8.withContiguousStorageIfAvailable { left in
        rhs.utf8.withContiguousStorageIfAvailable { right in
            left.count == right.count && left.count > 15 && left.baseAddress == right.baseAddress
        }
    }
    return (same ?? nil) ?? false
}

/// SQL text compared byte for byte.
///
/// `String` equality is canonical equivalence, under which `'é'` written
/// precomposed and decomposed are equal; as SQL they are different literals,
/// so the cache must not hand one's statement out for the other. Hashing
/// folds the bytes eight at a time before `Hasher` sees them: SipHash over
/// the whole text was the largest cost of a cache hit.
struct SQLKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    static func == (lhs: SQLKey, rhs: SQLKey) -> Bool {
        let equal = lhs.sql.utf8.withContiguousStorageIfAvailable { left in
            rhs.sql.utf8.withContiguousStorageIfAvailable { right in
                left.count == right.count && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
            }
        }
        return (equal ?? nil) ?? lhs.sql.utf8.elementsEqual(rhs.sql.utf8)
    }

    func hash(into hasher: inout Hasher) {
        let folded = sql.utf8.withContiguousStorageIfAvailable { fold(UnsafeRawBufferPointer($0)) }
        hasher.combine(folded ?? fold(Array(sql.utf8)))
    }
}

/// The bytes mixed into one word, eight at a time (multiply and rotate); `Hasher` seeds and finishes it.
private func fold(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
    var hash = UInt64(bytes.count) &* multiplier
    var offset = 0
    while offset + 8 <= bytes.count {
        let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        hash = ((hash ^ word) &* multiplier).rotateLeft(by: 29)
        offset += 8
    }
    var tail: UInt64 = 0
    while offset < bytes.count {
        tail = tail << 8 | UInt64(bytes[offset])
        offset += 1
    }
    return ((hash ^ tail) &* multiplier).rotateLeft(by: 29)
}

private func fold(_ bytes: [UInt8]) -> UInt64 {
    bytes.withUnsafeBytes { fold($0) }
}

extension UInt64 {
    fileprivate func rotateLeft(by bits: UInt64) -> UInt64 {
        self << bits | self >> (64 - bits)
    }
}
