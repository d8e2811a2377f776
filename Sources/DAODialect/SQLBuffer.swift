/// SQL text being assembled: loaded text pieces carry at most one space at
/// each end, and a space is dropped where the text already ends in one, so
/// joined pieces read with single spaces.
struct SQLBuffer {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(256) }

    mutating func append(text: [UInt8]) {
        if text.first == UInt8(ascii: " ") && (bytes.isEmpty || bytes.last == UInt8(ascii: " ")) {
            bytes += text.dropFirst()
        } else {
            bytes += text
        }
    }

    /// Ensures one space separates what comes before from what comes next.
    mutating func appendSeparator() {
        if let last = bytes.last, last != UInt8(ascii: " ") { bytes.append(UInt8(ascii: " ")) }
    }

    mutating func appendPlaceholder() { bytes.append(UInt8(ascii: "?")) }

    mutating func append(raw: some Sequence<UInt8>) { bytes += raw }

    var count: Int { bytes.count }

    /// The text without trailing spaces.
    func finish() -> String {
        var end = bytes.count
        while end > 0 && bytes[end - 1] == UInt8(ascii: " ") { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
