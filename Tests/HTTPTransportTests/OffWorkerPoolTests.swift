#if canImport(Glibc)
import Glibc
#endif
@testable import HTTPTransport
import Synchronization
import Testing

/// The threads answers worked out off the worker threads run on: at most the limit's worth of answers at once,
/// threads kept between answers (a bucket move's exports come one after another), ended when idle or stopped.
/// The kernel's id of the calling thread (a thread made after another ended gets a new one).
private func threadID() -> Int {
    var link = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &link, link.count - 1)  // "PID/task/TID"
    guard count > 0 else { return 0 }
    return Int(String(decoding: link[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/").last ?? "") ?? 0
}

@Suite("The threads of answers worked out off the worker threads")
struct OffWorkerPoolTests {
    /// Runs one job through the pool and waits for it: the thread it ran on.
    static func threadOfOneJob(_ pool: OffWorkerAnswers) -> Int {
        let ran = Mutex<Int?>(nil)
        #expect(pool.reserve())
        pool.run { ran.withLock { $0 = threadID() } }
        pool.waitForAll()
        return ran.withLock { $0 } ?? 0
    }

    /// `count` answers given to the pool, each held running until `release()`.
    final class Held: Sendable {
        private let open = Atomic<Bool>(false)
        private let running = Atomic<Int>(0)

        init(_ pool: OffWorkerAnswers, count: Int) {
            for _ in 0..<count {
                #expect(pool.reserve())
                pool.run { [self] in
                    running.add(1, ordering: .sequentiallyConsistent)
                    while !open.load(ordering: .sequentiallyConsistent) { usleep(1000) }
                }
            }
        }

        /// How many have started.
        var started: Int { running.load(ordering: .sequentiallyConsistent) }
        func release() { open.store(true, ordering: .sequentiallyConsistent) }
    }

    @Test func answersOneAfterAnotherRunOnOneKeptThread() {
        let pool = OffWorkerAnswers(limit: 4)
        defer { pool.stop() }
        let threads = (0..<5).map { _ in Self.threadOfOneJob(pool) }
        #expect(threads[0] != 0 && threads[0] != threadID())
        #expect(Set(threads).count == 1, "\(threads)")
        #expect(pool.threadCount == 1)
    }

    @Test func pastTheLimitNothingIsCountedAndTheRestRunAtOnce() {
        let pool = OffWorkerAnswers(limit: 3)
        defer { pool.stop() }
        let held = Held(pool, count: 3)
        #expect(!pool.reserve())
        // The three run at once, each on a thread of its own.
        #expect(eventually { held.started == 3 })
        #expect(pool.count == 3 && pool.threadCount == 3)
        held.release()
        pool.waitForAll()
        #expect(pool.count == 0)
        #expect(pool.reserve())
        pool.run {}
        pool.waitForAll()
        #expect(pool.threadCount == 3)
    }

    /// An answer worked out stops counting against the limit before it is delivered: its client, answered, may
    /// send its next long call at once and must not be refused for the call just answered. `waitForAll` still
    /// waits for the delivery (libmicrohttpd's daemon may not stop with the connection suspended).
    @Test func anAnswerWorkedOutFreesItsPlaceBeforeItIsDelivered() {
        let pool = OffWorkerAnswers(limit: 1)
        defer { pool.stop() }
        let placeFreeWhileDelivering = Atomic<Int>(-1)  // -1: not delivering yet; then 1 or 0
        let delivered = Atomic<Bool>(false)
        #expect(pool.reserve())
        pool.run({ 7 }, then: { answer in
            // The client has its answer from here on: the place must be free already.
            placeFreeWhileDelivering.store(pool.reserve() ? 1 : 0, ordering: .sequentiallyConsistent)
            usleep(50_000)
            delivered.store(answer == 7, ordering: .sequentiallyConsistent)
        })
        let delivering = eventually { placeFreeWhileDelivering.load(ordering: .sequentiallyConsistent) >= 0 }
        #expect(delivering)
        let placeFree = placeFreeWhileDelivering.load(ordering: .sequentiallyConsistent) == 1
        #expect(placeFree)
        if placeFree { pool.run {} }  // the place it reserved, given its job
        pool.waitForAll()
        let deliveryEnded = delivered.load(ordering: .sequentiallyConsistent)
        #expect(deliveryEnded, "waitForAll returned before the delivery ended")
        #expect(pool.count == 0)
    }

    /// Two answers given one after the other while one thread is idle run at once: the second does not wait
    /// behind the first for the thread woken for it.
    @Test func twoAnswersGivenWhileOneThreadIsIdleRunAtOnce() {
        let pool = OffWorkerAnswers(limit: 4)
        defer { pool.stop() }
        _ = Self.threadOfOneJob(pool)
        #expect(pool.threadCount == 1)
        let held = Held(pool, count: 2)
        #expect(eventually { held.started == 2 })
        held.release()
        pool.waitForAll()
        #expect(pool.threadCount == 2)
    }

    @Test func aThreadIdleForItsTimeEnds() {
        let pool = OffWorkerAnswers(limit: 2, idleTime: .milliseconds(100))
        let first = Self.threadOfOneJob(pool)
        // (Not checked that it is still there at once: a loaded machine may pass its 100 ms before the check.)
        #expect(eventually { pool.threadCount == 0 })
        let second = Self.threadOfOneJob(pool)
        #expect(second != first)
        pool.stop()
        #expect(eventually { pool.threadCount == 0 })
    }
}
