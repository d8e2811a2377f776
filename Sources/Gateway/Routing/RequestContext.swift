import Sharding

/// What the gateway learns about a request while answering it, carried explicitly with it (Hummingbird's
/// request context, which an authenticator fills with the identity): made when the request arrives, handed
/// to every step in its `RouteCall`, gone with the response.
final class RequestContext: @unchecked Sendable {
    /// The caller, once derived (`Gateway.caller`): every later step of the request reads it here.
    var caller: Caller?
    /// On a shard, what its admission admitted (`ShardAdmission`); nil elsewhere.
    var shardTicket: ShardTicket?

    init() {}
}

/// What a shard admitted for one request: whether it has been checked, and the bucket of an admitted write,
/// released when the request is answered.
final class ShardTicket: @unchecked Sendable {
    let shard: Shard
    var checked = false
    var writeBucket: Int?

    init(shard: Shard) {
        self.shard = shard
    }
}
