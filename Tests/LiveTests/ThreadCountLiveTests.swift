import Foundation
import Testing

/// The default thread count is twice the processors the server may use, not the machine's: confined to one
/// processor (as a container given one with `--cpuset-cpus`), it runs two libmicrohttpd workers, and says so.
@Suite struct ThreadCountLiveTests {
    /// The libmicrohttpd worker threads of a process, by their names in `/proc`.
    static func workerThreads(of pid: Int32) throws -> Int {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?.hasPrefix("MHD-worker") == true
        }.count
    }

    @Test func confinedToOneProcessorItRunsTwoWorkers() throws {
        let server = try LiveServer(launcher: ["/usr/bin/taskset", "-c", "0"])
        #expect(server.log.contains("worker threads: 2 (processors this process may use: 1)"), "\(server.log)")
        #expect(try Self.workerThreads(of: server.process.processIdentifier) == 2)
        #expect(try server.curl("/healthz").status == 200)
    }

    @Test func unconfinedItRunsTwoWorkersPerProcessor() throws {
        let server = try LiveServer()
        let said = try #require(server.log.firstMatch(of: /worker threads: (\d+) \(processors this process may use: (\d+)\)/))
        let threads = try #require(Int(said.1)), processors = try #require(Int(said.2))
        #expect(threads == 2 * processors)
        #expect((1...ProcessInfo.processInfo.processorCount).contains(processors))
        #expect(try Self.workerThreads(of: server.process.processIdentifier) == threads)
    }

    @Test func anExplicitCountIsKeptWhereverTheServerRuns() throws {
        let server = try LiveServer(arguments: ["--threads", "3"], launcher: ["/usr/bin/taskset", "-c", "0"])
        #expect(server.log.contains("worker threads: 3 (processors this process may use: 1)"), "\(server.log)")
        #expect(try Self.workerThreads(of: server.process.processIdentifier) == 3)
    }

    /// A cgroup of its own with a quota of 1.5 processors (cgroup v1's `cpu.cfs_quota_us` where that hierarchy
    /// is mounted, as on this machine and under podman here; else v2's `cpu.max`), then 0.5: the server, started in
    /// it, counts 2 processors and then 1.
    @Test func aCPUQuotaLimitsTheWorkers() throws {
        let v1 = FileManager.default.fileExists(atPath: "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
        let group = (v1 ? "/sys/fs/cgroup/cpu/" : "/sys/fs/cgroup/") + "daogate-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: false)
        defer { _ = rmdir(group) }
        for (quota, processors) in [(150_000, 2), (50_000, 1)] {
            if v1 {
                try "100000".write(toFile: group + "/cpu.cfs_period_us", atomically: false, encoding: .utf8)
                try "\(quota)".write(toFile: group + "/cpu.cfs_quota_us", atomically: false, encoding: .utf8)
            } else {
                try "\(quota) 100000".write(toFile: group + "/cpu.max", atomically: false, encoding: .utf8)
            }
            let expected = min(processors, ProcessInfo.processInfo.activeProcessorCount)
            do {
                // The shell joins the group, then becomes the server.
                let server = try LiveServer(launcher: ["/bin/sh", "-c", "echo $$ > \(group)/cgroup.procs && exec \"$0\" \"$@\""])
                #expect(server.log.contains("worker threads: \(2 * expected) (processors this process may use: \(expected))"),
                        "quota \(quota): \(server.log)")
                #expect(try Self.workerThreads(of: server.process.processIdentifier) == 2 * expected)
            }
        }
    }
}
