import ASCIIBytes
/// Standard base64 (RFC 4648 §4): the `+/` alphabet, always padded with `=`.
public enum Base64 {
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// `bytes` as padded base64 text.
    public static func encode(_ bytes: [UInt8]) -> String {
        var buffer: [UInt8] = []
        encode(bytes, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The bytes that `text` encodes, or `nil` unless `text` is canonical padded base64.
    ///
    /// Strict: whitespace, line breaks, a length that is not a multiple of 4,
    /// misplaced or missing padding, characters outside the alphabet, and nonzero
    /// bits in the last character before the padding are all rejected, so each
    /// byte sequence has exactly one accepted encoding.
    public static func decode(_ text: String) -> [UInt8]? {
        return withUTF8Bytes(of: text) { decode($0) }
    }

    /// Appends `bytes` as padded base64 to `buffer`.
    static func encode(_ bytes: [UInt8], into buffer: inout [UInt8]) {
        buffer.reserveCapacity(buffer.count + (bytes.count + 2) / 3 * 4)
        let symbols = alphabet.utf8Start
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            buffer.append(symbols[Int(group >> 18)])
            buffer.append(symbols[Int(group >> 12 & 0x3F)])
            buffer.append(symbols[Int(group >> 6 & 0x3F)])
            buffer.append(symbols[Int(group & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            buffer.append(symbols[Int(group >> 18)])
            buffer.append(symbols[Int(group >> 12 & 0x3F)])
            buffer.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            buffer.append(symbols[Int(group >> 18)])
            buffer.append(symbols[Int(group >> 12 & 0x3F)])
            buffer.append(symbols[Int(group >> 6 & 0x3F)])
            buffer.append(UInt8(ascii: "="))
        default:
            break
        }
    }

    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        guard !text.isEmpty else { return [] }
        let padding =
            text[text.count - 1] != UInt8(ascii: "=") ? 0 : text[text.count - 2] != UInt8(ascii: "=") ? 1 : 2
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 4 * 3 - padding)
        var index = 0
        while index < text.count {
            let lastGroup = index + 4 == text.count
            let present = lastGroup ? 4 - padding : 4
            var group: UInt32 = 0
            for offset in 0..<4 {
                let value: UInt8
                if offset < present {
                    guard let sextet = sextet(text[index + offset]) else { return nil }
                    value = sextet
                } else {
                    value = 0
                }
                group = group << 6 | UInt32(value)
            }
            switch present {
            case 4:
                bytes.append(UInt8(truncatingIfNeeded: group >> 16))
                bytes.append(UInt8(truncatingIfNeeded: group >> 8))
                bytes.append(UInt8(truncatingIfNeeded: group))
            case 3:
                guard group & 0xFF == 0 else { return nil }
                bytes.append(UInt8(truncatingIfNeeded: group >> 16))
                bytes.append(UInt8(truncatingIfNeeded: group >> 8))
            default:
                guard group & 0xFFFF == 0 else { return nil }
                bytes.append(UInt8(truncatingIfNeeded: group >> 16))
            }
            index += 4
        }
        return bytes
    }

    /// The six bits an alphabet character stands for; `nil` for anything else, `=` included.
    @inline(__always) private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
