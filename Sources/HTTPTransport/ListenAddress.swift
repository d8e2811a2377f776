#if canImport(Glibc)
import Glibc
#endif

/// The socket address a server binds, resolved from the configured host and port.
struct ListenAddress {
    /// The address, an IPv4 or IPv6 one.
    var storage: sockaddr_storage
    /// Whether `storage` holds an IPv6 address.
    var isIPv6: Bool
    /// Whether it is IPv6's any-address, which also takes IPv4 (dual stack).
    var isIPv6Any: Bool

    /// Resolves `host` (a literal or a name) with getaddrinfo, keeping the first stream address found.
    static func resolve(host: String, port: UInt16) -> Result<ListenAddress, HTTPServerError> {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            return .failure(HTTPServerError(message: "cannot resolve host '\(host)': \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            let info = current.pointee
            if let address = info.ai_addr, info.ai_family == AF_INET || info.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(info.ai_addrlen)))
                }
                let isIPv6 = info.ai_family == AF_INET6
                let isIPv6Any = isIPv6 && withUnsafeBytes(of: &storage) { bytes in
                    withUnsafeBytes(of: bytes.load(as: sockaddr_in6.self).sin6_addr) { $0.allSatisfy { $0 == 0 } }
                }
                return .success(ListenAddress(storage: storage, isIPv6: isIPv6, isIPv6Any: isIPv6Any))
            }
            entry = info.ai_next
        }
        return .failure(HTTPServerError(message: "cannot resolve host '\(host)': no IPv4 or IPv6 address"))
    }

    /// `host:port` as people write it, with an IPv6 literal in brackets.
    static func display(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
