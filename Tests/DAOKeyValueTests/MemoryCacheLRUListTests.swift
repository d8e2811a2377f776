import Testing
@testable import DAOKeyValue

struct MemoryCacheLRUListTests {

    static func keys<P>(_ list: LRUList<P>, fromHead: Bool) -> [String] {
        list.positions(fromHead: fromHead).map { list.key(at: $0) }
    }

    @Test func insertsAtTheHeadAndWalksBothWays() {
        var list = LRUList<Int>()
        #expect(list.head == nil && list.tail == nil && list.isEmpty)
        list.insertAtHead("a", 1)
        list.insertAtHead("b", 2)
        list.insertAtHead("c", 3)
        #expect(Self.keys(list, fromHead: true) == ["c", "b", "a"])
        #expect(Self.keys(list, fromHead: false) == ["a", "b", "c"])
        #expect(list.head.map(list.key(at:)) == "c")
        #expect(list.tail.map(list.key(at:)) == "a")
        #expect(list.count == 3)
        #expect(list.invariantViolation() == nil)
    }

    @Test func touchMovesToTheHeadAndAnswersThePosition() {
        var list = LRUList<Int>()
        for (payload, key) in ["a", "b", "c", "d"].enumerated() { list.insertAtHead(key, payload) }
        // d c b a → touch b (middle), a (tail), a again (head), x (absent)
        let b = list.touch("b")
        #expect(b.map(list.payload(at:)) == 1)
        #expect(Self.keys(list, fromHead: true) == ["b", "d", "c", "a"])
        _ = list.touch("a")
        #expect(Self.keys(list, fromHead: true) == ["a", "b", "d", "c"])
        _ = list.touch("a")
        #expect(Self.keys(list, fromHead: true) == ["a", "b", "d", "c"])
        #expect(list.touch("x") == nil)
        #expect(Self.keys(list, fromHead: false) == ["c", "d", "b", "a"])
        #expect(list.invariantViolation() == nil)
    }

    @Test func removesHeadMiddleAndTail() {
        var list = LRUList<Int>()
        for (payload, key) in ["a", "b", "c", "d", "e"].enumerated() { list.insertAtHead(key, payload) }
        #expect(list.removeValue(forKey: "e") == 4)  // head
        #expect(list.removeValue(forKey: "c") == 2)  // middle
        #expect(list.removeTail()?.key == "a")
        #expect(list.removeValue(forKey: "c") == nil)
        #expect(Self.keys(list, fromHead: true) == ["d", "b"])
        #expect(list.invariantViolation() == nil)
        #expect(list.removeTail()?.key == "b")
        #expect(list.removeTail()?.key == "d")
        #expect(list.removeTail() == nil)
        #expect(list.isEmpty && list.head == nil && list.tail == nil)
        #expect(list.invariantViolation() == nil)
    }

    @Test func reusesFreedSlots() {
        var list = LRUList<Int>()
        for index in 0..<10 { list.insertAtHead("k\(index)", index) }
        for index in 0..<10 where index % 2 == 0 { list.removeValue(forKey: "k\(index)") }
        for index in 10..<15 { list.insertAtHead("k\(index)", index) }
        #expect(list.nodes.count == 10)
        #expect(list.count == 10)
        #expect(list.invariantViolation() == nil)
    }

    @Test func insertAfterPutsARemovedNodeBackInPlace() {
        var list = LRUList<Int>()
        for (payload, key) in ["a", "b", "c"].enumerated() { list.insertAtHead(key, payload) }
        // c b a: remove each in turn and put it back after its old neighbour.
        for key in ["c", "b", "a"] {
            let before = Self.keys(list, fromHead: true)
            let position = list.position(of: key) ?? -1
            let after = list.position(before: position).map(list.key(at:))
            let removed = list.remove(at: position)
            list.insert(removed.key, removed.payload, after: after.flatMap(list.position(of:)))
            #expect(Self.keys(list, fromHead: true) == before)
            #expect(list.invariantViolation() == nil)
        }
    }

    final class Tracked {}

    @Test func removalReleasesKeyAndPayloadAtOnce() {
        var list = LRUList<Tracked>()
        weak var first: Tracked?
        weak var second: Tracked?
        do {
            let one = Tracked()
            let two = Tracked()
            first = one
            second = two
            list.insertAtHead("one", one)
            list.insertAtHead("two", two)
        }
        #expect(first != nil && second != nil)
        list.removeValue(forKey: "one")
        #expect(first == nil)
        _ = list.removeTail()
        #expect(second == nil)
        #expect(list.invariantViolation() == nil)
    }

    /// Random operations against an array, most recent first.
    @Test(arguments: [7, 8, 9] as [UInt64])
    func agreesWithAnArray(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var list = LRUList<Int>()
        var model: [(key: String, payload: Int)] = []
        for step in 0..<5_000 {
            let key = "k\(Int.random(in: 0..<30, using: &random))"
            let payload = step
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1:
                if let index = model.firstIndex(where: { $0.key == key }) {
                    let entry = model.remove(at: index)
                    model.insert(entry, at: 0)
                    #expect(list.touch(key).map(list.payload(at:)) == entry.payload)
                } else {
                    model.insert((key, payload), at: 0)
                    list.insertAtHead(key, payload)
                }
            case 2:
                let index = model.firstIndex { $0.key == key }
                let expected = index.map { model.remove(at: $0).payload }
                #expect(list.removeValue(forKey: key) == expected)
            case 3:
                let expected = model.popLast()
                let removed = list.removeTail()
                #expect(removed?.key == expected?.key && removed?.payload == expected?.payload)
            case 4:
                #expect(list.touch(key) == nil || model.contains { $0.key == key })
                if let index = model.firstIndex(where: { $0.key == key }) { model.insert(model.remove(at: index), at: 0) }
            default:
                // Remove a node and put it back where it was, as an undone batch does.
                guard let index = model.firstIndex(where: { $0.key == key }), let position = list.position(of: key) else { break }
                let after = list.position(before: position).map(list.key(at:))
                #expect(after == (index == 0 ? nil : model[index - 1].key))
                let removed = list.remove(at: position)
                #expect(removed.key == key && removed.payload == model[index].payload)
                list.insert(removed.key, removed.payload, after: after.flatMap(list.position(of:)))
            }
            #expect(Self.keys(list, fromHead: true) == model.map(\.key), "seed \(seed), step \(step)")
            #expect(Self.keys(list, fromHead: false) == model.reversed().map(\.key), "seed \(seed), step \(step)")
            #expect(list.count == model.count)
            #expect(list.invariantViolation() == nil, "seed \(seed), step \(step)")
        }
    }
}
