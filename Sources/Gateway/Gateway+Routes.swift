import DAOStorage
import HTTPTransport

/// The paths of the API, declared once, and how a request's path is read.
///
/// The transport hands over the path exactly as sent, still percent-encoded.
/// The router splits it on the raw `/` and decodes each segment by itself, so
/// an encoded `/` (`%2F`) stays inside its segment and an encoded NUL cannot
/// end the path early. A segment that is not percent-encoded UTF-8 free of
/// control characters is a 400 `invalid_path`; a path no template fits is a
/// 404; each parameter is then checked by its kind (`PathParameter.check`)
/// before any route runs. The tests send every byte in every parameter of
/// every template here, so a route added to the table is covered.
extension Gateway {
    /// Every path the API answers; `{key}` takes the rest of the path, `/` included.
    public static let routeTemplates: [RouteTemplate] = [
        "/dao/{module}/{method}",
        "/transaction",
        "/modules",
        "/modules/{module}",
        "/modules/{module}/last-insert-rowid",
        "/modules/{module}/table",
        "/modules/{module}/tables/delete",
        "/modules/{module}/vacuum",
        "/modules/{module}/globals",
        "/kv/{space}/{business}",
        "/kv/{space}/{business}/{key}",
        "/lru/{kind}/{space}",
        "/lru/{kind}/{space}/{cache}",
        "/lru/{kind}/{space}/{cache}/entries",
        "/lru/{kind}/{space}/{cache}/entries/{key}",
        "/lru/{kind}/{space}/{cache}/remove",
        "/lru/memory/{space}/{cache}/exists/{key}",
        "/lru/memory/{space}/{cache}/peek",
        "/storage/purge",
        "/storage/reset",
        "/storage/usage",
        "/storages",
        "/healthz",
        "/openapi.json",
        "/events",
        "/metrics",
        "/admin/reload",
    ]

    /// The decoded segments of a path, the leading `/` dropped; a path that does not start with `/` has none.
    static func pathSegments(_ path: String) throws(Problem) -> [String] {
        var path = path
        // Split on the byte, not on Characters: "/" followed by a combining
        // mark or an emoji modifier is one Character, and must still split.
        let segments = path.withUTF8 { bytes -> Result<[String], Problem> in
            guard bytes.first == UInt8(ascii: "/") else { return .success([]) }
            var segments: [String] = []
            var start = 1
            for index in 1...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                switch decodeSegment(UnsafeBufferPointer(rebasing: bytes[start..<index])) {
                case .success(let segment): segments.append(segment)
                case .failure(let problem): return .failure(problem)
                }
                start = index + 1
            }
            return .success(segments)
        }
        return try segments.get()
    }

    /// The templates by their first segment, a literal in each.
    private static let templatesByFirstSegment: [String: [RouteTemplate]] = Dictionary(
        grouping: routeTemplates, by: { template in
            guard case .literal(let first)? = template.segments.first else { preconditionFailure("\(template) starts with a parameter") }
            return first
        })

    /// The template the segments fit, its parameters checked; 404 when none fits.
    static func matchRoute(_ segments: [String], _ request: HTTPRequest) throws(Problem) -> RouteTemplate {
        for template in templatesByFirstSegment[segments.first ?? ""] ?? [] where template.fits(segments) {
            for (index, segment) in template.segments.enumerated() {
                guard case .parameter(let parameter) = segment else { continue }
                let rest = parameter == .key && index < segments.count - 1
                try parameter.check(rest ? segments[index...].joined(separator: "/") : segments[index])
            }
            return template
        }
        throw Problem(404, "not_found", "no route for \(request.method.prefix(20)) \(request.path.prefix(200)); see GET /openapi.json")
    }

    /// One segment, percent-decoded: UTF-8 without control characters, or a 400.
    private static func decodeSegment(_ raw: UnsafeBufferPointer<UInt8>) -> Result<String, Problem> {
        // The common case: printable ASCII with nothing to decode.
        if raw.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") }) {
            return .success(String(decoding: raw, as: UTF8.self))
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            guard raw[index] == UInt8(ascii: "%") else {
                decoded.append(raw[index])
                index += 1
                continue
            }
            guard index + 2 < raw.count, let high = hexValue(raw[index + 1]), let low = hexValue(raw[index + 2]) else {
                return .failure(Problem(400, "invalid_path", "a % in the path is not followed by two hexadecimal digits (write a % as %25)"))
            }
            decoded.append(high << 4 | low)
            index += 3
        }
        if let control = decoded.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            let hex = String(control, radix: 16, uppercase: true)
            return .failure(Problem(400, "invalid_path", "a path segment holds the control character %\(hex.count == 1 ? "0" : "")\(hex)"))
        }
        guard let text = String(validating: decoded, as: UTF8.self) else {
            return .failure(Problem(400, "invalid_path", "a path segment, decoded, is not UTF-8"))
        }
        return .success(text)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A path parameter: what kind of name its segment holds.
public enum PathParameter: String, CaseIterable, Sendable {
    case module, method, space, kind, business, cache, key

    /// Refuses a value the parameter does not take: a business, cache name or
    /// key that is not one is a 400 `invalid_name`. A module, method, space or
    /// kind that names nothing is the route's own 404.
    func check(_ value: String) throws(Problem) {
        do {
            switch self {
            case .business: try Names.checkBusiness(value)
            case .cache: try Names.checkCacheName(value)
            case .key: try Names.checkKey(value)
            case .module, .method, .space, .kind: break
            }
        } catch {
            throw Problem(error)
        }
    }
}

/// A route's path: literal segments and `{parameter}`s; a `{key}` is the last and takes the rest of the path.
public struct RouteTemplate: Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(PathParameter)
    }

    public let segments: [Segment]
    public let description: String

    public init(stringLiteral path: String) {
        description = path
        segments = path.split(separator: "/").map { part in
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return .literal(String(part)) }
            guard let parameter = PathParameter(rawValue: String(part.dropFirst().dropLast())) else {
                preconditionFailure("unknown path parameter \(part) in \(path)")
            }
            return .parameter(parameter)
        }
    }

    /// Whether the decoded segments fit the template: its literals where they stand, as many segments (or more,
    /// for a `{key}`, which takes the rest).
    func fits(_ parts: [String]) -> Bool {
        if segments.last == .parameter(.key) {
            guard parts.count >= segments.count else { return false }
        } else {
            guard parts.count == segments.count else { return false }
        }
        for (index, segment) in segments.enumerated() {
            if case .literal(let literal) = segment, parts[index] != literal { return false }
        }
        return true
    }
}
