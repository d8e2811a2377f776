/// Keys in exact least-recently-used order, each with a payload: the linked
/// list behind the reference's `APLRUMemoryCache`.
///
/// The list lives in one array of nodes linked by `Int32` indices, with a
/// free list of unused slots and a `[String: Int]` index from key to slot, so
/// that looking up, moving to the head, inserting at the head and removing any
/// node are O(1) and no node is a class instance of its own (no allocation or
/// reference counting per entry beyond the key and payload themselves).
///
/// Its storage is sized in `slots`: the node array and the index are reserved
/// for that many keys together, grow by doubling (up to `slotLimit`) when a
/// key finds no free slot, and shrink (`compactIfSparse`) when at most a
/// quarter of the slots are in use, so that what the list holds follows what
/// it holds now, not the most it ever held. `storageBytes` is what the slots
/// take, for a caller that counts memory.
///
/// Positions are slot indices: stable while their node stays in the list,
/// reused after it leaves, all changed by a compaction. The head is the most
/// recently used node, the tail the least. A value type: callers put it
/// behind their own lock.
struct LRUList<Payload> {
    /// One slot: a linked node, or a free slot (no payload, `next` links the
    /// free list) whose key and payload were released when it was freed.
    struct Node {
        var key: String
        var payload: Payload?
        var previous: Int32
        var next: Int32
    }

    /// The end of a chain (no previous, no next, no free slot).
    private static var none: Int32 { -1 }

    private(set) var nodes: [Node] = []
    private var index: [String: Int] = [:]
    private var headSlot: Int32 = -1
    private var tailSlot: Int32 = -1
    private var freeSlot: Int32 = -1
    /// The keys the node array and the index are reserved for.
    private(set) var slots = 0
    /// The most slots the list grows to by doubling (a cache's capacity and
    /// one: a write may hold one key over it before evicting); past it, one
    /// slot at a time.
    var slotLimit = Int(Int32.max)

    /// The fewest slots a list that holds anything reserves.
    static var minimumSlots: Int { 2 }

    init(slotLimit: Int = Int(Int32.max)) {
        self.slotLimit = slotLimit
    }

    /// The number of keys in the list.
    var count: Int { index.count }
    var isEmpty: Bool { index.isEmpty }

    /// The most recently used node's position.
    var head: Int? { headSlot == Self.none ? nil : Int(headSlot) }
    /// The least recently used node's position.
    var tail: Int? { tailSlot == Self.none ? nil : Int(tailSlot) }

    // MARK: Reading

    /// The position of `key`, without touching its recency.
    func position(of key: String) -> Int? { index[key] }

    func key(at position: Int) -> String { nodes[position].key }

    /// The payload at a linked position. Positions come from this list, so a
    /// free slot here is a bug of the caller, not an input to recover from.
    func payload(at position: Int) -> Payload {
        guard let payload = nodes[position].payload else { preconditionFailure("LRUList: position \(position) is not linked") }
        return payload
    }

    /// Replaces the payload at a linked position, leaving the order alone.
    mutating func setPayload(_ payload: Payload, at position: Int) {
        nodes[position].payload = payload
    }

    /// Changes the payload at a linked position in place.
    mutating func modifyPayload(at position: Int, _ change: (inout Payload) -> Void) {
        guard nodes[position].payload != nil else { preconditionFailure("LRUList: position \(position) is not linked") }
        change(&nodes[position].payload!)
    }

    /// The position before `position` towards the head (more recent).
    func position(before position: Int) -> Int? {
        let previous = nodes[position].previous
        return previous == Self.none ? nil : Int(previous)
    }

    /// Positions from the head (most recent first) or from the tail.
    func positions(fromHead: Bool) -> Positions {
        Positions(nodes: nodes, current: fromHead ? headSlot : tailSlot, forward: fromHead)
    }

    /// Walks positions along the links of a snapshot of the nodes: the
    /// snapshot shares the list's storage until the list is mutated.
    struct Positions: Sequence, IteratorProtocol {
        fileprivate let nodes: [Node]
        fileprivate var current: Int32
        fileprivate let forward: Bool

        mutating func next() -> Int? {
            guard current != LRUList.none else { return nil }
            let position = Int(current)
            current = forward ? nodes[position].next : nodes[position].previous
            return position
        }
    }

    // MARK: Recency

    /// Moves `key` to the head and gives its position: the get of an LRU.
    mutating func touch(_ key: String) -> Int? {
        guard let position = index[key] else { return nil }
        moveToHead(position)
        return position
    }

    /// Moves a linked node to the head.
    mutating func moveToHead(_ position: Int) {
        let slot = Int32(truncatingIfNeeded: position)
        guard slot != headSlot else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    // MARK: Inserting

    /// Inserts a key that is not in the list at the head and gives its position.
    @discardableResult
    mutating func insertAtHead(_ key: String, _ payload: Payload) -> Int {
        let slot = allocate(key, payload)
        precondition(index.updateValue(Int(slot), forKey: key) == nil, "LRUList: '\(key)' is already in the list")
        linkAtHead(slot)
        return Int(slot)
    }

    /// Inserts a key that is not in the list right after (less recent than)
    /// the node at `position`, or at the head when `position` is nil: how an
    /// undone removal puts a node back where it was.
    @discardableResult
    mutating func insert(_ key: String, _ payload: Payload, after position: Int?) -> Int {
        guard let position else { return insertAtHead(key, payload) }
        let slot = allocate(key, payload)
        precondition(index.updateValue(Int(slot), forKey: key) == nil, "LRUList: '\(key)' is already in the list")
        let previous = Int32(truncatingIfNeeded: position)
        let next = nodes[position].next
        nodes[Int(slot)].previous = previous
        nodes[Int(slot)].next = next
        nodes[position].next = slot
        if next == Self.none { tailSlot = slot } else { nodes[Int(next)].previous = slot }
        return Int(slot)
    }

    // MARK: Removing

    /// Removes the node at a linked position and gives back its key and payload.
    @discardableResult
    mutating func remove(at position: Int) -> (key: String, payload: Payload) {
        let slot = Int32(truncatingIfNeeded: position)
        unlink(slot)
        let key = nodes[position].key
        let payload = self.payload(at: position)
        index.removeValue(forKey: key)
        recycle(slot)
        return (key, payload)
    }

    /// Removes `key` and gives back its payload, nil when it is not in the list.
    @discardableResult
    mutating func removeValue(forKey key: String) -> Payload? {
        guard let position = index[key] else { return nil }
        return remove(at: position).payload
    }

    /// Removes the least recently used node.
    mutating func removeTail() -> (key: String, payload: Payload)? {
        guard let tail else { return nil }
        return remove(at: tail)
    }

    /// Empties the list and gives back its storage.
    mutating func removeAll() {
        self = LRUList(slotLimit: slotLimit)
    }

    // MARK: Storage

    /// The bytes the storage for `slots` keys takes: the node array (its
    /// header and nodes) and the index (its header, and a key, a position and
    /// a bit of metadata per bucket, buckets being a power of two that keeps
    /// the load at most 3/4, as Swift's `Dictionary` does). The key's and the
    /// payload's own heap allocations are not in it.
    static func storageBytes(slots: Int) -> Int {
        guard slots > 0 else { return 0 }
        var buckets = 1
        while buckets * 3 < slots * 4 { buckets <<= 1 }
        let nodes = 32 + slots * MemoryLayout<Node>.stride
        let index = 64 + buckets * (MemoryLayout<String>.stride + MemoryLayout<Int>.stride) + buckets / 8
        return nodes + index
    }

    /// The bytes the list's storage takes now.
    var storageBytes: Int { Self.storageBytes(slots: slots) }

    /// The slots the list will have once one more key is inserted: more than
    /// now only when no slot is free.
    var slotsAfterInsert: Int {
        guard freeSlot == Self.none, nodes.count == slots else { return slots }
        return slots < slotLimit ? min(max(Self.minimumSlots, slots * 2), slotLimit) : slots + 1
    }

    /// Rebuilds the list in fewer slots (twice its keys, at least
    /// `minimumSlots`) when at most a quarter of its slots hold a key, keeping
    /// the order; empty, it gives everything back. True when it shrank: every
    /// position changed.
    @discardableResult
    mutating func compactIfSparse() -> Bool {
        if isEmpty {
            guard slots > 0 else { return false }
            removeAll()
            return true
        }
        guard slots > Self.minimumSlots, count * 4 <= slots else { return false }
        var compact = LRUList(slotLimit: slotLimit)
        compact.reserve(slots: max(Self.minimumSlots, min(count * 2, max(slotLimit, count))))
        var slot = tailSlot
        while slot != Self.none {
            let node = nodes[Int(slot)]
            compact.insertAtHead(node.key, node.payload!)
            slot = node.previous
        }
        self = compact
        return true
    }

    /// Reserves the node array and the index for `slots` keys.
    private mutating func reserve(slots wanted: Int) {
        nodes.reserveCapacity(wanted)
        index.reserveCapacity(wanted)
        slots = wanted
    }

    // MARK: Links

    private mutating func allocate(_ key: String, _ payload: Payload) -> Int32 {
        if freeSlot != Self.none {
            let slot = freeSlot
            freeSlot = nodes[Int(slot)].next
            nodes[Int(slot)] = Node(key: key, payload: payload, previous: Self.none, next: Self.none)
            return slot
        }
        precondition(nodes.count < Int(Int32.max), "LRUList: more than Int32.max nodes")
        if nodes.count == slots { reserve(slots: slotsAfterInsert) }
        nodes.append(Node(key: key, payload: payload, previous: Self.none, next: Self.none))
        return Int32(nodes.count - 1)
    }

    /// Puts a slot on the free list, releasing its key and payload now rather
    /// than when the slot is reused (a cache must not keep dropped values alive).
    private mutating func recycle(_ slot: Int32) {
        nodes[Int(slot)] = Node(key: "", payload: nil, previous: Self.none, next: freeSlot)
        freeSlot = slot
    }

    private mutating func unlink(_ slot: Int32) {
        let previous = nodes[Int(slot)].previous
        let next = nodes[Int(slot)].next
        if previous == Self.none { headSlot = next } else { nodes[Int(previous)].next = next }
        if next == Self.none { tailSlot = previous } else { nodes[Int(next)].previous = previous }
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = Self.none
    }

    private mutating func linkAtHead(_ slot: Int32) {
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = headSlot
        if headSlot == Self.none { tailSlot = slot } else { nodes[Int(headSlot)].previous = slot }
        headSlot = slot
    }

    // MARK: Checking

    /// What is wrong with the links, the index and the free list, nil when
    /// nothing is: for tests, O(n).
    func invariantViolation() -> String? {
        var seen = Set<Int32>()
        var previous = Self.none
        var slot = headSlot
        while slot != Self.none {
            guard slot >= 0, Int(slot) < nodes.count else { return "link \(slot) out of range" }
            guard seen.insert(slot).inserted else { return "cycle at \(slot)" }
            let node = nodes[Int(slot)]
            guard node.previous == previous else { return "slot \(slot): previous \(node.previous), expected \(previous)" }
            guard node.payload != nil else { return "slot \(slot) is linked without a payload" }
            guard index[node.key] == Int(slot) else { return "slot \(slot): key '\(node.key)' indexed at \(String(describing: index[node.key]))" }
            previous = slot
            slot = node.next
        }
        guard previous == tailSlot else { return "tail \(tailSlot), last linked \(previous)" }
        guard seen.count == index.count else { return "\(seen.count) linked, \(index.count) indexed" }
        var unused = freeSlot
        var freeCount = 0
        while unused != Self.none {
            guard unused >= 0, Int(unused) < nodes.count else { return "free link \(unused) out of range" }
            guard seen.insert(unused).inserted else { return "slot \(unused) is linked or free twice" }
            guard nodes[Int(unused)].payload == nil else { return "free slot \(unused) keeps a payload" }
            freeCount += 1
            unused = nodes[Int(unused)].next
        }
        guard index.count + freeCount == nodes.count else { return "\(nodes.count) slots, \(index.count) linked, \(freeCount) free" }
        guard nodes.count <= slots, nodes.capacity >= slots, index.capacity >= slots || slots == 0 else {
            return "\(nodes.count) nodes in \(slots) slots: the array has room for \(nodes.capacity), the index for \(index.capacity)"
        }
        return nil
    }
}
