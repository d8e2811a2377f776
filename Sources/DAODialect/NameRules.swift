import ASCIIBytes

// The rules for the names modules and callers give: one place that the loader, the engine, the gateway and
// the CLI all read. Each `…Problem` function says why a name is refused, or returns nil. Module names,
// method ids, argument names and cache names are identifiers (`isIdentifier`, from ASCIIBytes).

/// Words an argument or item cannot be named, because expressions read them.
let reservedNames: Set<String> = ["nil", "and", "or", "not", "xor", "true", "false"]

/// The table names no module and no caller may take, declared once with what owns them: `tableNameProblem`
/// refuses them; the engine forms its own tables' names from `daogatePrefix` (a module's table when it names
/// none, `check`'s scratch tables), and the storage layers' tests check that the key-value store's and the
/// caches' tables are refused.
public enum ReservedTableNames {
    /// SQLite's own tables (`sqlite_schema`, `sqlite_sequence`, …).
    public static let sqlitePrefix = "sqlite_"
    /// The engine's record of each table's version and module.
    public static let tableVersions = "TableVersions"
    /// daogate's own tables: the key-value store's (`daogate_kv`), the disk caches' (`daogate_lru_…`),
    /// a module's table when it names none (`daogate_module_…`), `check`'s scratch tables.
    public static let daogatePrefix = "daogate_"
    /// Litestream's tables, when it replicates the data folder.
    public static let litestreamPrefix = "_litestream_"
}

/// Why `name` cannot be a table name, or nil when it can.
public func tableNameProblem(_ name: String) -> String? {
    if name.utf8.count > 128 { return "a table name is at most 128 characters" }
    if !isIdentifier(name) { return "a table name must be an identifier (letters, digits, '_'; not starting with a digit)" }
    let lowercased = name.lowercased()
    if lowercased.hasPrefix(ReservedTableNames.sqlitePrefix) { return "names starting with sqlite_ are reserved by SQLite" }
    if lowercased == ReservedTableNames.tableVersions.lowercased() { return "TableVersions is where daogate keeps table versions" }
    if lowercased.hasPrefix(ReservedTableNames.daogatePrefix) { return "names starting with daogate_ are the key-value store's and the caches'" }
    if lowercased.hasPrefix(ReservedTableNames.litestreamPrefix) { return "names starting with _litestream_ are Litestream's (the replication of the data folder)" }
    if isSQLKeyword(name) { return "'\(name)' is an SQL keyword" }
    return nil
}

/// Why `name` cannot name a custom storage (`storage="…"`, `X-Storage`), or nil when it can.
public func storageNameProblem(_ name: String) -> String? {
    if name.isEmpty || name.utf8.count > 64 { return "a storage name is 1 to 64 characters" }
    guard name.utf8.allSatisfy({ isIdentifierByte($0) || $0 == UInt8(ascii: "-") }),
        let first = name.utf8.first, first != UInt8(ascii: "-")
    else { return "a storage name uses only letters, digits, '_' and '-', and does not start with '-'" }
    return nil
}

/// Why `path` cannot be a module's database file (`database="…"`), or nil when it can.
func databasePathProblem(_ path: String) -> String? {
    if path.hasPrefix("/") { return "must be relative to the data folder" }
    let parts = path.split(separator: "/", omittingEmptySubsequences: false)
    for part in parts {
        if part.isEmpty || part == "." || part == ".." { return "must not contain empty, '.' or '..' parts" }
        if !part.utf8.allSatisfy({ isASCIILetter($0) || isASCIIDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) {
            return "use only letters, digits, '_', '-', '.' and '/'"
        }
    }
    return nil
}

/// The longest key id of the keyring.
public let maximumKeyIDLength = 64

/// Whether `id` can name a key of the keyring (`ID.key` in the key folder, `key="…"` on a module):
/// 1 to 64 ASCII letters, digits, `.`, `_` or `-`, not starting with `.` or `-`.
public func isKeyID(_ id: String) -> Bool {
    let bytes = id.utf8
    guard let first = bytes.first, bytes.count <= maximumKeyIDLength,
          first != UInt8(ascii: "."), first != UInt8(ascii: "-") else { return false }
    return bytes.allSatisfy { byte in
        isASCIILetter(byte) || isASCIIDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}

/// Why `id` cannot name a key of the keyring, or nil.
func keyIDProblem(_ id: String) -> String? {
    isKeyID(id) ? nil : "a key id is 1 to \(maximumKeyIDLength) letters, digits, '.', '_' or '-', not starting with '.' or '-'"
}
