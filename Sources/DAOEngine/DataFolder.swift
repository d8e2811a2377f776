import DAODialect

/// The data folder's layout, written and read back in one place: where each storage location's file is
/// (`DatabaseLocation`), and the folders of a shard's own state and of moved buckets' archives.
///
///     common.db                          the common space
///     users/<user file name>.db          a user's space
///     storages/<S>/common.db             a custom storage's common space
///     storages/<S>/users/<user>.db       a user's space in a custom storage
///     databases/<path>                   a file a module is bound to
///     shard/frozen-<bucket>              a shard's freeze of a bucket being moved
///     shard/incoming/                    files being imported or restored, checked before they are installed
///     archive/bucket-<N>/<relative path> the copies a shard keeps of a bucket it moved away
///
/// `shard/` and `archive/` are not the server's data: a backup leaves them out (`isData`).
public struct DataFolder: Sendable, Equatable {
    /// The folder itself.
    public let root: String

    /// The layout under `root` (a trailing `/` dropped, as the engine's registry does).
    public init(root: String) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    static let users = "users"
    static let storages = "storages"
    static let databases = "databases"
    static let common = "common.db"
    static let shard = "shard"
    static let archive = "archive"

    // MARK: Storage locations

    /// A location's file, relative to the data folder.
    public static func relativePath(of location: DatabaseLocation) -> String {
        switch location {
        case .common(nil): common
        case .user(let user, nil): "\(users)/\(user.fileName).db"
        case .common(let storage?): "\(storages)/\(storage)/\(common)"
        case .user(let user, let storage?): "\(storages)/\(storage)/\(users)/\(user.fileName).db"
        case .file(let path): "\(databases)/\(path)"
        }
    }

    /// The location of a relative path, nil when none has it there: the inverse of `relativePath(of:)` (a
    /// custom storage's name must be one, a user's file name one's form, a bound file's path free of `..`).
    public static func location(relativePath: String) -> DatabaseLocation? {
        let parts = relativePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else { return nil }
        func user(_ name: String) -> UserID? {
            guard name.hasSuffix(".db") else { return nil }
            return UserID(fileName: String(name.dropLast(3)))
        }
        switch parts.count {
        case 1 where parts[0] == common: return .common(storage: nil)
        case 2 where parts[0] == users: return user(parts[1]).map { .user($0, storage: nil) }
        case 3 where parts[0] == storages && parts[2] == common && storageNameProblem(parts[1]) == nil:
            return .common(storage: parts[1])
        case 4 where parts[0] == storages && parts[2] == users && storageNameProblem(parts[1]) == nil:
            return user(parts[3]).map { .user($0, storage: parts[1]) }
        default:
            guard parts.count > 1, parts[0] == databases else { return nil }
            return .file(parts.dropFirst().joined(separator: "/"))
        }
    }

    /// A location's file.
    public func path(of location: DatabaseLocation) -> String { root + "/" + Self.relativePath(of: location) }

    /// The folder of a storage's users' files (the default storage's when nil).
    public func usersFolder(storage: String?) -> String {
        storage.map { "\(root)/\(Self.storages)/\($0)/\(Self.users)" } ?? "\(root)/\(Self.users)"
    }

    /// The folder of the custom storages, one folder each.
    public var storagesFolder: String { "\(root)/\(Self.storages)" }

    // MARK: A shard's own state, and archives

    /// Whether a relative path holds the server's data, rather than a shard's state (`shard/`) or the archive of
    /// buckets moved away (`archive/`).
    public static func isData(relativePath: String) -> Bool {
        !relativePath.hasPrefix(shard + "/") && !relativePath.hasPrefix(archive + "/")
    }

    /// The folder of a shard's state: freeze markers, and `incoming`.
    public var shardState: String { "\(root)/\(Self.shard)" }

    /// The marker of a frozen bucket, kept until the bucket is archived or unfrozen.
    public func freezeMarker(bucket: Int) -> String { "\(shardState)/frozen-\(bucket)" }

    /// The bucket a file in `shardState` marks frozen, nil for any other file.
    public static func frozenBucket(marker name: String) -> Int? {
        name.hasPrefix("frozen-") ? Int(name.dropFirst(7)) : nil
    }

    /// Where files being imported (a bucket move) or restored are staged and checked before their rename into place.
    public var incoming: String { "\(shardState)/incoming" }

    /// Where a shard keeps its copy of a file of a bucket it moved away.
    public func archivedCopy(of location: DatabaseLocation, bucket: Int) -> String {
        "\(root)/\(Self.archive)/bucket-\(bucket)/\(Self.relativePath(of: location))"
    }
}
