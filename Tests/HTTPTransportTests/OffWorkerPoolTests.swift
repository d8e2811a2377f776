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
        let open = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        for _ in 0..<3 {
            #expect(pool.reserve())
            pool.run {
                started.add(1, ordering: .sequentiallyConsistent)
                while !open.load(ordering: .sequentiallyConsistent) { usleep(1000) }
            }
        }
        #expect(!pool.reserve())
        // The three run at once, each on a thread of its own.
        #expect(eventually { started.load(ordering: .sequentiallyConsistent) == 3 })
        #expect(pool.count == 3 && pool.threadCount == 3)
        open.store(true, ordering: .sequentiallyConsistent)
        pool.waitForAll()
        #expect(pool.count == 0)
        #expect(pool.reserve())
        pool.run {}
        pool.waitForAll()
        #expect(pool.threadCount == 3)
    }

    /// Two answers given one after the other while one thread is idle run at once: the second does not wait
    /// behind the first for the thread woken for it.
    @Test func twoAnswersGivenWhileOneThreadIsIdleRunAtOnce() {
        let pool = OffWorkerAnswers(limit: 4)
        defer { pool.stop() }
        _ = Self.threadOfOneJob(pool)
        #expect(pool.threadCount == 1)
        let open = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        for _ in 0..<2 {
            #expect(pool.reserve())
            pool.run {
                started.add(1, ordering: .sequentiallyConsistent)
                while !open.load(ordering: .sequentiallyConsistent) { usleep(1000) }
            }
        }
        #expect(eventually { started.load(ordering: .sequentiallyConsistent) == 2 })
        open.store(true, ordering: .sequentiallyConsistent)
        pool.waitForAll()
        #expect(pool.threadCount == 2)
    }

    @Test func aThreadIdleForItsTimeEnds() {
        let pool = OffWorkerAnswers(limit: 2, idleTime: .milliseconds(100))
        let first = Self.threadOfOneJob(pool)
        #expect(pool.threadCount == 1)
        #expect(eventually { pool.threadCount == 0 })
        let second = Self.threadOfOneJob(pool)
        #expect(second != first)
        pool.stop()
        #expect(eventually { pool.threadCount == 0 })
    }
}
