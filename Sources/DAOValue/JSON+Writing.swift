import ASCIIBytes
extension Value {
    /// Appends this value as compact JSON to `buffer`.
    ///
    /// Hand-written for the reasons given on `init(parsingJSON:options:)`: integers
    /// are written as their exact digits, and output goes straight into the byte
    /// buffer. Object members keep their order.
    /// - `.double` is written in the shortest form that parses back to the same
    ///   value; JSON has no infinities or NaN, so a non-finite double is `null`.
    /// - `.blob` is a string of standard padded base64.
    public func writeJSON(to buffer: inout [UInt8], options: JSONWriteOptions = .init()) {
        switch self {
        case .null:
            buffer.appendASCII("null")
        case .bool(let bool):
            buffer.appendASCII(bool ? "true" : "false")
        case .integer(let integer):
            if options.int64AsString, integer.magnitude > maxSafeInteger {
                buffer.append(UInt8(ascii: "\""))
                writeDigits(of: integer, to: &buffer)
                buffer.append(UInt8(ascii: "\""))
            } else {
                writeDigits(of: integer, to: &buffer)
            }
        case .double(let double):
            // `description` is the shortest round-trip form and always has a `.` or
            // an exponent (`100.0`, `1e-05`, `-0.0`), so it reads back as a double.
            if double.isFinite {
                buffer.append(contentsOf: double.description.utf8)
            } else {
                buffer.appendASCII("null")
            }
        case .string(let string):
            writeJSONString(string, to: &buffer)
        case .blob(let bytes):
            buffer.append(UInt8(ascii: "\""))
            Base64.encode(bytes, into: &buffer)
            buffer.append(UInt8(ascii: "\""))
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { buffer.append(UInt8(ascii: ",")) }
                element.writeJSON(to: &buffer, options: options)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            buffer.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                if position > 0 { buffer.append(UInt8(ascii: ",")) }
                writeJSONString(member.key, to: &buffer)
                buffer.append(UInt8(ascii: ":"))
                member.value.writeJSON(to: &buffer, options: options)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    /// This value as compact JSON bytes; see `writeJSON(to:options:)`.
    public func jsonBytes(options: JSONWriteOptions = .init()) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64)
        writeJSON(to: &buffer, options: options)
        return buffer
    }

    /// This value as compact JSON text; see `writeJSON(to:options:)`.
    public func jsonString(options: JSONWriteOptions = .init()) -> String {
        String(decoding: jsonBytes(options: options), as: UTF8.self)
    }
}

/// 2^53 − 1, the largest magnitude up to which every integer is exactly a JavaScript number.
private let maxSafeInteger: UInt64 = 1 << 53 - 1

/// Appends the decimal digits of `integer`, with a leading `-` when negative.
private func writeDigits(of integer: Int64, to buffer: inout [UInt8]) {
    if integer < 0 { buffer.append(UInt8(ascii: "-")) }
    var magnitude = integer.magnitude
    let start = buffer.count
    repeat {
        buffer.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
        magnitude /= 10
    } while magnitude > 0
    buffer[start...].reverse()
}

/// Writes `string` as a JSON string literal, quotes included, into `buffer`.
///
/// Escapes `"`, `\` and the control characters (`\n`, `\r`, `\t`, `\b`, `\f`,
/// the others as `\u00xx`), and U+2028 and U+2029, which JavaScript does not
/// allow raw in string literals; everything else is copied as raw UTF-8.
public func writeJSONString(_ string: String, to buffer: inout [UInt8]) {
    buffer.append(UInt8(ascii: "\""))
    withUTF8Bytes(of: string) { utf8 in
        var runStart = 0
        var index = 0
        // The bytes written as they are are skipped a word at a time: a stop is a control character, `"`, `\`,
        // or the first byte of U+2028 and U+2029 (0xE2, which other characters start with too).
        while let offset = firstIndex(
            in: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[index...]),
            wordMayStop: { wordHasByte(below: 0x20, $0) || wordHasByte(0x22, $0) || wordHasByte(0x5C, $0) || wordHasByte(0xE2, $0) },
            where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }
        ) {
            index += offset
            let byte = utf8[index]
            let isSeparator = byte == 0xE2 && index + 2 < utf8.count && utf8[index + 1] == 0x80
                && utf8[index + 2] & 0xFE == 0xA8
            if byte == 0xE2 && !isSeparator {
                index += 1
                continue
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            switch byte {
            case UInt8(ascii: "\""): buffer.appendASCII("\\\"")
            case UInt8(ascii: "\\"): buffer.appendASCII("\\\\")
            case 0x0A: buffer.appendASCII("\\n")
            case 0x0D: buffer.appendASCII("\\r")
            case 0x09: buffer.appendASCII("\\t")
            case 0x08: buffer.appendASCII("\\b")
            case 0x0C: buffer.appendASCII("\\f")
            case 0xE2: buffer.appendASCII(utf8[index + 2] == 0xA8 ? "\\u2028" : "\\u2029")
            default:
                let hexDigits: StaticString = "0123456789abcdef"
                buffer.appendASCII("\\u00")
                buffer.append(hexDigits.utf8Start[Int(byte >> 4)])
                buffer.append(hexDigits.utf8Start[Int(byte & 0x0F)])
            }
            index += isSeparator ? 3 : 1
            runStart = index
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
    }
    buffer.append(UInt8(ascii: "\""))
}

extension [UInt8] {
    /// Appends the bytes of an ASCII literal: copied from the binary, where appending a string's `utf8` goes
    /// through the generic sequence append.
    @inlinable @inline(__always) public mutating func appendASCII(_ text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
