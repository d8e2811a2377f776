/// The space a route's requests touch, declared on the route (`Route(…, space:)`) as `public:` is: a shard
/// admits each request by it (`ShardAdmission`), and HAProxy's routing lists are derived from it
/// (`Gateway.shardRouting`), so the proxy and the shards cannot disagree about a route.
public enum RouteSpace: Sendable, Equatable {
    /// No stored data: health, the description, the module list, the event log, a reload, the metrics, the
    /// explorer's pages. Answered by any shard.
    case none
    /// This shard's own files, whoever's they are: the admin's reports and operations (`/storage/usage`,
    /// `/storages`, `/admin/rekey`, `/shard/…`). Answered by the shard it is sent to.
    case shard
    /// The caller's user space; the common space when the caller names no user (`/storage/purge`).
    case caller
    /// As `caller`, and the common space when the query says `space=common` (`/changes`): HAProxy routes
    /// that query to the common shard.
    case callerOrQuery
    /// The path's `{space}`: `common`, or the caller's user space. HAProxy sends the common form of the path
    /// to the common shard.
    case pathSpace
    /// The path's `{module}`'s: the common space for a common or file-bound module, else the caller's user
    /// space. HAProxy sends a common module's paths to the common shard.
    case module
    /// The first call's module's (`/transaction`), known once the body is read: HAProxy routes it by
    /// `X-Space: common`, and the shard checks the call (`RequestContext.admit`).
    case firstCall
}
