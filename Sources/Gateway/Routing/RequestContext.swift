import ASCIIBytes
import DAOEngine
import HTTPTransport
import Sharding

/// What the gateway learns about a request while answering it, carried explicitly with it (Hummingbird's
/// request context, which an authenticator fills with the identity): made when the request arrives, handed
/// to every step in its `RouteCall`, gone with the response.
final class RequestContext: @unchecked Sendable {
    /// The caller, once derived (`Gateway.caller`): every later step of the request reads it here.
    var caller: Caller?
    /// Whether `caller` is derived, asked without reading the optional caller out (a copy of each of its strings).
    var hasCaller: Bool { if case .some = caller { true } else { false } }
    /// On a shard, what its admission admitted (`ShardAdmission`); nil elsewhere.
    var shardTicket: ShardTicket?
    /// The header fields most requests have the gateway read, found in one walk when first asked
    /// (`Gateway.header(_:_:)` with a `GatewayHeader`).
    var headers: GatewayHeaders?

    init() {}

    /// The caller's user and storage, for the engine; the caller derived (`Gateway.deriveCaller`).
    var callContext: CallContext {
        // The user bound, not `caller?.user?.rawValue`: an optional `UserID` is copied through its type's
        // metadata, a `UserID` as the string it holds.
        guard let user = caller?.user else { return CallContext(user: nil, storage: caller?.storage) }
        return CallContext(user: user.rawValue, storage: caller?.storage)
    }
}

/// What a shard admitted for one request: whether it has been checked, and the bucket of an admitted request,
/// released when the request is answered.
final class ShardTicket: @unchecked Sendable {
    let shard: Shard
    var checked = false
    /// The bucket of an admitted request, counted in flight until it is answered, and whether it writes.
    var bucket: Int?
    var writes = false

    init(shard: Shard) {
        self.shard = shard
    }
}

/// A header field the gateway reads on most requests.
enum GatewayHeader: CaseIterable {
    case user, storage, table, int64Format, contentType

    var name: String {
        switch self {
        case .user: Gateway.userHeader
        case .storage: Gateway.storageHeader
        case .table: Gateway.tableHeader
        case .int64Format: Gateway.int64Header
        case .contentType: "Content-Type"
        }
    }
}

/// Where every `GatewayHeader` a request sent is among its fields, found in one walk over them (names compared
/// without regard to ASCII case) instead of one walk per field read. Positions, not values: nothing to retain.
struct GatewayHeaders {
    /// A field's position: `none` when it was not sent, `more` when it was sent more than once.
    static let none = -1, more = -2

    private var user = none, storage = none, table = none, int64Format = none, contentType = none

    /// Borrowed, as a function's argument is: an initializer's would be the caller's to copy (a retain and release of
    /// each of the request's parts).
    init(_ request: borrowing HTTPRequest) {
        for index in request.headers.indices {
            let name = request.headers[index].name
            // Told apart by length first: most fields (Host, Content-Length, Accept…) end there. The names are
            // `GatewayHeader.name`'s, written out so that each is compared with a literal (`GatewayHeaderTests`).
            switch name.utf8.count {
            case 9:
                if asciiCaseInsensitiveEquals(name, "X-User-Id") { Self.note(index, &user) }
                else if asciiCaseInsensitiveEquals(name, "X-Storage") { Self.note(index, &storage) }
            case 12:
                if asciiCaseInsensitiveEquals(name, "Content-Type") { Self.note(index, &contentType) }
                else if asciiCaseInsensitiveEquals(name, "X-Table-Name") { Self.note(index, &table) }
            case 14:
                if asciiCaseInsensitiveEquals(name, "X-Int64-Format") { Self.note(index, &int64Format) }
            default:
                break
            }
        }
    }

    private static func note(_ index: Int, _ position: inout Int) {
        position = position == none ? index : more
    }

    /// The position of the header's field, `none` or `more`.
    subscript(header: GatewayHeader) -> Int {
        switch header {
        case .user: user
        case .storage: storage
        case .table: table
        case .int64Format: int64Format
        case .contentType: contentType
        }
    }
}
