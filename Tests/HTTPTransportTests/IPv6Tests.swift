#if canImport(Glibc)
import Glibc
#endif
import HTTPTransport
import Testing

/// Whether a TCP socket can be bound to `::1` here; containers without IPv6 cannot, and the test is then skipped.
private let ipv6LoopbackAvailable: Bool = {
    let socket = Glibc.socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { return false }
    defer { close(socket) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

@Suite("IPv6")
struct IPv6Tests {
    @Test(.enabled(if: ipv6LoopbackAvailable, "::1 cannot be bound on this machine"))
    func ipv6LoopbackServes() throws {
        let responder = RecordingResponder()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "::1", port: 0, threads: 1),
            responder: responder
        )
        try server.start()
        defer { server.shutdown() }
        #expect(server.port != 0)
        let client = try RawClient(host: "::1", port: server.port)
        try client.send("GET /six HTTP/1.1\r\nHost: [::1]\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(responder.requests.first?.path == "/six")
        #expect(throws: ClientError.self) { try RawClient(host: "127.0.0.1", port: server.port) }
    }
}
