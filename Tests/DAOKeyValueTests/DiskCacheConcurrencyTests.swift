import DAOEngine
import DAOKeyValue
import DAOValue
import Dispatch
import Synchronization
import Testing

/// Many threads on the same caches: the gateway's worker threads.
@Suite struct DiskCacheConcurrencyTests {
    let fixture = DiskCacheFixture()
    let here = DiskCacheFixture.common

    @Test func concurrentSetsAndGetsKeepTheCountWithinCapacityAndSlack() throws {
        let caches = try fixture.caches()
        let capacity = 20
        let bound = capacity + DiskCaches.slack(forCapacity: capacity)
        try caches.create("c", in: here, capacity: capacity, encrypted: false)
        try caches.create("s", in: DiskCacheFixture.ann, capacity: capacity, encrypted: true)
        let problems = Mutex<[String]>([])

        DispatchQueue.concurrentPerform(iterations: 6) { thread in
            var random = SplitMix64(seed: UInt64(thread + 1))
            let location = thread % 3 == 2 ? DiskCacheFixture.ann : DiskCacheFixture.common
            let name = thread % 3 == 2 ? "s" : "c"
            do {
                for step in 0..<150 {
                    let key = "k\(random.next() % 60)"
                    switch random.next() % 10 {
                    case 0..<5:
                        try caches.set(name, in: location, key: key, value: .string("\(key)@\(thread).\(step)"))
                    case 5..<9:
                        if let value = try caches.get(name, in: location, key: key),
                           value.stringValue?.hasPrefix(key + "@") != true {
                            problems.withLock { $0.append("\(key) holds \(value)") }
                        }
                    default:
                        let batch = (0..<5).map { _ in
                            let key = "k\(random.next() % 60)"
                            return (key: key, value: Value.string("\(key)@\(thread).\(step)"))
                        }
                        try caches.add(name, in: location, entries: batch)
                    }
                    let count = try caches.info(name, in: location).count
                    if count > bound { problems.withLock { $0.append("count \(count) > \(bound)") } }
                }
            } catch {
                problems.withLock { $0.append("thread \(thread): \(error)") }
            }
        }

        #expect(problems.withLock { $0 } == [])
        for (name, location) in [("c", here), ("s", DiskCacheFixture.ann)] {
            let count = try caches.info(name, in: location).count
            #expect(count <= bound)
            #expect(count >= capacity)
            #expect(try caches.rowCount(name, in: location) == count)
            #expect(Set(try caches.rows("SELECT touched FROM \"daogate_lru_\(name)\"", in: location).map { $0[0] }).count == count,
                    "recency stamps are unique")
        }
    }

    @Test func concurrentCreatesOfOneCacheMakeItOnce() throws {
        let caches = try fixture.caches()
        let created = Mutex<[Bool]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let result = try caches.create("c", in: DiskCacheFixture.ann, capacity: 10, encrypted: true)
                created.withLock { $0.append(result.created) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(created.withLock { $0.filter { $0 }.count } == 1)
        #expect(try caches.list(in: DiskCacheFixture.ann).count == 1)
    }
}
