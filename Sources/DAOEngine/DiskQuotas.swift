import DAODialect
import SQLiteDatabase
import Foundation
import Synchronization

/// What the operator lets users and the common space keep on disk:
///
/// - everything one user stores, their files of every storage together, at
///   most `userBytes` (`--max-database-size`): one `SharedSizeCap` per user,
///   whose members are the user's files by storage (`""` the default one), so
///   that `X-Storage` does not multiply the cap;
/// - the common space's files of every storage together at most
///   `commonBytes` (`--max-common-size`), one cap for them all;
/// - a user's files in at most `storagesPerUser` custom storages
///   (`--max-storages-per-user`); the default storage is not counted.
///
/// Bound files (a module's `database=`) are the operator's: uncapped. A cap
/// lives as long as a file of its group is open (the pools hold it); a group
/// with no file open has its members read on disk again at its next write.
final class DiskQuotas: Sendable {
    let root: String
    let userBytes: Int?
    let commonBytes: Int?
    let storagesPerUser: Int?

    enum Group: Hashable {
        case user(UserID)
        case common
    }

    private final class WeakCap: @unchecked Sendable {
        // @unchecked: written once, at init; a weak reference is read atomically.
        weak var cap: SharedSizeCap?
        init(_ cap: SharedSizeCap) { self.cap = cap }
    }

    private struct Caps {
        var live: [Group: WeakCap] = [:]
        /// When `live` is swept of caps no pool holds any more.
        var sweepAt = 1024
    }

    private let caps = Mutex(Caps())
    /// Held while a user's file in a custom storage is counted and created: two creations never both take
    /// the last place.
    private let admission = NSLock()

    init(root: String, userBytes: Int?, commonBytes: Int?, storagesPerUser: Int?) {
        self.root = root
        self.userBytes = userBytes
        self.commonBytes = commonBytes
        self.storagesPerUser = storagesPerUser
    }

    /// The cap a location's file shares, nil when none applies.
    func share(for location: DatabaseLocation) -> SizeShare? {
        let group: Group
        let bytes: Int
        switch location {
        case .user(let user, _):
            guard let userBytes else { return nil }
            (group, bytes) = (.user(user), userBytes)
        case .common:
            guard let commonBytes else { return nil }
            (group, bytes) = (.common, commonBytes)
        case .file:
            return nil
        }
        let root = root
        let cap = caps.withLock { caps -> SharedSizeCap in
            if let cap = caps.live[group]?.cap { return cap }
            let made = SharedSizeCap(bytes: bytes) { only in Self.onDisk(group, root: root, only: only) }
            caps.live[group] = WeakCap(made)
            if caps.live.count >= caps.sweepAt {
                caps.live = caps.live.filter { $0.value.cap != nil }
                caps.sweepAt = max(1024, 2 * caps.live.count)
            }
            return made
        }
        return SizeShare(cap: cap, member: location.storage ?? "")
    }

    /// The files of a group on disk, by storage (`""` the default one), with their bytes; `only` that storage's.
    private static func onDisk(_ group: Group, root: String, only: String?) -> [String: Int] {
        let storages = only.map { [$0] } ?? [""] + customStorages(root: root)
        var sizes: [String: Int] = [:]
        for storage in storages {
            let name = storage.isEmpty ? nil : storage
            let location: DatabaseLocation = switch group {
            case .user(let user): .user(user, storage: name)
            case .common: .common(storage: name)
            }
            var status = stat()
            if stat(root + "/" + location.relativePath, &status) == 0 { sizes[storage] = Int(status.st_size) }
        }
        return sizes
    }

    /// The custom storages with a folder under the data folder.
    static func customStorages(root: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root + "/storages")) ?? []
        return names.filter { storageNameProblem($0) == nil }
    }

    /// Runs `create`, which makes `location`'s file, unless that is a user's file in a custom storage and the
    /// user already has files in `storagesPerUser` other custom storages: then `too_many_storages`, and nothing
    /// is created.
    func admitting<T>(_ location: DatabaseLocation, _ create: () throws -> T) throws -> T {
        guard let storagesPerUser, case .user(let user, let storage?) = location else { return try create() }
        admission.lock()
        defer { admission.unlock() }
        if access(root + "/" + location.relativePath, F_OK) == 0 { return try create() }
        let others = Self.customStorages(root: root).filter { other in
            other != storage && access(root + "/" + DatabaseLocation.user(user, storage: other).relativePath, F_OK) == 0
        }
        guard others.count < storagesPerUser else {
            throw EngineError(.tooManyStorages, "this user has data in \(others.count) storages (X-Storage), as many as the server allows; storage '\(storage)' is not created. A storage of the user's reset (POST /storage/reset with X-Storage) makes room")
        }
        return try create()
    }

    /// Forgets what the files of a reset held (they were removed): each cap reads them on disk again.
    func forget(_ scope: ResetScope) {
        let member = scope.storage ?? ""
        let live = caps.withLock { caps in caps.live.compactMap { group, box in box.cap.map { (group, $0) } } }
        for (group, cap) in live {
            switch group {
            case .user(let user) where scope.user == nil || scope.user == user: cap.forget(member)
            case .common where scope.user == nil: cap.forget(member)
            default: break
            }
        }
    }
}
