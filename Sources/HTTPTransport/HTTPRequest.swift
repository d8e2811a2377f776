import ASCIIBytes

/// One HTTP request as the transport hands it to a responder: method, path, query, headers and the whole body.
public struct HTTPRequest: Sendable {
    /// The method token as sent: "GET", "POST", …
    public var method: String
    /// The path of the request target exactly as sent, still percent-encoded,
    /// without the query: the router splits it on `/` and decodes each segment
    /// itself, so `%2F` stays inside its segment and `%00` cannot end the path.
    /// The transport refuses a target holding a raw control byte or bytes that
    /// are not UTF-8; any other byte is here as sent.
    public var path: String
    /// The query arguments in the order sent, percent-decoded; an argument without `=` has the value "".
    public var query: [(name: String, value: String)]
    /// The header fields in the order received, each value without the whitespace around it.
    public var headers: [(name: String, value: String)]
    /// The request body, complete.
    public var body: [UInt8]

    public init(
        method: String,
        path: String,
        query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The value of the header field named `name` (compared without regard to
    /// ASCII case), nil when it was not sent; a field sent more than once is an
    /// error, as every header the server reads takes one value: which one
    /// counts would be ambiguous, and a proxy in front could pick the other.
    public func header(_ name: String) throws(DuplicateHeader) -> String? {
        // By index: each field's name is read where it is, not copied out with its value (a retain and release
        // of each per field, on several lookups per request).
        var found: Int?
        for index in headers.indices where asciiCaseInsensitiveEquals(headers[index].name, name) {
            guard found == nil else { throw DuplicateHeader(name: name) }
            found = index
        }
        return found.map { headers[$0].value }
    }

    /// The value of the first header field named `name`, nil when none was sent; allocates nothing.
    public func firstValue(of name: String) -> String? {
        for index in headers.indices where asciiCaseInsensitiveEquals(headers[index].name, name) { return headers[index].value }
        return nil
    }

    /// Every value of the header fields named `name`, in the order sent.
    public func values(of name: String) -> [String] {
        headers.filter { asciiCaseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    /// The value of the first query argument named `name` (compared exactly).
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// A single-valued header field sent more than once.
public struct DuplicateHeader: Error, Sendable, Equatable {
    /// The field's name as the server reads it.
    public var name: String

    public init(name: String) {
        self.name = name
    }
}
