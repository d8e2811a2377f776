import HTTPTransport

extension Gateway {
    /// The request headers daogate reads, which a browser page may send (`Access-Control-Allow-Headers`):
    /// the caller, the storage, the table, the integer format, the token, the body's type, a change stream's
    /// resumption, and `X-Space`, which the HAProxy configuration of a sharded deployment routes by.
    public static let requestHeaders = [userHeader, storageHeader, tableHeader, int64Header, "Authorization", "Content-Type",
                                        "Last-Event-ID", "X-Space"]

    /// The methods the route table serves, each once, in the usual order.
    public static let servedMethods: [String] = {
        let served = Set(routes.flatMap(\.methods))
        let usual = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
        return usual.filter(served.contains) + served.subtracting(usual).sorted()
    }()

    /// The CORS policy of `serve --cors-origin`: those origins, the methods the routes take, the headers daogate
    /// reads (the layer itself is `CORSResponder`, wrapped around the gateway).
    public static func corsPolicy(origins: Set<String>) -> CORSPolicy {
        CORSPolicy(origins: origins, methods: servedMethods, headers: requestHeaders)
    }
}
