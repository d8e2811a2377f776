import ASCIIBytes
import DAOValue
import Testing

/// The scans that read a caller's bytes eight at a time (`firstIndex(in:wordMayStop:where:)` and the word tests):
/// every byte value, at every position of a word and of the bytes after the last whole word, answers as a
/// comparison of each byte would.
@Suite struct WordScanTests {
    /// Lengths that leave 0 to 7 bytes after the last whole word, and more than one word.
    static let lengths = [1, 7, 8, 9, 15, 16, 17, 23]

    /// Every byte value at every position among plain bytes (`a`): where the scan stops.
    func everyByteAtEveryPosition(_ scan: (UnsafeRawBufferPointer) -> Int?, expecting isStop: (UInt8) -> Bool) {
        for length in Self.lengths {
            for position in 0..<length {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = UInt8(value)
                    let found = bytes.withUnsafeBytes(scan)
                    #expect(found == (isStop(UInt8(value)) ? position : nil), "byte \(value) at \(position) of \(length)")
                }
            }
        }
    }

    @Test func controlCharactersAreFoundWhereverTheyAre() {
        everyByteAtEveryPosition({ firstASCIIControl(in: $0) }, expecting: isASCIIControl)
    }

    @Test func eachWordTestSaysWhetherTheWordHoldsSuchAByte() {
        everyByteAtEveryPosition({ firstIndex(in: $0, wordMayStop: { wordHasByte(below: 0x20, $0) }, where: { $0 < 0x20 }) },
                                 expecting: { $0 < 0x20 })
        everyByteAtEveryPosition({ firstIndex(in: $0, wordMayStop: { wordHasByte(below: 0x61, $0) }, where: { $0 < 0x61 }) },
                                 expecting: { $0 < 0x61 })
        everyByteAtEveryPosition({ firstIndex(in: $0, wordMayStop: { wordHasByte(0xE2, $0) }, where: { $0 == 0xE2 }) },
                                 expecting: { $0 == 0xE2 })
        everyByteAtEveryPosition({ firstIndex(in: $0, wordMayStop: { wordHasByte(0x00, $0) }, where: { $0 == 0x00 }) },
                                 expecting: { $0 == 0x00 })
        everyByteAtEveryPosition({ firstIndex(in: $0, wordMayStop: wordHasNonASCIIByte, where: { $0 >= 0x80 }) },
                                 expecting: { $0 >= 0x80 })
    }

    /// The borrow of a byte below the limit may flag the byte above it too: the scan still stops at the first.
    @Test func theFirstOfSeveralIsFound() {
        for length in Self.lengths where length >= 2 {
            for first in 0..<length - 1 {
                for second in first + 1..<length {
                    var bytes = [UInt8](repeating: 0x20, count: length)
                    bytes[first] = 0x1F
                    bytes[second] = 0x00
                    #expect(bytes.withUnsafeBytes { firstASCIIControl(in: $0) } == first)
                }
            }
        }
    }

    /// Random bytes, weighted towards the ones the scans stop at: the JSON writer against a byte-at-a-time one.
    @Test func jsonStringsAreWrittenAsByteByByte() {
        var generator = SystemRandomNumberGenerator()
        let interesting: [UInt8] = [0x00, 0x09, 0x0A, 0x1F, 0x20, 0x22, 0x5C, 0x7F, 0x80, 0xA8, 0xA9, 0xE2, 0x61]
        for _ in 0..<3_000 {
            let count = Int.random(in: 0...40, using: &generator)
            var bytes: [UInt8] = []
            for _ in 0..<count {
                if Bool.random(using: &generator) {
                    bytes.append(interesting.randomElement(using: &generator)!)
                } else if Int.random(in: 0..<4, using: &generator) == 0 {
                    bytes += [0xE2, 0x80, [0xA8, 0xA9, 0xA7].randomElement(using: &generator)!]
                } else {
                    bytes.append(UInt8.random(in: 0x20...0x7E, using: &generator))
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            var written: [UInt8] = []
            writeJSONString(text, to: &written)
            #expect(written == Self.byteByByte(text), "\(Array(text.utf8))")
        }
    }

    /// The JSON string of `text`, a byte at a time, as the writer's rules say.
    static func byteByByte(_ text: String) -> [UInt8] {
        let utf8 = Array(text.utf8)
        var out: [UInt8] = [UInt8(ascii: "\"")]
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == 0xE2, index + 2 < utf8.count, utf8[index + 1] == 0x80, utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9 {
                out += Array((utf8[index + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                index += 3
                continue
            }
            switch byte {
            case 0x22: out += Array("\\\"".utf8)
            case 0x5C: out += Array("\\\\".utf8)
            case 0x0A: out += Array("\\n".utf8)
            case 0x0D: out += Array("\\r".utf8)
            case 0x09: out += Array("\\t".utf8)
            case 0x08: out += Array("\\b".utf8)
            case 0x0C: out += Array("\\f".utf8)
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
            index += 1
        }
        out.append(UInt8(ascii: "\""))
        return out
    }
}
