#if canImport(Glibc)
import Glibc
#endif

/// The methods, header names and header values most requests carry, as string literals, found by their exact
/// bytes: a field sent as one of them gets the literal instead of a string made from its bytes (no UTF-8
/// validation, no allocation for one longer than 15 bytes, no reference count to move when it is copied), as
/// h2o looks its header names up in a table of tokens. Only identical bytes match: a name sent in another case
/// (`content-type`) is made from its bytes, so a request's fields are exactly as sent either way.
enum KnownStrings {
    /// The literal whose bytes `bytes` are, or nil: a switch on the length, then a comparison per literal of
    /// that length (each written twice, as the bytes compared and as the string returned).
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let start = bytes.baseAddress else { return nil }
        let count = bytes.count
        func equals(_ literal: StaticString) -> Bool {
            // A literal under the wrong length would be read past its end (`RoundTripTests` sends each one).
            assert(literal.utf8CodeUnitCount == count, "\(literal) is not \(count) bytes")
            return memcmp(start, literal.utf8Start, count) == 0
        }
        switch count {
        case 1: if equals("0") { return "0" }
        case 3:
            if equals("GET") { return "GET" }
            if equals("PUT") { return "PUT" }
            if equals("*/*") { return "*/*" }
        case 4:
            if equals("POST") { return "POST" }
            if equals("Host") { return "Host" }
            if equals("host") { return "host" }
            if equals("HEAD") { return "HEAD" }
        case 5: if equals("close") { return "close" }
        case 6:
            if equals("DELETE") { return "DELETE" }
            if equals("Accept") { return "Accept" }
            if equals("accept") { return "accept" }
        case 7: if equals("OPTIONS") { return "OPTIONS" }
        case 9:
            if equals("X-User-Id") { return "X-User-Id" }
            if equals("x-user-id") { return "x-user-id" }
            if equals("X-Storage") { return "X-Storage" }
            if equals("x-storage") { return "x-storage" }
        case 10:
            if equals("User-Agent") { return "User-Agent" }
            if equals("user-agent") { return "user-agent" }
            if equals("Connection") { return "Connection" }
            if equals("connection") { return "connection" }
            if equals("keep-alive") { return "keep-alive" }
        case 12:
            if equals("Content-Type") { return "Content-Type" }
            if equals("content-type") { return "content-type" }
            if equals("X-Table-Name") { return "X-Table-Name" }
            if equals("x-table-name") { return "x-table-name" }
        case 13:
            if equals("Authorization") { return "Authorization" }
            if equals("authorization") { return "authorization" }
        case 14:
            if equals("Content-Length") { return "Content-Length" }
            if equals("content-length") { return "content-length" }
            if equals("X-Int64-Format") { return "X-Int64-Format" }
            if equals("x-int64-format") { return "x-int64-format" }
        case 15:
            if equals("Accept-Encoding") { return "Accept-Encoding" }
            if equals("accept-encoding") { return "accept-encoding" }
        case 16: if equals("application/json") { return "application/json" }
        default: break
        }
        return nil
    }

    /// The string of `bytes` (UTF-8, an invalid sequence replaced): the literal when there is one.
    static func string(decoding bytes: UnsafeRawBufferPointer) -> String {
        string(bytes) ?? String(decoding: bytes, as: UTF8.self)
    }
}
