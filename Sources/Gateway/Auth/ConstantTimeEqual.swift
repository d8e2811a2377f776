/// Whether two secrets are the same bytes, in a time that depends on their
/// lengths only: every byte up to the longer length is read, whatever differs
/// first, so timing does not reveal how much of a guess was right.
///
/// The lengths are compared whole: their difference is kept at full width,
/// never folded into the byte that collects the content's differences (folded
/// into 8 bits, a token followed by 256 NUL bytes compared equal, the NULs
/// XOR-ing to nothing against the missing bytes). The only comparison of a
/// secret a caller sends; JWT signatures are compared by length, then by
/// `CRYPTO_memcmp` (`JWTKey.verify`).
func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
    constantTimeEqual(Array(lhs.utf8), Array(rhs.utf8))
}

/// `constantTimeEqual` on bytes.
func constantTimeEqual(_ left: [UInt8], _ right: [UInt8]) -> Bool {
    var difference = UInt(bitPattern: left.count ^ right.count)
    for index in 0..<max(left.count, right.count) {
        difference |= UInt((index < left.count ? left[index] : 0) ^ (index < right.count ? right[index] : 0))
    }
    return difference == 0
}
