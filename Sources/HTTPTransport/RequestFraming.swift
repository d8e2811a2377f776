import ASCIIBytes

/// What the transport checks of a request before a responder sees it or any of its body is read: the request
/// target, the header fields and the framing of the body (RFC 9112 §2.2, §5, §6.1, §6.3).
///
/// libmicrohttpd frames a body by the first `Content-Length` it finds, and by
/// any `Transfer-Encoding` as a body of unknown length that is chunked only
/// when the value is exactly `chunked`. A request whose framing another HTTP
/// implementation (a proxy in front) could read differently is refused, so
/// that the rest of a body can never run as a request of its own.
struct RequestFraming {
    /// What the request target held as the client sent it (path and query), as far as libmicrohttpd's copy goes.
    let target: RequestTarget
    /// Whether `target` is the whole target: false when a raw NUL ended libmicrohttpd's copy early.
    let targetIsWhole: Bool
    /// The protocol version of the request line (`HTTP/1.1`).
    let version: String
    /// The header fields, names as sent and values as libmicrohttpd keeps them.
    let headers: [(name: String, value: String)]
    /// The `Transfer-Encoding` value exactly as libmicrohttpd compares it (without trimming), if one was sent.
    let transferEncoding: String?

    init(target: RequestTarget, targetIsWhole: Bool, version: String, headers: [(name: String, value: String)],
         transferEncoding: String?) {
        self.target = target
        self.targetIsWhole = targetIsWhole
        self.version = version
        self.headers = headers
        self.transferEncoding = transferEncoding
    }

    /// The path of the target: up to the first `?`, when it is UTF-8.
    var path: String? { target.path }

    /// Why the request must be refused, or nil when it may go on.
    var refusal: TransportRefusal? {
        guard targetIsWhole, !target.holdsControl else {
            return .invalidRequest("the request target holds a control character")
        }
        guard path != nil else { return .invalidRequest("the path of the request target is not UTF-8") }
        // One pass over the fields: each name and value checked, the framing fields counted.
        var hosts = 0, lengths = 0, encodings = 0
        // By index: each field is read where it is, not copied out (a retain and release of its name and value).
        for index in headers.indices {
            guard isToken(headers[index].name) else {
                return .invalidRequest("a header field name holds a character a name cannot have")
            }
            guard !containsControlOtherThanTab(headers[index].value) else {
                return .invalidRequest("the header field \(headers[index].name.prefix(60)) holds a control character")
            }
            if asciiCaseInsensitiveEquals(headers[index].name, "Host") {
                hosts += 1
            } else if asciiCaseInsensitiveEquals(headers[index].name, "Content-Length") {
                lengths += 1
            } else if asciiCaseInsensitiveEquals(headers[index].name, "Transfer-Encoding") {
                encodings += 1
            }
        }
        if hosts > 1 { return .invalidRequest("the request has more than one Host field") }
        if lengths > 1 { return .invalidRequest("the request has more than one Content-Length field") }
        if encodings > 1 { return .invalidRequest("the request has more than one Transfer-Encoding field") }
        if encodings == 1 {
            if lengths == 1 { return .invalidRequest("the request has both Content-Length and Transfer-Encoding") }
            if version == "HTTP/1.0" { return .invalidRequest("an HTTP/1.0 request cannot have Transfer-Encoding") }
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

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        count = bytes.count
        var holdsControl = false
        for byte in bytes where isASCIIControl(byte) {
            holdsControl = true
            break
        }
        self.holdsControl = holdsControl
        let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        let path = UnsafeBufferPointer(rebasing: bytes[..<end])
        // Nearly every path is ASCII, which is UTF-8 as it is: one plain loop instead of the generic validation.
        var ascii = true
        for byte in path where byte >= 0x80 {
            ascii = false
            break
        }
        self.path = ascii ? String(decoding: path, as: UTF8.self) : String(validating: path, as: UTF8.self)
    }
}

/// Whether a field name is a non-empty token: a plain loop over a native string's bytes.
private func isToken(_ name: String) -> Bool {
    guard !name.isEmpty else { return false }
    let token = name.utf8.withContiguousStorageIfAvailable { bytes in
        for byte in bytes where !isTokenCharacter(byte) { return false }
        return true
    }
    return token ?? name.utf8.allSatisfy(isTokenCharacter)
}

/// Whether a header value holds a control character other than a tab: a plain loop over a native string's
/// bytes (every byte of every header of every request passes here; a bearer token is hundreds).
private func containsControlOtherThanTab(_ value: String) -> Bool {
    let found = value.utf8.withContiguousStorageIfAvailable { bytes in
        for byte in bytes where isASCIIControl(byte) && byte != 0x09 { return true }
        return false
    }
    return found ?? value.utf8.contains { isASCIIControl($0) && $0 != 0x09 }
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
