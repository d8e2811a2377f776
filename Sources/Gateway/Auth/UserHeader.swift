import DAOEngine

/// `X-User-Id` as HTTP carries it: percent-decoded (RFC 3986 `%XX`) into the id.
///
/// Some client runtimes percent-encode header values they are given:
/// swift-openapi-runtime encodes every byte outside `A–Z a–z 0–9 - . _ ~`
/// (apple/swift-openapi-generator#827, #857), so `ann@example.com` arrives as
/// `ann%40example.com`; curl, Python, Java, Go and JavaScript send it as
/// given. Both must name the same user, and neither may reach another's
/// storage, so the header is decoded once, always: each `%XX` is the byte
/// XX, and the decoded id is then held to `UserID`'s rule (1 to 128 visible
/// ASCII characters). A `%` that does not begin two hex digits, or an escape
/// decoding to a byte the rule refuses (`%20`, `%00`, non-ASCII), is a 400
/// `invalid_user`; an id with a `%` of its own is sent as `%25`.
extension Gateway {
    /// The longest header an id of `UserID.maximumLength` characters can take: every byte escaped.
    public static let maximumUserHeaderLength = 3 * UserID.maximumLength

    /// The header's grammar, for the OpenAPI description: 1 to 128 characters,
    /// each a visible ASCII byte other than `%`, or the escape of one (`%21` to `%7E`).
    public static let userHeaderPattern = "^(?:[!-$&-~]|%(?:2[1-9A-Fa-f]|[3-6][0-9A-Fa-f]|7[0-9A-Ea-e])){1,128}$"

    /// The user id an `X-User-Id` value names, decoded; refused as `UserID` refuses.
    static func decodedUserHeader(_ value: String) throws(Problem) -> String {
        guard value.utf8.contains(UInt8(ascii: "%")) else { return value }
        guard value.utf8.count <= maximumUserHeaderLength else {
            throw Problem(.invalidUser, "\(userHeader) is \(value.utf8.count) bytes long; at most \(maximumUserHeaderLength) are allowed, and \(UserID.maximumLength) once decoded")
        }
        var bytes: [UInt8] = []
        var iterator = value.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            // The path segments' own hex reader (Router.swift).
            guard let high = iterator.next().flatMap(Router.hexValue), let low = iterator.next().flatMap(Router.hexValue) else {
                throw Problem(.invalidUser, "\(userHeader) is percent-decoded: a % begins an escape of two hex digits (%25 for % itself)")
            }
            bytes.append(high << 4 | low)
        }
        // UserID refuses what is not visible ASCII, so bytes that are not UTF-8 need no message of their own.
        return String(decoding: bytes, as: UTF8.self)
    }
}
