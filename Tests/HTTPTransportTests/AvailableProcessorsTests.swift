#if canImport(Glibc)
import Glibc
#endif
@testable import HTTPTransport
import Testing

/// The processors a process may use, which the default thread count doubles: its affinity mask and its
/// cgroup's CPU quota, as a container sets them.
@Suite struct AvailableProcessorsTests {
    @Test func aQuotaAllowsItsProcessorsRoundedUp() {
        #expect(AvailableProcessors.processorLimit(cpuMax: "150000 100000\n") == 2)
        #expect(AvailableProcessors.processorLimit(cpuMax: "100000 100000") == 1)
        #expect(AvailableProcessors.processorLimit(cpuMax: "50000 100000") == 1)
        #expect(AvailableProcessors.processorLimit(cpuMax: "400000 100000") == 4)
        #expect(AvailableProcessors.processorLimit(quota: "250000\n", period: "100000\n") == 3)
    }

    @Test func noQuotaIsNoLimit() {
        #expect(AvailableProcessors.processorLimit(cpuMax: "max 100000") == nil)
        #expect(AvailableProcessors.processorLimit(quota: "-1\n", period: "100000\n") == nil)
        #expect(AvailableProcessors.processorLimit(quota: nil, period: "100000") == nil)
        #expect(AvailableProcessors.processorLimit(cpuMax: "") == nil)
        #expect(AvailableProcessors.processorLimit(cpuMax: "100000 0") == nil)
        #expect(AvailableProcessors.processorLimit(cpuMax: "1 2 3") == nil)
    }

    /// A container's own cgroup is where the hierarchy is mounted, under the host's path of it: every folder
    /// from the path up to the mount is read.
    @Test func theFoldersOfAPathGoUpToTheMount() {
        #expect(AvailableProcessors.folders(of: "/libpod_parent/libpod-1", under: "/sys/fs/cgroup/cpu")
                == ["/sys/fs/cgroup/cpu/libpod_parent/libpod-1", "/sys/fs/cgroup/cpu/libpod_parent", "/sys/fs/cgroup/cpu"])
        #expect(AvailableProcessors.folders(of: "/", under: "/sys/fs/cgroup") == ["/sys/fs/cgroup"])
    }

    @Test func thisProcessMayUseAtLeastOneProcessorAndNoMoreThanAreOnline() {
        let online = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        #expect((1...max(1, online)).contains(AvailableProcessors.count))
        #expect(HTTPServerConfiguration().threads == 2 * AvailableProcessors.count)
    }
}
