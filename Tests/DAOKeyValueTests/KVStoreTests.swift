import CSQLite
import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Synchronization
import Testing

/// A clock the test sets.
final class ManualClock: Sendable {
    private let seconds = Mutex(1_700_000_000.0)
    var now: Double {
        get { seconds.withLock { $0 } }
        set { seconds.withLock { $0 = newValue } }
    }
    var expiryClock: ExpiryClock { ExpiryClock { [self] in now } }
}

/// The bytes of a database file followed by its `-wal` file's, if any: what
/// an encrypted value must not show up in.
func databaseBytes(at path: String) -> [UInt8] {
    [path, path + "-wal"].flatMap { FileManager.default.contents(atPath: $0).map(Array.init) ?? [] }
}

/// An engine without modules on a temporary data folder, and its key-value store.
final class KVFixture: @unchecked Sendable {
    let folder: String
    let key: CipherKey
    let clock = ManualClock()
    private(set) var engine: Engine
    private(set) var store: KVStore
    var now: Double { clock.now }

    init(encryption: Bool = true) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-kv-\(UUID().uuidString)").path
        key = try CipherKey.generate()
        engine = try Engine(modules: [], configuration: .init(dataDirectory: folder, cipher: Cipher(key: key)))
        store = KVStore(engine: engine, cipher: encryption ? Cipher(key: key) : nil, clock: clock.expiryClock)
    }

    /// A new engine and store on the same folder, as after a restart.
    func restart(key: CipherKey? = nil) throws {
        engine.shutdown()
        let key = key ?? self.key
        engine = try Engine(modules: [], configuration: .init(dataDirectory: folder, cipher: Cipher(key: key)))
        store = KVStore(engine: engine, cipher: Cipher(key: key), clock: clock.expiryClock)
    }

    /// Every byte of a database file and its write-ahead log.
    func rawBytes(_ relativePath: String) -> [UInt8] { databaseBytes(at: folder + "/" + relativePath) }

    deinit {
        engine.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

private let common = DatabaseLocation.common(storage: nil)
private let ann = DatabaseLocation.user(try! UserID("ann"), storage: nil)

@Suite struct KVStoreTests {
    static let values: [(KVType, Value, Value)] = [
        (.integer, .integer(-42), .integer(-42)),
        (.integer, .integer(Int64.max), .integer(Int64.max)),
        (.longLong, .integer(Int64.min), .integer(Int64.min)),
        (.longLong, .string("9007199254740993"), .integer(9_007_199_254_740_993)),
        (.integer, .double(7.0), .integer(7)),
        (.bool, .bool(true), .bool(true)),
        (.bool, .bool(false), .bool(false)),
        (.double, .double(0.1), .double(0.1)),
        (.double, .integer(3), .double(3)),
        (.string, .string("héllo, 世界"), .string("héllo, 世界")),
        (.string, .string(""), .string("")),
        (.json, ["a": 1, "b": [true, nil, "x"], "c": ["d": 1.5]], ["a": 1, "b": [true, nil, "x"], "c": ["d": 1.5]]),
        (.json, [1, "two", [3]], [1, "two", [3]]),
        (.binary, .string("AAEC/w=="), .blob([0, 1, 2, 255])),
        (.binary, .blob([]), .blob([])),
    ]

    @Test(arguments: [false, true])
    func everyTypeRoundTripsAndSurvivesARestart(encrypted: Bool) throws {
        let fixture = try KVFixture()
        for (index, (type, given, kept)) in Self.values.enumerated() {
            let set = try fixture.store.set("biz", "k\(index)", value: given, type: type, encrypted: encrypted, purgeable: false, in: ann)
            #expect(set.value == kept && set.type == type)
            let read = try fixture.store.get("biz", "k\(index)", in: ann)
            #expect(read == KVEntry(type: type, value: kept, encrypted: encrypted, purgeable: false, updated: fixture.now), "\(type) \(given)")
        }
        try fixture.restart()
        for (index, (type, _, kept)) in Self.values.enumerated() {
            let read = try fixture.store.get("biz", "k\(index)", in: ann)
            #expect(read?.value == kept && read?.type == type && read?.encrypted == encrypted)
        }
    }

    @Test func aValueWithoutATypeKeepsItsOwn() throws {
        let fixture = try KVFixture()
        for (value, type) in [(Value.integer(1), KVType.integer), (.double(1.5), .double), (.bool(true), .bool),
                              (.string("s"), .string), (["a": 1], .json), ([1], .json)] {
            #expect(try fixture.store.set("biz", "k", value: value, type: nil, encrypted: false, purgeable: false, in: common).type == type)
            #expect(try fixture.store.get("biz", "k", in: common)?.type == type)
        }
        #expect(throws: KeyValueError(.invalidValue, "a value cannot be null: delete the key instead")) {
            try fixture.store.set("biz", "k", value: .null, type: nil, encrypted: false, purgeable: false, in: common)
        }
    }

    @Test(arguments: [
        (KVType.integer, Value.string("12a"), "type integer takes an integer (or its decimal digits), not a string"),
        (.integer, .double(1.5), "type integer takes an integer, not a number"),
        (.longLong, .bool(true), "type longLong takes an integer, not a boolean"),
        (.bool, .integer(1), "type bool takes a boolean, not an integer"),
        (.double, .string("1"), "type double takes a number, not a string"),
        (.string, .integer(1), "type string takes a string, not an integer"),
        (.json, .string("{}"), "type json takes an object or an array, not a string"),
        (.binary, .string("not base64!"), "type binary takes base64 text, not a string"),
    ])
    func aValueOfAnotherTypeIsRefusedAndChangesNothing(type: KVType, value: Value, message: String) throws {
        let fixture = try KVFixture()
        try fixture.store.set("biz", "k", value: "before", type: .string, encrypted: false, purgeable: false, in: common)
        #expect(throws: KeyValueError(.invalidValue, message)) {
            try fixture.store.set("biz", "k", value: value, type: type, encrypted: false, purgeable: false, in: common)
        }
        #expect(try fixture.store.get("biz", "k", in: common)?.value == "before")
    }

    @Test func hostileNamesAreRefusedBeforeAnyFileIsTouched() throws {
        let fixture = try KVFixture()
        for (business, key) in [("", "k"), ("a/b", "k"), ("b\u{0}", "k"), (String(repeating: "b", count: 129), "k"),
                                ("b", ""), ("b", "line\nbreak"), ("b", String(repeating: "k", count: 1025))] {
            #expect(throws: KeyValueError.self) { try fixture.store.get(business, key, in: ann) }
            #expect(throws: KeyValueError.self) {
                try fixture.store.set(business, key, value: 1, type: nil, encrypted: false, purgeable: false, in: ann)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.folder + "/users"))
        // Keys may hold slashes, quotes and any script.
        for key in ["a/b/c", "'; drop table daogate_kv; --", "ключ", "%2F"] {
            try fixture.store.set("biz", key, value: .string(key), type: nil, encrypted: false, purgeable: false, in: ann)
            #expect(try fixture.store.get("biz", key, in: ann)?.value == .string(key))
        }
    }

    @Test func commonAndEachUserAreApart() throws {
        let fixture = try KVFixture()
        let bob = DatabaseLocation.user(try UserID("bob"), storage: nil)
        let custom = DatabaseLocation.common(storage: "Contact")
        try fixture.store.set("biz", "k", value: "common", type: nil, encrypted: false, purgeable: false, in: common)
        try fixture.store.set("biz", "k", value: "ann", type: nil, encrypted: false, purgeable: false, in: ann)
        try fixture.store.set("biz", "k", value: "contact", type: nil, encrypted: false, purgeable: false, in: custom)
        #expect(try fixture.store.get("biz", "k", in: common)?.value == "common")
        #expect(try fixture.store.get("biz", "k", in: ann)?.value == "ann")
        #expect(try fixture.store.get("biz", "k", in: custom)?.value == "contact")
        #expect(try fixture.store.get("biz", "k", in: bob) == nil)
        #expect(try fixture.store.get("other", "k", in: common) == nil)
    }

    @Test func keysAreListedAndDeleted() throws {
        let fixture = try KVFixture()
        for key in ["b", "a2", "a1"] {
            try fixture.store.set("biz", key, value: 1, type: .longLong, encrypted: key == "b", purgeable: key == "a1", in: common)
        }
        try fixture.store.set("other", "z", value: 1, type: nil, encrypted: false, purgeable: false, in: common)
        #expect(try fixture.store.keys("biz", in: common).map(\.key) == ["a1", "a2", "b"])
        #expect(try fixture.store.keys("biz", prefix: "a", in: common)
            == [KVKey(key: "a1", type: .longLong, encrypted: false, purgeable: true, updated: fixture.now),
                KVKey(key: "a2", type: .longLong, encrypted: false, purgeable: false, updated: fixture.now)])
        #expect(try fixture.store.remove("biz", "a2", in: common))
        #expect(try !fixture.store.remove("biz", "a2", in: common))
        #expect(try fixture.store.removeBusiness("biz", in: common) == 2)
        #expect(try fixture.store.keys("biz", in: common).isEmpty)
        #expect(try fixture.store.get("other", "z", in: common)?.value == 1)
    }

    @Test func aPurgeRemovesOnlyPurgeableEntriesAndSaysWhatItFreed() throws {
        let fixture = try KVFixture()
        try fixture.store.set("biz", "keep", value: "kept", type: nil, encrypted: false, purgeable: false, in: ann)
        try fixture.store.set("biz", "go", value: "abcd", type: nil, encrypted: false, purgeable: true, in: ann)
        try fixture.store.set("b2", "gone", value: .blob([1, 2]), type: .binary, encrypted: false, purgeable: true, in: ann)
        let freed = try fixture.store.purge(in: ann)
        #expect(freed.entries == 2)
        #expect(freed.bytes == ("biz" + "go" + "abcd").utf8.count + ("b2" + "gone").utf8.count + 2)
        #expect(try fixture.store.get("biz", "keep", in: ann)?.value == "kept")
        #expect(try fixture.store.get("biz", "go", in: ann) == nil)
        #expect(try fixture.store.purge(in: ann) == (0, 0))
    }

    @Test func encryptedValuesAreNotInTheFileAndBelongToTheirKey() throws {
        let fixture = try KVFixture()
        let secret = "a-very-distinctive-secret-4242"
        try fixture.store.set("biz", "secret", value: .string(secret), type: nil, encrypted: true, purgeable: false, in: ann)
        try fixture.store.set("biz", "plain", value: .string("plain-distinctive-text-4242"), type: nil, encrypted: false, purgeable: false, in: ann)
        fixture.engine.shutdown()
        let bytes = fixture.rawBytes("users/p-ann.db")
        #expect(!bytes.isEmpty)
        #expect(bytes.firstRange(of: Array(secret.utf8)) == nil)
        #expect(bytes.firstRange(of: Array("plain-distinctive-text-4242".utf8)) != nil)

        // A ciphertext copied under another key does not decrypt there.
        var db: OpaquePointer?
        #expect(sqlite3_open(fixture.folder + "/users/p-ann.db", &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, """
            insert into daogate_kv select business, 'moved', type, value, encrypted, purgeable, updated
            from daogate_kv where key = 'secret'
            """, nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        try fixture.restart()
        #expect(try fixture.store.get("biz", "secret", in: ann)?.value == .string(secret))
        #expect { try fixture.store.get("biz", "moved", in: ann) } throws: { ($0 as? EngineError)?.code == .encryption }
        // Another key reads nothing.
        try fixture.restart(key: .generate())
        #expect { try fixture.store.get("biz", "secret", in: ann) } throws: { ($0 as? EngineError)?.code == .encryption }
        #expect(try fixture.store.get("biz", "plain", in: ann)?.value == "plain-distinctive-text-4242")
    }

    @Test func readsAndDeletionsCreateNoDatabase() throws {
        let fixture = try KVFixture()
        let zed = DatabaseLocation.user(try UserID("zed"), storage: nil)
        #expect(try fixture.store.get("biz", "k", in: zed) == nil)
        #expect(try fixture.store.keys("biz", in: zed).isEmpty)
        #expect(try fixture.store.remove("biz", "k", in: zed) == false)
        #expect(try fixture.store.removeBusiness("biz", in: zed) == 0)
        #expect(try fixture.store.purge(in: zed) == (0, 0))
        #expect(!fixture.engine.exists(zed))
        try fixture.store.set("biz", "k", value: 1, type: nil, encrypted: false, purgeable: false, in: zed)
        #expect(fixture.engine.exists(zed))
        #expect(try fixture.store.get("biz", "k", in: zed)?.value == 1)
    }

    @Test func anEncryptedValueTheCipherCannotCarryIsTheCallersError() throws {
        let fixture = try KVFixture()
        let value: Value = .object(["data": .blob([0, 1, 2])])
        #expect { try fixture.store.set("biz", "k", value: value, type: .json, encrypted: true, purgeable: false, in: ann) }
            throws: { ($0 as? KeyValueError)?.code == .invalidValue }
        #expect(try fixture.store.get("biz", "k", in: ann) == nil)
    }

    @Test func encryptionNeedsAKey() throws {
        let fixture = try KVFixture(encryption: false)
        #expect(throws: KeyValueError.self) {
            try fixture.store.set("biz", "k", value: "v", type: nil, encrypted: true, purgeable: false, in: common)
        }
        #expect(try fixture.store.get("biz", "k", in: common) == nil)
    }

    @Test func integerTypesReadAsEachOther() {
        #expect(KVType.integer.reads(as: .longLong) && KVType.longLong.reads(as: .integer))
        #expect(!KVType.integer.reads(as: .double) && !KVType.string.reads(as: .json))
    }
}
