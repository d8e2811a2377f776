/// SQL text being assembled: loaded text pieces carry at most one space at
/// each end, and a space is dropped where the text already ends in one, so
/// joined pieces read with single spaces.
///
/// Markup never puts a space at the start of a `foreach` item (`itemStart`):
/// the space is left out as it is written, rather than removed afterwards,
/// so nothing already in the buffer moves (the raw-text checks keep
/// positions in it), and a value's own leading space (` -5` after a `-`) is
/// never taken away.
struct SQLBuffer {
    var bytes: [UInt8] = []
    /// Where the `foreach` item being rendered starts.
    var itemStart: Int?

    init() { bytes.reserveCapacity(256) }

    /// Whether a space written now would lead a piece where none belongs.
    private var spaceIsRedundant: Bool {
        bytes.isEmpty || bytes.last == UInt8(ascii: " ") || bytes.count == itemStart
    }

    mutating func append(text: [UInt8]) {
        if text.first == UInt8(ascii: " ") && spaceIsRedundant {
            bytes += text.dropFirst()
        } else {
            bytes += text
        }
    }

    /// Markup the module wrote (a `foreach`'s open, separator and close, a
    /// `trim`'s prefix and suffix): verbatim, but for leading spaces at an item's start.
    mutating func append(markup: some StringProtocol) {
        var utf8 = Substring(markup).utf8[...]
        if bytes.count == itemStart { utf8 = utf8.drop { $0 == UInt8(ascii: " ") } }
        bytes += utf8
    }

    /// Ensures one space separates what comes before from what comes next.
    mutating func appendSeparator() {
        if !spaceIsRedundant { bytes.append(UInt8(ascii: " ")) }
    }

    /// Removes the spaces that end the buffer after `start`.
    mutating func trimTrailingSpaces(after start: Int) {
        while bytes.count > start && bytes.last == UInt8(ascii: " ") { bytes.removeLast() }
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
