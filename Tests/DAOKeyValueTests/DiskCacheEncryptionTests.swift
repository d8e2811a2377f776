import DAOEngine
import DAOKeyValue
import DAOValue
import Foundation
import Testing

/// Encrypted caches (`crypted:`), and values stored exactly in both kinds of cache.
@Suite struct DiskCacheEncryptionTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common

    private func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start] == needle[0] && haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    @Test func anEncryptedCachesValuesAreNotInTheFileWhileAPlainCachesAre() throws {
        let caches = try fixture.caches()
        try caches.create("open", in: here, capacity: 10, encrypted: false)
        try caches.create("sealed", in: here, capacity: 10, encrypted: true)
        try caches.set("open", in: here, key: "k", value: "plain-canary-91c4e7")
        try caches.set("sealed", in: here, key: "k", value: "secret-canary-5ab2f0")
        try caches.add("sealed", in: here, entries: [("n", ["deep": ["secret-canary-77d1e3"]])])
        // As written: in the WAL, or the file if it was checkpointed.
        var bytes = fixture.rawBytes(of: here)
        #expect(contains(bytes, "plain-canary-91c4e7"))
        #expect(!contains(bytes, "secret-canary-5ab2f0"))
        #expect(!contains(bytes, "secret-canary-77d1e3"))
        // After shutdown's checkpoint, in the database file itself.
        caches.engine.shutdown()
        bytes = fixture.rawBytes(of: here)
        #expect(contains(bytes, "plain-canary-91c4e7"))
        #expect(!contains(bytes, "secret-canary-5ab2f0"))
        #expect(!contains(bytes, "secret-canary-77d1e3"))
        // And they read back.
        let again = try fixture.caches()
        #expect(try again.get("sealed", in: here, key: "k") == "secret-canary-5ab2f0")
        #expect(try again.get("sealed", in: here, key: "n") == ["deep": ["secret-canary-77d1e3"]])
    }

    @Test func aCiphertextCopiedToAnotherKeyOrCacheDoesNotDecrypt() throws {
        let caches = try fixture.caches()
        try caches.create("x", in: here, capacity: 10, encrypted: true)
        try caches.create("y", in: here, capacity: 10, encrypted: true)
        try caches.set("x", in: here, key: "a", value: "for a only")
        try caches.set("x", in: here, key: "b", value: "b's own")
        try caches.set("y", in: here, key: "a", value: "y's own")
        try caches.execute("UPDATE daogate_lru_x SET value = (SELECT value FROM daogate_lru_x WHERE key = 'a') WHERE key = 'b'", in: here)
        try caches.execute("UPDATE daogate_lru_y SET value = (SELECT value FROM daogate_lru_x WHERE key = 'a') WHERE key = 'a'", in: here)
        #expect(diskCacheEngineError { _ = try caches.get("x", in: here, key: "b") } == .encryption)
        #expect(diskCacheEngineError { _ = try caches.get("y", in: here, key: "a") } == .encryption)
        #expect(try caches.get("x", in: here, key: "a") == "for a only")
    }

    @Test func alteredOrForeignBytesDoNotDecryptAndNeverCrash() throws {
        let caches = try fixture.caches()
        try caches.create("x", in: here, capacity: 10, encrypted: true)
        try caches.set("x", in: here, key: "flipped", value: "value")
        try caches.set("x", in: here, key: "plain", value: "value")
        try caches.set("x", in: here, key: "short", value: "value")
        // A flipped bit in the middle of the ciphertext, plain JSON text, a truncated blob.
        guard case .blob(var bytes) = try caches.rows("SELECT value FROM daogate_lru_x WHERE key = 'flipped'", in: here)[0][0]
        else { Issue.record("the ciphertext is not a blob"); return }
        bytes[20] ^= 0x01
        try caches.execute("UPDATE daogate_lru_x SET value = ? WHERE key = 'flipped'", in: here, [.blob(bytes)])
        try caches.execute("UPDATE daogate_lru_x SET value = '\"value\"' WHERE key = 'plain'", in: here)
        try caches.execute("UPDATE daogate_lru_x SET value = substr(value, 1, 10) WHERE key = 'short'", in: here)
        for key in ["flipped", "plain", "short"] {
            #expect(diskCacheEngineError { _ = try caches.get("x", in: here, key: key) } == .encryption, "\(key)")
        }
    }

    @Test func aPlainValueThatIsNotJSONIsAStorageFailure() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        try caches.set("c", in: here, key: "k", value: "v")
        try caches.execute("UPDATE daogate_lru_c SET value = '{not json' WHERE key = 'k'", in: here)
        #expect(diskCacheEngineError { _ = try caches.get("c", in: here, key: "k") } == .storageFailed)
    }

    @Test func anotherKeyCannotReadEncryptedValuesButPlainOnesStayReadable() throws {
        let first = try fixture.caches()
        try first.create("sealed", in: here, capacity: 10, encrypted: true)
        try first.create("open", in: here, capacity: 10, encrypted: false)
        try first.set("sealed", in: here, key: "k", value: "secret")
        try first.set("open", in: here, key: "k", value: "public")
        first.engine.shutdown()

        let other = try fixture.caches(cipher: Cipher(key: try CipherKey.generate()))
        #expect(diskCacheEngineError { _ = try other.get("sealed", in: here, key: "k") } == .encryption)
        #expect(try other.get("open", in: here, key: "k") == "public")
        // A failed read changed nothing: the entry is still there for the right key.
        other.engine.shutdown()
        #expect(try fixture.caches().get("sealed", in: here, key: "k") == "secret")
    }

    @Test func withoutAKeyEncryptedCachesCannotBeCreatedOrReadButCanBeEmptied() throws {
        let keyed = try fixture.caches()
        try keyed.create("sealed", in: here, capacity: 10, encrypted: true)
        try keyed.set("sealed", in: here, key: "a", value: 1)
        try keyed.set("sealed", in: here, key: "b", value: 2)
        keyed.engine.shutdown()

        let keyless = try fixture.caches(keyless: true)
        #expect(diskCacheError { try keyless.create("new", in: here, capacity: 10, encrypted: true) } == .encryptionUnavailable)
        #expect(diskCacheError { try keyless.create("sealed", in: here, capacity: 10, encrypted: true) } == .encryptionUnavailable)
        #expect(diskCacheError { try keyless.set("sealed", in: here, key: "a", value: 3) } == .encryptionUnavailable)
        #expect(diskCacheError { try keyless.add("sealed", in: here, entries: [("c", 3)]) } == .encryptionUnavailable)
        #expect(diskCacheError { _ = try keyless.get("sealed", in: here, key: "a") } == .encryptionUnavailable)
        #expect(try keyless.list(in: here).map(\.name) == ["sealed"])
        #expect(try keyless.remove("sealed", in: here, key: "a"))
        #expect(try keyless.removeAll("sealed", in: here) == 1)
        #expect(try keyless.delete("sealed", in: here))
        #expect(try keyless.create("open", in: here, capacity: 10, encrypted: false).created)
    }

    static let values: [Value] = [
        "", "text", "用户 ✓ \u{1F600}", "quote \" backslash \\ newline \n", .integer(.max), .integer(.min), 0, -0.0, 2.5,
        1e300, .double(.leastNonzeroMagnitude), true, false, .blob([]), .blob([0, 1, 2, 255]), [], [:], [1, "two", nil, [3.5], ["k": false]],
        ["z": 1, "a": 2, "m": ["nested": nil]],
    ]

    @Test(arguments: [false, true])
    func valuesOfEveryKindComeBackExactly(encrypted: Bool) throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 100, encrypted: encrypted)
        for (index, value) in Self.values.enumerated() {
            try caches.set("c", in: here, key: "k\(index)", value: value)
        }
        for (index, value) in Self.values.enumerated() {
            let found = try caches.get("c", in: here, key: "k\(index)")
            #expect(found == value, "\(value)")
            // Object members keep their order.
            if case .object(let expected) = value, case .object(let members)? = found {
                #expect(Array(members.keys) == Array(expected.keys))
            }
        }
    }

    @Test func plainCachesStoreJSONTextWithBinaryDataAsMarkers() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        let value: Value = ["data": .blob([1, 2, 3]), "list": [.blob([255])]]
        try caches.set("c", in: here, key: "k", value: value)
        let stored = try caches.rows("SELECT value, typeof(value) FROM daogate_lru_c", in: here)
        #expect(stored == [[#"{"data":{"$base64":"AQID"},"list":[{"$base64":"/w=="}]}"#, "text"]])
        #expect(try caches.get("c", in: here, key: "k") == value)
    }

    static let notJSON: [Value] = [
        .double(.nan), .double(.infinity), [1, .double(-.infinity)], ["$base64": "AQID"], ["$base64": 5],
        Self.nested(300), ["deep": Self.nested(255).replacingInnermost(with: .blob([1]))],
    ]

    @Test(arguments: notJSON)
    func valuesJSONCannotCarryAreRefusedByPlainCaches(value: Value) throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        #expect(diskCacheError { try caches.set("c", in: here, key: "k", value: value) } == .invalidValue)
        #expect(try caches.info("c", in: here).count == 0)
    }

    @Test func encryptedCachesFollowTheCiphersRules() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: true)
        // The cipher keeps a top-level double's bits and a lone "$base64" member…
        try caches.set("c", in: here, key: "nan", value: .double(.infinity))
        try caches.set("c", in: here, key: "marker", value: ["$base64": "AQID"])
        #expect(try caches.get("c", in: here, key: "nan") == .double(.infinity))
        #expect(try caches.get("c", in: here, key: "marker") == ["$base64": "AQID"])
        // …and refuses binary data inside an array or object.
        #expect(diskCacheError { try caches.set("c", in: here, key: "k", value: [.blob([1])]) } == .invalidValue)
    }

    @Test func theNestingTheParserReadsIsAccepted() throws {
        let caches = try fixture.caches()
        try caches.create("c", in: here, capacity: 10, encrypted: false)
        let deepest = Self.nested(256)
        try caches.set("c", in: here, key: "k", value: deepest)
        #expect(try caches.get("c", in: here, key: "k") == deepest)
    }

    /// Arrays nested `depth` deep around an integer.
    static func nested(_ depth: Int) -> Value {
        (0..<depth).reduce(Value.integer(1)) { inner, _ in .array([inner]) }
    }
}

extension Value {
    /// The same arrays with the innermost value replaced.
    fileprivate func replacingInnermost(with value: Value) -> Value {
        if case .array(let elements) = self, elements.count == 1 { return .array([elements[0].replacingInnermost(with: value)]) }
        return value
    }
}
