import Foundation
import Testing

/// The server's `malloc` is jemalloc's, linked into the binary (the allocator its benchmarks measure), and the
/// start-up log says so; when something loaded ahead of it takes `malloc` over, the log says that instead.
@Suite struct MemoryAllocatorLiveTests {
    /// The files mapped into a process, from `/proc/PID/maps`.
    static func mappedFiles(of pid: Int32) throws -> Set<String> {
        // Read to its end: a file of /proc says its size is 0.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/maps"))
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line in line.split(separator: " ").dropFirst(5).first.map(String.init) })
    }

    @Test func theServerRunsOnJemalloc() throws {
        let server = try LiveServer()
        let said = try #require(server.log.firstMatch(of: /info daogate: \[daogate\] memory allocator: jemalloc (\d+\.\d+\.\d+)\S* \((\S+)\)/),
                                "\(server.log)")
        #expect(said.1.hasPrefix("5."))
        let file = String(said.2)
        #expect(file.contains("libjemalloc.so"))
        let mapped = try Self.mappedFiles(of: server.process.processIdentifier)
        #expect(mapped.contains { URL(fileURLWithPath: $0).resolvingSymlinksInPath() == URL(fileURLWithPath: file).resolvingSymlinksInPath() },
                "\(mapped.sorted())")
        // The allocator serves requests like any other: a write and a read of it.
        #expect(try server.curl("/dao/Demo/insertItem", method: "POST", body: #"["on jemalloc"]"#).status == 200)
        #expect(try server.curl("/healthz").status == 200)
    }

    @Test func glibcsMallocPreloadedAheadOfJemallocIsNamedInAWarning() throws {
        // glibc's own file, as this test process maps it.
        let libc = try #require(try Self.mappedFiles(of: getpid()).first { $0.hasSuffix("/libc.so.6") })
        let server = try LiveServer(environment: ["LD_PRELOAD": libc])
        let said = try #require(server.log.firstMatch(of: /warning daogate: \[daogate\] memory allocator: malloc from (\S+), not jemalloc's/),
                                "\(server.log)")
        #expect(URL(fileURLWithPath: String(said.1)).resolvingSymlinksInPath() == URL(fileURLWithPath: libc).resolvingSymlinksInPath())
        #expect(try server.curl("/healthz").status == 200)
    }
}
