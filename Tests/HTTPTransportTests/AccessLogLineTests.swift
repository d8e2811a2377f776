@testable import HTTPTransport
import Testing

/// The numbers of an access-log line, written in place as digits (no string made).
@Suite("An access-log line's numbers")
struct AccessLogLineTests {
    /// The text `write` puts in a line of its own.
    private func written(_ write: (inout AccessLogLine) -> Void) -> String {
        var line = AccessLogLine(taking: LineBytes())
        write(&line)
        let bytes = line.bytes.copied()
        line.bytes.deallocate()
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(arguments: [0, 7, 10, 99, 200, 1000, 123_456_789, Int.max, -1, -404, Int.min])
    func anIntegerIsItsDecimalDigits(_ value: Int) {
        #expect(written { $0.value(value) } == String(value))
    }

    @Test func millisecondsHaveThreeDecimals() {
        #expect(written { $0.milliseconds(nanoseconds: 0) } == "0.000")
        #expect(written { $0.milliseconds(nanoseconds: 999) } == "0.000")
        #expect(written { $0.milliseconds(nanoseconds: 1_000) } == "0.001")
        #expect(written { $0.milliseconds(nanoseconds: 12_345_678) } == "12.345")
        #expect(written { $0.milliseconds(nanoseconds: 120_000_000_000) } == "120000.000")
    }

    @Test func piecesFollowOneAnother() {
        #expect(written { line in
            line.append(" status=" as StaticString)
            line.value(201)
            line.field("path", "/a\u{1}b")
            line.append(Array(" end\n".utf8))
        } == " status=201 path=/a%01b end\n")
    }
}
