import SQLiteDatabase
import DAODialect
import Foundation

/// The two spaces of a storage: the reference's `commonPreferences` and
/// `userPreferences`.
public enum StorageSpace: String, Sendable, CaseIterable {
    case common
    case user
}

/// What a reset removed.
public struct ResetReport: Sendable, Equatable {
    /// Database files removed (a database's `-wal` and `-shm` files not counted).
    public var databases: Int
    /// Bytes on disk they held, with their `-wal` and `-shm` files.
    public var bytes: Int64

    public init(databases: Int = 0, bytes: Int64 = 0) {
        self.databases = databases
        self.bytes = bytes
    }
}

/// The storage layers' door into the engine's files: the key-value store and
/// the caches live in the same common and user databases as the DAO modules,
/// reached through the same registry (one writer per file, pooled readers).
extension Engine {
    /// The custom storage that is reset when the deployment's version changes
    /// (the reference's `currentVersionStorage`).
    public static let currentVersionStorage = "current-version"

    /// Runs `body` with `location`'s database open (opened on demand). SQLite
    /// errors `body` throws become `EngineError`s (busy stays busy).
    public func withOpenDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws -> T) throws -> T {
        try registry.withDatabase(location) { database in try Self.mappingSQLiteErrors { try body(database) } }
    }

    /// As `withOpenDatabase`, for reads and deletions: nil, creating no file,
    /// when `location` has no database (an open one counts without a look at the disk).
    public func withExistingDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws -> T) throws -> T? {
        try registry.withExistingDatabase(location) { database in try Self.mappingSQLiteErrors { try body(database) } }
    }

    /// As `withExistingDatabase`, for a walk over many files (the background
    /// sweep): a file this call opens is closed again afterwards, so the walk
    /// holds one file at a time and leaves the calls' open files in place.
    public func visitExistingDatabase<T>(_ location: DatabaseLocation, _ body: (OpenDatabase) throws -> T) throws -> T? {
        try registry.visitExistingDatabase(location) { database in try Self.mappingSQLiteErrors { try body(database) } }
    }

    /// `body`, its SQLite errors made `EngineError`s; others (the storage layers' own) pass through.
    private static func mappingSQLiteErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw EngineError(error, method: nil, line: nil, file: nil)
        }
    }

    /// The databases of a storage (the default one when nil) that exist on
    /// disk: its common database and every user's.
    public func existingLocations(storage: String?) -> [DatabaseLocation] {
        let files = FileManager.default
        var locations: [DatabaseLocation] = []
        let common = DatabaseLocation.common(storage: storage)
        if files.fileExists(atPath: registry.path(of: common)) { locations.append(common) }
        let users = DataFolder(root: configuration.dataDirectory).usersFolder(storage: storage)
        for name in ((try? files.contentsOfDirectory(atPath: users)) ?? []).sorted() where name.hasSuffix(".db") {
            if let user = UserID(fileName: String(name.dropLast(3))) { locations.append(.user(user, storage: storage)) }
        }
        return locations
    }

    /// Whether a location's database file exists (without opening it).
    public func exists(_ location: DatabaseLocation) -> Bool {
        FileManager.default.fileExists(atPath: registry.path(of: location))
    }

    /// Bytes a location's database takes on disk: its file and its journal, write-ahead or rollback (0 when it has neither).
    public func databaseBytes(_ location: DatabaseLocation) -> Int64 {
        let path = registry.path(of: location)
        var total: Int64 = 0
        for file in [path, path + "-wal", path + "-journal"] {
            var status = stat()
            if stat(file, &status) == 0 { total += Int64(status.st_size) }
        }
        return total
    }

    /// Every user database on disk, of the default storage and the custom ones, with its bytes (`databaseBytes`).
    public func userDatabaseUsage() -> [(location: DatabaseLocation, bytes: Int64)] {
        ([nil] + customStorages()).flatMap { storage in
            existingLocations(storage: storage).compactMap { location in
                guard case .user = location else { return nil }
                return (location, databaseBytes(location))
            }
        }
    }

    /// The custom storages that have files.
    public func customStorages() -> [String] {
        let folder = DataFolder(root: configuration.dataDirectory).storagesFolder
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { storageNameProblem($0) == nil }.sorted()
    }

    /// Resets a storage (the default one when nil): removes its databases, or
    /// only `user`'s. Calls to them wait for the reset, or fail `busy` while
    /// it runs; the next call starts from an empty file. Bound files
    /// (`database=`) belong to no storage and stay.
    public func resetStorage(_ storage: String?, user: UserID?) throws -> ResetReport {
        if let storage, let problem = storageNameProblem(storage) {
            throw EngineError(.invalidStorage, "storage '\(storage.prefix(80))': \(problem)")
        }
        let scope = ResetScope(storage: storage, user: user)
        return try registry.exclusively(scope, timeout: .seconds(5)) {
            var report = ResetReport()
            let files = FileManager.default
            func remove(_ path: String) throws {
                for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
                    guard let attributes = try? files.attributesOfItem(atPath: file) else { continue }
                    report.bytes += (attributes[.size] as? NSNumber)?.int64Value ?? 0
                    try files.removeItem(atPath: file)
                }
                report.databases += 1
            }
            do {
                if let user {
                    let path = registry.path(of: .user(user, storage: storage))
                    if files.fileExists(atPath: path) { try remove(path) }
                } else {
                    for location in existingLocations(storage: storage) { try remove(registry.path(of: location)) }
                    if let storage {
                        // The storage's folder goes with its files.
                        try? files.removeItem(atPath: DataFolder(root: configuration.dataDirectory).storagesFolder + "/" + storage)
                    }
                }
            } catch {
                throw EngineError(.storageFailed, "the reset could not remove a file: \(error.localizedDescription)")
            }
            return report
        }
    }

    /// Resets every storage of one user (the reference's `APDataReset`): the
    /// user's database in the default storage and in every custom storage,
    /// all or nothing.
    ///
    /// Calls to the user's databases are held off (`busy` after 5 s) while it
    /// runs. Every file (with its journal) is first renamed aside, in the
    /// folder it is in; if one rename fails, those done are renamed back and
    /// nothing is reset. Only when all are aside are they removed; a file
    /// left aside by a crash in between is a `*.reset` file the next reset
    /// of that folder's users does not read, and no call ever opens.
    public func resetUserEverywhere(_ user: UserID) throws -> ResetReport {
        let scope = ResetScope(storage: nil, user: user, everyStorage: true)
        return try registry.exclusively(scope, timeout: .seconds(5)) {
            let files = FileManager.default
            var report = ResetReport()
            var aside: [(from: String, to: String)] = []
            let tag = ".\(UInt64.random(in: 0...UInt64.max)).reset"
            do {
                for storage in [nil] + customStorages() {
                    let path = registry.path(of: .user(user, storage: storage))
                    guard files.fileExists(atPath: path) else { continue }
                    report.databases += 1
                    for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
                        guard let attributes = try? files.attributesOfItem(atPath: file) else { continue }
                        report.bytes += (attributes[.size] as? NSNumber)?.int64Value ?? 0
                        try files.moveItem(atPath: file, toPath: file + tag)
                        aside.append((file, file + tag))
                    }
                }
            } catch {
                for (from, to) in aside.reversed() { try? files.moveItem(atPath: to, toPath: from) }
                throw EngineError(.storageFailed, "the reset could not move a file aside, and reset nothing: \(error.localizedDescription)")
            }
            for (_, to) in aside { try? files.removeItem(atPath: to) }
            return report
        }
    }

    /// Resets the current-version storage when `version` differs from the
    /// one the data folder last ran with, and records `version`; returns
    /// whether it reset. Called once at start, before any call.
    @discardableResult
    public func prepareCurrentVersionStorage(version: String) throws -> Bool {
        let marker = configuration.dataDirectory + "/deployment-version"
        let previous = try? String(contentsOfFile: marker, encoding: .utf8)
        var reset = false
        if let previous, previous != version {
            _ = try resetStorage(Self.currentVersionStorage, user: nil)
            reset = true
        }
        if previous != version {
            do {
                try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
                try Data(version.utf8).write(to: URL(fileURLWithPath: marker), options: .atomic)
            } catch {
                throw EngineError(.storageFailed, "cannot record the deployment version in \(marker): \(error.localizedDescription)")
            }
        }
        return reset
    }
}
