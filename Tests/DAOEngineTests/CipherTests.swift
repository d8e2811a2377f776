#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DAOEngine
import DAOValue
import Foundation
import Testing

/// The bytes that `hex` spells, two digits each.
private func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count, by: 2).map {
        UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
    }
}

/// Whether `needle` occurs as a contiguous run in `haystack`.
private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
    return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
}

/// The key `00 01 02 … 1f`, which the known-answer vectors use.
private let countingKeyBytes = (0..<32).map(UInt8.init)
private let countingKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/// The header of a value written with the key `default`: magic, version 2, the id's length and the id.
private let defaultHeader: [UInt8] = [0x44, 0x47, 0x02, 7] + Array("default".utf8)
/// The shortest such value: header, nonce, a kind byte, tag.
private let defaultMinimumSize = defaultHeader.count + 12 + 1 + 16

@Suite struct CipherTests {
    let cipher = Cipher(key: try! CipherKey.generate())

    // MARK: Round trips

    @Test(arguments: [
        Value.string(""), "plain text", "héllo, 世界 🙂 \u{0} \n\"quoted\"",
        .integer(.min), .integer(.max), 0, -1, 42,
        .double(0.0), .double(-0.0), 1.5, -2.25e-300, .double(.greatestFiniteMagnitude),
        .double(.leastNonzeroMagnitude), .double(.infinity), .double(-.infinity),
        true, false,
        .blob([]), .blob([0]), .blob((0...255).map(UInt8.init)),
        .array([]), .object([:]),
        [1, "two", 3.0, -0.0, nil, true, ["deep": [[]]]],
        ["z": 1, "a": ["y": [.integer(.max), "x", nil], "b": -0.5], "m": [:], "": "empty key"],
    ])
    func decryptReturnsTheEncryptedValueWithItsKind(value: Value) throws {
        let decrypted = try cipher.decrypt(try cipher.encrypt(value, context: "content"), context: "content")
        #expect(decrypted == value)
        #expect(decrypted.kindName == value.kindName)
        if case .double(let original) = value, case .double(let back) = decrypted {
            #expect(back.bitPattern == original.bitPattern)
        }
    }

    @Test func aNaNDoubleRoundTripsBitForBit() throws {
        let nan = Double(nan: 0x123, signaling: false)
        let decrypted = try cipher.decrypt(try cipher.encrypt(.double(nan), context: "c"), context: "c")
        guard case .double(let back) = decrypted else {
            Issue.record("decrypted to \(decrypted.kindPhrase)")
            return
        }
        #expect(back.bitPattern == nan.bitPattern)
    }

    @Test func nestedObjectsKeepTheirMemberOrder() throws {
        let value: Value = ["zebra": ["k3": 3, "k1": 1, "k2": 2], "apple": 0, "mango": [["q": 1, "p": 2]]]
        let decrypted = try cipher.decrypt(try cipher.encrypt(value, context: "model"), context: "model")
        #expect(decrypted.objectValue.map { Array($0.keys) } == ["zebra", "apple", "mango"])
        #expect(decrypted[member: "zebra"]?.objectValue.map { Array($0.keys) } == ["k3", "k1", "k2"])
        #expect(decrypted[member: "mango"]?.arrayValue?.first?.objectValue.map { Array($0.keys) } == ["q", "p"])
    }

    @Test func containersNestedAsDeepAsTheJSONParserReadsRoundTrip() throws {
        var value: Value = .array([])
        for _ in 1..<Payload.maximumDepth { value = .array([value]) }
        #expect(try cipher.decrypt(try cipher.encrypt(value, context: "c"), context: "c") == value)

        let tooDeep: Value = ["one more": value]
        let error = #expect(throws: CipherError.self) { try cipher.encrypt(tooDeep, context: "c") }
        #expect(error?.kind == .unsupportedValue)
    }

    // MARK: Values that cannot be encrypted

    @Test(arguments: [
        Value.null,
        [.blob([1, 2])], ["photo": .blob([])],
        [.double(.nan)], ["ratio": .double(.infinity)], [["deeper": [.double(-.infinity)]]],
    ])
    func nilAndCollectionsJSONCannotCarryExactlyAreRefused(value: Value) {
        let error = #expect(throws: CipherError.self) { try cipher.encrypt(value, context: "c") }
        #expect(error?.kind == .unsupportedValue)
    }

    // MARK: The format

    @Test func aCiphertextIsHeaderNonceEncryptedPayloadAndTag() throws {
        let ciphertext = try cipher.encrypt("abc", context: "content")
        #expect(Array(ciphertext.prefix(defaultHeader.count)) == defaultHeader)
        #expect(ciphertext.count == defaultHeader.count + 12 + (1 + 3) + 16)
        #expect(Cipher.isCiphertext(ciphertext))
    }

    @Test func encryptingTheSameValueTwiceGivesDifferentCiphertextsWithoutThePlaintext() throws {
        let plaintext = "the quick brown fox jumps over the lazy dog"
        let first = try cipher.encrypt(.string(plaintext), context: "content")
        let second = try cipher.encrypt(.string(plaintext), context: "content")
        #expect(first != second)
        #expect(first[11..<23] != second[11..<23])
        for ciphertext in [first, second] {
            #expect(!contains(ciphertext, Array(plaintext.utf8)))
            #expect(!contains(ciphertext, Array("quick".utf8)))
        }
        let blob = [UInt8](repeating: 0xAB, count: 64)
        #expect(!contains(try cipher.encrypt(.blob(blob), context: "content"), Array(blob.prefix(8))))
    }

    @Test func eachKindIsEncodedAsTheFormatSays() throws {
        #expect(try Payload.encode("hé") == [0x01, 0x68, 0xC3, 0xA9])
        #expect(try Payload.encode(-2) == [0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE])
        #expect(try Payload.encode(.integer(.min)) == [0x02, 0x80, 0, 0, 0, 0, 0, 0, 0])
        #expect(try Payload.encode(1.0) == [0x03, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect(try Payload.encode(.double(-0.0)) == [0x03, 0x80, 0, 0, 0, 0, 0, 0, 0])
        #expect(try Payload.encode(true) == [0x04, 0x01])
        #expect(try Payload.encode(false) == [0x04, 0x00])
        #expect(try Payload.encode(.blob([0xDE, 0xAD])) == [0x05, 0xDE, 0xAD])
        #expect(try Payload.encode(["b": 1, "a": [true, 2.5]]) == [0x06] + Array(#"{"b":1,"a":[true,2.5]}"#.utf8))
        #expect(try Payload.encode([]) == [0x06] + Array("[]".utf8))
    }

    /// Vectors made with Python's `cryptography` AESGCM, independently of this
    /// code: they pin the stored format, which must never change for version 1.
    @Test(arguments: [
        (
            "444701a0a1a2a3a4a5a6a7a8a9aaabe770194129a42e9f86dd113492f6b24ea2d839b1302363c4d8bbf5bff39d",
            "content", Value.string("hello, 世界")
        ),
        ("444701b0b1b2b3b4b5b6b7b8b9babb9baaa554133244a0b9cbde08b87242b3cb81cdb8ec5f04a2b5", "kv:biz/key", -2),
        (
            "444701c0c1c2c3c4c5c6c7c8c9cacb063305055542a772bab8df9869d89a23295fd11109bf62f10a35c5f28f373f1e9683a3ce7ad5d8",
            "model", ["b": 1, "a": [true, 2.5]]
        ),
    ] as [(String, String, Value)])
    func decryptsCiphertextsWrittenByAnotherImplementationOfTheFormat(hex: String, context: String, value: Value) throws {
        let cipher = Cipher(key: try CipherKey(bytes: countingKeyBytes))
        let decrypted = try cipher.decrypt(bytes(hex: hex), context: context)
        #expect(decrypted == value)
        #expect(decrypted.objectValue.map { Array($0.keys) } == value.objectValue.map { Array($0.keys) })
    }

    // MARK: Authentication

    @Test func aDifferentKeyFailsAuthentication() throws {
        let ciphertext = try cipher.encrypt("secret", context: "content")
        let other = Cipher(key: try CipherKey.generate())
        let error = #expect(throws: CipherError.self) { try other.decrypt(ciphertext, context: "content") }
        #expect(error?.kind == .authenticationFailed)
    }

    @Test(arguments: ["contents", "Content", "", "kv:biz/key", "content\u{0}"])
    func aDifferentContextFailsAuthentication(otherContext: String) throws {
        let ciphertext = try cipher.encrypt("secret", context: "content")
        let error = #expect(throws: CipherError.self) { try cipher.decrypt(ciphertext, context: otherContext) }
        #expect(error?.kind == .authenticationFailed)
    }

    @Test func flippingAnyBitOfACiphertextIsAnErrorNeverAValue() throws {
        let ciphertext = try cipher.encrypt(["a": 1, "b": "two"], context: "content")
        for position in ciphertext.indices {
            let expected: CipherError.Kind =
                switch position {
                case 0, 1: .notCiphertext
                case 2: .unsupportedVersion
                case 3..<defaultHeader.count: .corrupt
                default: .authenticationFailed
                }
            for bit in 0..<8 {
                var altered = ciphertext
                altered[position] ^= 1 << bit
                do {
                    let value = try cipher.decrypt(altered, context: "content")
                    Issue.record("bit \(bit) of byte \(position) flipped still decrypted, to \(value.kindPhrase)")
                } catch {
                    // A changed key id names another key (missing here) unless it is no key id at all.
                    if expected == .corrupt, error.kind == .keyMissing { continue }
                    #expect(error.kind == expected, "bit \(bit) of byte \(position)")
                }
            }
        }
    }

    @Test func everyTruncationAndAnyExtensionIsAnError() throws {
        let ciphertext = try cipher.encrypt("some text", context: "content")
        for length in 0..<ciphertext.count {
            do {
                let value = try cipher.decrypt(Array(ciphertext.prefix(length)), context: "content")
                Issue.record("the first \(length) bytes still decrypted, to \(value.kindPhrase)")
            } catch {
                let expected: CipherError.Kind =
                    switch length {
                    case 0..<3: .notCiphertext
                    case 3..<defaultMinimumSize: .corrupt
                    default: .authenticationFailed
                    }
                #expect(error.kind == expected, "\(length) bytes")
            }
        }
        let error = #expect(throws: CipherError.self) { try cipher.decrypt(ciphertext + [0], context: "content") }
        #expect(error?.kind == .authenticationFailed)
    }

    @Test func swappingTheNonceOfTwoCiphertextsFailsAuthentication() throws {
        let first = try cipher.encrypt("first", context: "content")
        let second = try cipher.encrypt("other", context: "content")
        var spliced = first
        spliced.replaceSubrange(11..<23, with: second[11..<23])
        let error = #expect(throws: CipherError.self) { try cipher.decrypt(spliced, context: "content") }
        #expect(error?.kind == .authenticationFailed)
    }

    // MARK: Bytes that are not ciphertexts

    @Test(arguments: [
        [UInt8](), Array("hello".utf8), [0x44], [0x44, 0x47], Array("GD\u{1}".utf8),
        [0x00] + (0..<63).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) },
        Array(#"{"content":"plain"}"#.utf8),
    ])
    func bytesWithoutTheMagicAreNotCiphertext(input: [UInt8]) {
        #expect(!Cipher.isCiphertext(input))
        let error = #expect(throws: CipherError.self) { try cipher.decrypt(input, context: "content") }
        #expect(error?.kind == .notCiphertext)
    }

    @Test func randomBytesAreNotCiphertext() throws {
        for _ in 0..<100 {
            var random = (0..<48).map { _ in UInt8.random(in: 0...255) }
            random[0] = random[0] == 0x44 ? 0x45 : random[0]
            #expect(!Cipher.isCiphertext(random))
            let error = #expect(throws: CipherError.self) { try cipher.decrypt(random, context: "content") }
            #expect(error?.kind == .notCiphertext)
        }
    }

    @Test(arguments: [0x00, 0x03, 0xFF] as [UInt8])
    func anUnknownVersionIsUnsupported(version: UInt8) throws {
        var ciphertext = try cipher.encrypt("text", context: "content")
        ciphertext[2] = version
        #expect(!Cipher.isCiphertext(ciphertext))
        let error = #expect(throws: CipherError.self) { try cipher.decrypt(ciphertext, context: "content") }
        #expect(error?.kind == .unsupportedVersion)
        #expect(error?.message.contains("version \(version)") == true)
    }

    @Test func aTruncatedCiphertextIsNotRecognised() throws {
        let ciphertext = try cipher.encrypt("", context: "content")
        #expect(ciphertext.count == defaultMinimumSize)
        #expect(Cipher.isCiphertext(ciphertext))
        #expect(!Cipher.isCiphertext(Array(ciphertext.dropLast())))
    }

    /// Only a key holder can write these; decoding still never yields garbage.
    @Test(arguments: [
        [UInt8](), [0x00], [0x07, 1, 2], [0x02, 1, 2, 3], [0x03] + [UInt8](repeating: 0, count: 9),
        [0x04], [0x04, 2], [0x04, 1, 0], [0x01, 0xFF, 0xFE], [0x06] + Array("42".utf8), [0x06] + Array("[1,".utf8),
    ])
    func anAuthenticPayloadThatDoesNotDecodeIsCorrupt(payload: [UInt8]) {
        let error = #expect(throws: CipherError.self) { try Payload.decode(payload) }
        #expect(error?.kind == .corrupt)
    }

    @Test func errorMessagesHoldNeitherPlaintextNorKey() throws {
        let keyBytes = try CipherKey.generate()
        let cipher = Cipher(key: keyBytes)
        let ciphertext = try cipher.encrypt("TOP-SECRET-PLAINTEXT", context: "content")
        let other = Cipher(key: try CipherKey.generate())
        let error = #expect(throws: CipherError.self) { try other.decrypt(ciphertext, context: "content") }
        #expect(error?.description.contains("TOP-SECRET") == false)
        #expect(error?.message.contains("content") == true)

        let text = String(repeating: "z", count: 64)
        let keyError = #expect(throws: CipherError.self) { try CipherKey(text: text) }
        #expect(keyError?.message.contains(text) == false)
    }

    // MARK: Keys

    static let countingKeyBase64 = Base64.encode(countingKeyBytes)

    static let keyTexts: [String] = [
        countingKeyHex, countingKeyHex.uppercased(), countingKeyBase64,
        countingKeyHex + "\n", "  \t" + countingKeyHex + "\r\n", countingKeyBase64 + "\n",
    ]

    @Test(arguments: keyTexts)
    func keyTextIsHexInEitherCaseOrBase64WithSurroundingWhiteSpaceIgnored(text: String) throws {
        let key = try CipherKey(text: text)
        #expect(key.fingerprint == (try CipherKey(bytes: countingKeyBytes)).fingerprint)
        let ciphertext = try Cipher(key: key).encrypt(7, context: "c")
        #expect(try Cipher(key: try CipherKey(bytes: countingKeyBytes)).decrypt(ciphertext, context: "c") == 7)
    }

    static let notKeyTexts: [String] = [
        "", "\n",
        String(countingKeyHex.dropLast()), countingKeyHex + "0", String(countingKeyHex.dropLast()) + "g",
        "0x" + countingKeyHex.dropFirst(2), countingKeyHex.prefix(32) + " " + countingKeyHex.dropFirst(33),
        Base64.encode(Array(countingKeyBytes.dropLast())), Base64.encode(countingKeyBytes + [0]),
        String(countingKeyBase64.dropLast()), "-" + countingKeyBase64.dropFirst(),
        countingKeyBase64.prefix(4) + " " + countingKeyBase64.dropFirst(4),
    ]

    @Test(arguments: notKeyTexts)
    func keyTextOfAnyOtherFormIsAnInvalidKey(text: String) {
        let error = #expect(throws: CipherError.self) { try CipherKey(text: text) }
        #expect(error?.kind == .invalidKey)
    }

    @Test(arguments: [0, 16, 31, 33, 64])
    func keyBytesOfAnotherLengthThan32AreAnInvalidKey(length: Int) {
        let error = #expect(throws: CipherError.self) { try CipherKey(bytes: [UInt8](repeating: 7, count: length)) }
        #expect(error?.kind == .invalidKey)
        #expect(error?.message.contains("\(length)") == true)
    }

    @Test func theFingerprintIsThe8FirstHexDigitsOfTheKeysSHA256() throws {
        // python3 -c 'import hashlib; print(hashlib.sha256(bytes(range(32))).hexdigest()[:8])'
        let key = try CipherKey(bytes: countingKeyBytes)
        #expect(key.fingerprint == "630dcd29")
        #expect(try CipherKey(text: countingKeyHex).fingerprint == key.fingerprint)
        let generated = try CipherKey.generate()
        #expect(generated.fingerprint.count == 8)
        #expect(generated.fingerprint.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(generated.fingerprint != key.fingerprint)
    }

    @Test func generatedKeysDiffer() throws {
        let fingerprints = Set(try (0..<20).map { _ in try CipherKey.generate().fingerprint })
        #expect(fingerprints.count == 20)
    }

    @Test func aKeyIsNeverPrinted() throws {
        let key = try CipherKey(bytes: countingKeyBytes)
        var dumped = ""
        dump(key, to: &dumped)
        for text in ["\(key)", String(describing: key), String(reflecting: key), dumped, "\([key])"] {
            #expect(text.contains("redacted") || text.contains("CipherKey"), "\(text)")
            #expect(!text.contains("0001020304"))
            #expect(!text.contains(Base64.encode(countingKeyBytes)))
        }
        #expect("\(key)" == "CipherKey(<redacted>)")
        #expect(String(reflecting: key) == "CipherKey(<redacted>)")
    }

    // MARK: Key files

    /// A fresh temporary folder, removed when the test ends.
    private func withTemporaryFolder(_ body: (URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-cipher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(folder)
    }

    static let keyFiles: [[UInt8]] = [
        countingKeyBytes, Array(countingKeyHex.utf8), Array((countingKeyHex + "\n").utf8),
        Array(countingKeyHex.uppercased().utf8), Array((Base64.encode(countingKeyBytes) + "\n").utf8),
    ]

    @Test(arguments: keyFiles)
    func aKeyFileHoldsRawBytesOrAKeyText(contents: [UInt8]) throws {
        try withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("daogate.key")
            try Data(contents).write(to: file)
            #expect(try CipherKey.load(file: file.path).fingerprint == "630dcd29")
        }
    }

    @Test func aMissingKeyFileIsAnErrorNamingThePath() throws {
        try withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("absent.key").path
            let error = #expect(throws: CipherError.self) { try CipherKey.load(file: path) }
            #expect(error?.kind == .invalidKey)
            #expect(error?.message.contains(path) == true)
        }
    }

    @Test func aFolderIsNotAKeyFile() throws {
        try withTemporaryFolder { folder in
            let error = #expect(throws: CipherError.self) { try CipherKey.load(file: folder.path) }
            #expect(error?.kind == .invalidKey)
            #expect(error?.message.contains(folder.path) == true)
        }
    }

    static let notKeyFiles: [[UInt8]] = [
        Array(countingKeyBytes.dropLast()), countingKeyBytes + [0x0A], [],
        Array("this is not a key, it is a sentence\n".utf8), [UInt8](repeating: 0x41, count: 10_000),
    ]

    @Test(arguments: notKeyFiles)
    func aKeyFileOfAnythingElseIsAnInvalidKeyNamingThePathNotTheContent(contents: [UInt8]) throws {
        try withTemporaryFolder { folder in
            let file = folder.appendingPathComponent("daogate.key")
            try Data(contents).write(to: file)
            let error = #expect(throws: CipherError.self) { try CipherKey.load(file: file.path) }
            #expect(error?.kind == .invalidKey)
            #expect(error?.message.contains(file.path) == true)
            #expect(error?.message.contains("sentence") == false)
        }
    }

    // MARK: The environment

    @Test func anUnsetEnvironmentVariableGivesNoKey() throws {
        let name = "DAOGATE_TEST_KEY_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
        unsetenv(name)
        #expect(try CipherKey.fromEnvironment(name) == nil)
    }

    @Test func anEnvironmentVariableHoldsAKeyText() throws {
        let name = "DAOGATE_TEST_KEY_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
        setenv(name, countingKeyHex + "\n", 1)
        defer { unsetenv(name) }
        #expect(try CipherKey.fromEnvironment(name)?.fingerprint == "630dcd29")
    }

    @Test(arguments: ["", "not a key", String(countingKeyHex.dropLast(2))])
    func anEnvironmentVariableWithoutAKeyTextIsAnInvalidKeyNamingTheVariable(value: String) throws {
        let name = "DAOGATE_TEST_KEY_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
        setenv(name, value, 1)
        defer { unsetenv(name) }
        let error = #expect(throws: CipherError.self) { try CipherKey.fromEnvironment(name) }
        #expect(error?.kind == .invalidKey)
        #expect(error?.message.contains(name) == true)
    }
}
