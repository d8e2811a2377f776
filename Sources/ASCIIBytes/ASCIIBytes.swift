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
    // A loop over both strings' bytes, without iterators.
    var a = a, b = b
    return a.withUTF8 { left in
        b.withUTF8 { right in
            for index in 0..<left.count where left[index] != right[index] {
                let lower = left[index] | 0x20
                guard lower == right[index] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
            }
            return true
        }
    }
}
