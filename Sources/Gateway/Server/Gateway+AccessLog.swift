import DAOEngine
import HTTPTransport
import Synchronization

/// The access log's digest of each user (`UserID.description`, `user#` and 32 hex digits), remembered per id.
///
/// The digest is an HMAC-SHA256 under the deployment's key; OpenSSL 3's
/// one-shot `HMAC` fetches the algorithm and builds a context on every call,
/// which cost more than the rest of the access-log line. A caller's digest
/// never changes while the server runs, so each id's is computed once and
/// then costs a hash lookup. Bounded: when `capacity` ids are remembered the
/// table starts over (the next calls compute their digests again).
final class UserDigests: Sendable {
    let capacity: Int
    private let remembered: Mutex<[String: String]>

    init(capacity: Int = 16_384) {
        self.capacity = capacity
        remembered = Mutex([:])
    }

    /// What the access log shows of `user`: its digest, or `user#invalid` for text that is no user id.
    func digest(_ user: String) -> String {
        if let known = remembered.withLock({ $0[user] }) { return known }
        guard let id = try? UserID(user) else { return "user#invalid" }
        let digest = id.description
        remembered.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[user] = digest
        }
        return digest
    }

    /// How many ids are remembered.
    var count: Int { remembered.withLock { $0.count } }
}
