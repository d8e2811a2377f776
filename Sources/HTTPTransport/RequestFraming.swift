import ASCIIBytes

/// What the transport checks of a request before a responder sees it or any of its body is read: the request
/// target, the header fields and the framing of the body (RFC 9112 §2.2, §5, §6.1, §6.3).
///
/// libmicrohttpd frames a body by the first `Content-Length` it finds, and by
/// any `Transfer-Encoding` as a body of unknown length that is chunked only
/// when the value is exactly `chunked`. A request whose framing another HTTP
/// implementation (a proxy in front) could read differently is refused, so
/// that the rest of a body can never run as a request of its own.
enum RequestFraming {
    /// Why the request must be refused, or nil when it may go on.
    ///
    /// - Parameters:
    ///   - target: what the request target held as the client sent it (path and query), as far as libmicrohttpd's
    ///     copy goes.
    ///   - targetIsWhole: whether `target` is the whole target: false when a raw NUL ended libmicrohttpd's copy early.
    ///   - isHTTP10: whether the request line's protocol version is `HTTP/1.0`.
    ///   - headers: the header fields, names as sent and values as libmicrohttpd keeps them.
    ///   - facts: what the fields' bytes said as they were copied: the first field to refuse, the framing fields
    ///     counted.
    ///   - transferEncoding: the `Transfer-Encoding` value exactly as libmicrohttpd compares it (without trimming),
    ///     if one was sent.
    static func refusal(target: borrowing RequestTarget, targetIsWhole: Bool, isHTTP10: Bool,
                        headers: borrowing [(name: String, value: String)], facts: HeaderFacts,
                        transferEncoding: String?) -> TransportRefusal? {
        guard targetIsWhole, !target.holdsControl else {
            return .invalidRequest("the request target holds a control character")
        }
        guard target.path != nil else { return .invalidRequest("the path of the request target is not UTF-8") }
        // Each name and value was checked, and the framing fields counted, as the fields were copied (`HeaderFacts`).
        switch facts.offense {
        case .name?: return .invalidRequest("a header field name holds a character a name cannot have")
        case .controlInValue(let index)?:
            return .invalidRequest("the header field \(headers[index].name.prefix(60)) holds a control character")
        case nil: break
        }
        let hosts = facts.hosts, lengths = facts.lengths, encodings = facts.encodings
        if hosts > 1 { return .invalidRequest("the request has more than one Host field") }
        if lengths > 1 { return .invalidRequest("the request has more than one Content-Length field") }
        if encodings > 1 { return .invalidRequest("the request has more than one Transfer-Encoding field") }
        if encodings == 1 {
            if lengths == 1 { return .invalidRequest("the request has both Content-Length and Transfer-Encoding") }
            if isHTTP10 { return .invalidRequest("an HTTP/1.0 request cannot have Transfer-Encoding") }
            guard let transferEncoding, asciiCaseInsensitiveEquals(transferEncoding, "chunked") else {
                return .unsupportedTransferCoding
            }
        }
        return nil
    }
}

/// What the transport keeps of a request target, read once from libmicrohttpd's copy of the request line's target
/// before libmicrohttpd cuts the query off and decodes the path in place: its length, whether it holds a control
/// byte, and its path (up to the first `?`) when that is UTF-8. No copy of the bytes is kept.
struct RequestTarget {
    /// The bytes libmicrohttpd's copy had (a raw NUL ends it early).
    let count: Int
    let holdsControl: Bool
    let path: String?
    /// Whether the target has a `?`: without one libmicrohttpd has no query arguments to walk.
    let hasQuery: Bool

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        count = bytes.count
        let raw = UnsafeRawBufferPointer(bytes)
        holdsControl = firstASCIIControl(in: raw) != nil
        let end = firstIndex(in: raw, wordMayStop: { wordHasByte(UInt8(ascii: "?"), $0) }, where: { $0 == UInt8(ascii: "?") })
            ?? bytes.count
        hasQuery = end < bytes.count
        let path = UnsafeBufferPointer(rebasing: bytes[..<end])
        // Nearly every path is ASCII, which is UTF-8 as it is: no generic validation.
        let ascii = firstIndex(in: UnsafeRawBufferPointer(path), wordMayStop: wordHasNonASCIIByte, where: { $0 >= 0x80 }) == nil
        self.path = ascii ? String(decoding: path, as: UTF8.self) : String(validating: path, as: UTF8.self)
    }
}

/// What the transport learns of the header fields while it copies them, from their raw bytes (every byte of
/// every field passes here once, with no string made for it): the first field that must be refused, and the
/// fields that frame the body.
struct HeaderFacts {
    enum Offense: Equatable {
        /// A field name that is not a token.
        case name
        /// A value holding a control character other than a tab: the field's position.
        case controlInValue(Int)
    }

    /// The first field, in order, that the request is refused for.
    private(set) var offense: Offense?
    private(set) var hosts = 0, lengths = 0, encodings = 0
    /// The position of the first `Content-Length` field.
    private(set) var firstLength: Int?

    /// One field, at `index` among the fields; `value` without its trailing whitespace.
    mutating func note(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, at index: Int) {
        if offense == nil {
            if name.isEmpty || !name.allSatisfy(isTokenCharacter) {
                offense = .name
            } else if let control = firstASCIIControl(in: value),
                      value[control...].contains(where: { isASCIIControl($0) && $0 != 0x09 }) {  // a tab is allowed
                offense = .controlInValue(index)
            }
        }
        // Told apart by length first, as the gateway tells its own fields (`GatewayHeaders`): most names end there.
        switch name.count {
        case 4:
            if asciiCaseInsensitiveEquals(name, "Host") { hosts += 1 }
        case 14:
            if asciiCaseInsensitiveEquals(name, "Content-Length") {
                lengths += 1
                if firstLength == nil { firstLength = index }
            }
        case 17:
            if asciiCaseInsensitiveEquals(name, "Transfer-Encoding") { encodings += 1 }
        default:
            break
        }
    }
}

/// `tchar` of RFC 9110 §5.6.2: what a field name is made of.
private func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
         UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
         UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
         UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        // A switch, not a lookup in an array of the punctuation: this runs for every byte of every field name.
        true
    default:
        false
    }
}
