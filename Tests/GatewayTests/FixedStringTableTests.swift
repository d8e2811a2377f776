@testable import Gateway
import Testing

/// `FixedStringTable`: every key found with its own value, nothing else found, however the keys' hashes fall.
@Suite struct FixedStringTableTests {
    @Test func everyKeyIsFoundWithItsValueAndNoOtherStringIs() {
        var entries: [String: Int] = [:]
        for index in 0..<1_000 { entries["/dao/Module\(index % 37)/method\(index)"] = index }
        let table = FixedStringTable(entries)
        #expect(table.count == 1_000)
        for (key, value) in entries { #expect(table[key] == value, "\(key)") }
        for index in 0..<1_000 {
            let key = "/dao/Module\(index % 37)/method\(index)"
            #expect(table[key + "/"] == nil)
            let shorter = String(key.dropLast())  // another key ("method12" of "method123") or none
            #expect(table[shorter] == entries[shorter])
            #expect(table[key.uppercased()] == nil)
        }
        #expect(table[""] == nil)
    }

    /// Keys whose slots collide make runs: each is still found, and a string that is not a key stops at the run's
    /// end. The keys share their hash's low 12 bits, so they fall in one slot of any table up to 4,096 slots,
    /// whatever size the table chooses for eight.
    @Test func keysOfOneSlotAreAllFound() {
        var colliding: [String] = []
        var candidate = 0
        while colliding.count < 8 {
            let key = "k\(candidate)"
            if Array(key.utf8).withUnsafeBufferPointer(FixedStringTable<Int>.hash) & 0xFFF == 3 { colliding.append(key) }
            candidate += 1
        }
        let table = FixedStringTable(Dictionary(uniqueKeysWithValues: colliding.enumerated().map { ($1, $0) }))
        for (index, key) in colliding.enumerated() { #expect(table[key] == index) }
        #expect(table["k-none"] == nil)
    }

    @Test func anEmptyTableFindsNothing() {
        let table = FixedStringTable([String: Int]())
        #expect(table.count == 0)
        #expect(table["/dao/Demo/getItem"] == nil)
        #expect(table[""] == nil)
    }

    /// Keys are compared by their bytes: a string that Swift's `==` calls equal (canonically equivalent) but
    /// spelled with other bytes is not a key. U+212A KELVIN SIGN is canonically equivalent to "K".
    @Test func keysAreComparedByTheirBytes() {
        let table = FixedStringTable(["/dao/Kv/get": 1, "/dao/caf\u{E9}/get": 2])
        #expect("/dao/\u{212A}v/get" == "/dao/Kv/get")
        #expect(table["/dao/\u{212A}v/get"] == nil)
        #expect(table["/dao/cafe\u{301}/get"] == nil)
        #expect(table["/dao/Kv/get"] == 1)
        #expect(table["/dao/caf\u{E9}/get"] == 2)
    }
}
