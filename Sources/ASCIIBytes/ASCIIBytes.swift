/// The classes of ASCII bytes that names, header fields and module files are checked against: one
/// definition each, for every layer that reads bytes a caller or a file sent (the dialect, the storage
/// layers, the HTTP transport). Rules built on them (what a table name, a cache name or an HTTP token may
/// be) belong to the layer that owns the name.
///
/// Each is `@inlinable`: they run for every byte of every header field and module file, and must cost no
/// more than the comparison written out where it is used.

/// `a`-`z` or `A`-`Z`.
@inlinable @inline(__always)
public func isASCIILetter(_ byte: UInt8) -> Bool {
    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
}

/// `0`-`9`.
@inlinable @inline(__always)
public func isASCIIDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
}

/// A control character: C0 (0x00-0x1F) or DEL (0x7F). A tab is one.
@inlinable @inline(__always)
public func isASCIIControl(_ byte: UInt8) -> Bool {
    byte < 0x20 || byte == 0x7F
}

/// A byte of an identifier: an ASCII letter, digit or `_`.
@inlinable @inline(__always)
public func isIdentifierByte(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: "_") || isASCIILetter(byte) || isASCIIDigit(byte)
}

/// An identifier's bytes: a letter or `_`, then letters, digits and `_` (module names, method ids, argument
/// names, table and cache names).
@inlinable
public func isIdentifier(bytes: some Collection<UInt8>) -> Bool {
    guard let first = bytes.first, !isASCIIDigit(first) else { return false }
    return bytes.allSatisfy(isIdentifierByte)
}

/// An identifier: a letter or `_`, then letters, digits and `_`.
@inlinable
public func isIdentifier(_ text: some StringProtocol) -> Bool { isIdentifier(bytes: text.utf8) }

/// Whether two strings are equal when ASCII letters are compared without case: as HTTP compares field names
/// and SQLite compares identifiers (byte for byte otherwise, not as Swift compares strings, which would
/// equate canonically equivalent ones).
@inlinable
public func asciiCaseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
    // Names of other lengths, most of them, are told apart without reading a byte, and without a call: inlined
    // where it is asked (several header lookups per request, against literals whose length is known).
    guard a.utf8.count == b.utf8.count else { return false }
    return asciiCaseInsensitiveEqualsOfSameLength(a, b)
}

/// `asciiCaseInsensitiveEquals` once the lengths are equal.
@usableFromInline
func asciiCaseInsensitiveEqualsOfSameLength(_ a: String, _ b: String) -> Bool {
    withUTF8Bytes(of: a) { left in withUTF8Bytes(of: b) { right in sameBytesIgnoringASCIICase(left, right) } }
}

/// `asciiCaseInsensitiveEquals` of raw bytes (a header field's name where libmicrohttpd holds it) and a literal.
@inlinable
public func asciiCaseInsensitiveEquals(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    return bytesEqualIgnoringASCIICase(bytes, literal)
}

/// `asciiCaseInsensitiveEquals(_:_:)` of bytes once the lengths are equal.
@usableFromInline
func bytesEqualIgnoringASCIICase(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    sameBytesIgnoringASCIICase(bytes.assumingMemoryBound(to: UInt8.self),
                               UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
}

@inline(__always)
private func sameBytesIgnoringASCIICase(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
    for index in 0..<left.count where left[index] != right[index] {
        let lower = left[index] | 0x20
        guard lower == right[index] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
    }
    return true
}

/// `body` over the string's UTF-8 bytes, read where they are. `String.withUTF8` is `mutating`: a caller holding a
/// `let` first copies the string into a `var`, a retain and a release on every call (every header compared, every
/// string bound or written as JSON, on every request). A native or small string's bytes are lent as they are; any
/// other (bridged, never one the server made) is made contiguous in a copy first.
@inlinable
public func withUTF8Bytes<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let result = try text.utf8.withContiguousStorageIfAvailable(body) { return result }
    var copy = text
    return try copy.withUTF8(body)
}

/// FNV-1a, 64 bits: a hash of a name's or a path's bytes that costs a multiplication per byte, for keys the
/// server makes itself (`FixedStringTable`, `DatabaseRegistry.ModuleTable`). Not seeded: a table whose keys a
/// caller chooses hashes them with Swift's `Hasher`, or feeds it this word.
public enum FNV1a {
    public static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// `hash` with one more byte folded in.
    @inlinable @inline(__always)
    public static func fold(_ byte: UInt8, into hash: inout UInt64) {
        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }

    /// The hash of `bytes`.
    @inlinable
    public static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash = offsetBasis
        for byte in bytes { fold(byte, into: &hash) }
        return hash
    }
}

// MARK: Eight bytes at a time

// A scan of a caller's bytes reads them a word of eight at a time, asks whether any byte of the word is one to
// stop at (a few operations, exact for the word as a whole), and looks at the word's bytes one by one only if
// so. A caller's bytes are mostly plain, so a header value, a path or a logged value costs a few operations
// per eight bytes instead of a comparison or two per byte.

/// Whether a byte of `word` is below `limit`, which is at most 0x80: subtracting `limit` from such a byte borrows
/// into its high bit, which the byte itself lacks (a borrow may flag a higher byte too; the answer for the word
/// is exact).
@inlinable @inline(__always)
public func wordHasByte(below limit: UInt8, _ word: UInt64) -> Bool {
    (word &- UInt64(limit) &* 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
}

/// Whether a byte of `word` is `byte`: a zero byte of `word ^ byte…`, found as a byte below 1.
@inlinable @inline(__always)
public func wordHasByte(_ byte: UInt8, _ word: UInt64) -> Bool {
    wordHasByte(below: 1, word ^ UInt64(byte) &* 0x0101_0101_0101_0101)
}

/// Whether a byte of `word` is 0x80 or above (not ASCII).
@inlinable @inline(__always)
public func wordHasNonASCIIByte(_ word: UInt64) -> Bool {
    word & 0x8080_8080_8080_8080 != 0
}

/// The index of the first byte of `bytes` for which `isStop` holds, nil when there is none, reading a word at a
/// time: `wordMayStop` says whether a word holds a byte that may be one (it must say so of every word that
/// does), and only such a word's bytes are asked of `isStop`.
@inlinable @inline(__always)
public func firstIndex(in bytes: UnsafeRawBufferPointer, wordMayStop: (UInt64) -> Bool,
                       where isStop: (UInt8) -> Bool) -> Int? {
    let count = bytes.count
    var index = 0
    while index + 8 <= count {
        if wordMayStop(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))) {
            for offset in index..<index + 8 where isStop(bytes[offset]) { return offset }
        }
        index += 8
    }
    while index < count {
        if isStop(bytes[index]) { return index }
        index += 1
    }
    return nil
}

/// The index of the first control character (`isASCIIControl`: C0 or DEL) in `bytes`, nil when there is none.
@inlinable
public func firstASCIIControl(in bytes: UnsafeRawBufferPointer) -> Int? {
    firstIndex(in: bytes, wordMayStop: { wordHasByte(below: 0x20, $0) || wordHasByte(0x7F, $0) }, where: isASCIIControl)
}
