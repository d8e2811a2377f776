#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD

/// The processors this process may run on, as a container or `taskset` leaves them: those of its affinity mask
/// (`--cpuset-cpus`), and no more than its cgroup's CPU quota allows (`--cpus`: cgroup v1's `cpu.cfs_quota_us`,
/// v2's `cpu.max`), rounded up; at least 1. The processors online when neither can be read.
///
/// The default thread count is twice this: twice the machine's processors is too many for a server confined to
/// some of them, whose workers, preempted while holding a lock (a database pool's), leave the others spinning
/// for it (`bench/run confined`, docs/performance.md's "Worker threads").
public enum AvailableProcessors {
    public static var count: Int {
        let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        var processors = affinityCount() ?? online
        if let quota = cgroupQuota() { processors = min(processors, quota) }
        return max(1, processors)
    }

    /// The processors in the calling thread's affinity mask (a new process's threads inherit it), nil when it
    /// cannot be read (a mask of more than 1,024 processors).
    static func affinityCount() -> Int? {
        // glibc's `cpu_set_t`: 1,024 bits.
        var mask = [UInt64](repeating: 0, count: 16)
        let read = mask.withUnsafeMutableBytes { daogate_sched_getaffinity(0, $0.count, $0.baseAddress) }
        guard read == 0 else { return nil }
        let count = mask.reduce(0) { $0 + $1.nonzeroBitCount }
        return count > 0 ? count : nil
    }

    /// The fewest processors that the CPU quota of this process's cgroup, or of any above it, allows: cgroup v2's
    /// `cpu.max`, v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us`. Nil when none sets one or the files are not
    /// there. A container sees its own cgroup where the hierarchy is mounted, under a path of the host's
    /// (`/proc/self/cgroup`) that is not there: each of the path's folders that is there is read, the mount's
    /// own included.
    static func cgroupQuota() -> Int? {
        guard let membership = readSmallFile("/proc/self/cgroup") else { return nil }
        var fewest: Int?
        for line in membership.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let path = String(parts[2])
            var limits: [Int?] = []
            if parts[0] == "0", parts[1].isEmpty {
                limits = folders(of: path, under: "/sys/fs/cgroup").map { folder in
                    readSmallFile(folder + "/cpu.max").flatMap { processorLimit(cpuMax: $0) }
                }
            } else if parts[1].split(separator: ",").contains("cpu") {
                limits = folders(of: path, under: "/sys/fs/cgroup/cpu").map { folder in
                    processorLimit(quota: readSmallFile(folder + "/cpu.cfs_quota_us"),
                                   period: readSmallFile(folder + "/cpu.cfs_period_us"))
                }
            }
            for case let limit? in limits { fewest = min(fewest ?? limit, limit) }
        }
        return fewest
    }

    /// The folders of a cgroup path and of each cgroup above it, the mount's own last:
    /// `/a/b` under `/m` → `/m/a/b`, `/m/a`, `/m`.
    static func folders(of path: String, under mount: String) -> [String] {
        var folders: [String] = []
        var components = path.split(separator: "/")
        while true {
            folders.append(([mount] + components.map(String.init)).joined(separator: "/"))
            guard !components.isEmpty else { return folders }
            components.removeLast()
        }
    }

    /// The processors a `cpu.max` file's quota allows, rounded up: "150000 100000" → 2; nil for "max 100000"
    /// (no quota) or anything else.
    static func processorLimit(cpuMax text: String) -> Int? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2 else { return nil }
        return processorLimit(quota: String(fields[0]), period: String(fields[1]))
    }

    /// The processors a quota of CPU time per period allows, rounded up; nil for no quota (v1's "-1", v2's "max").
    static func processorLimit(quota: String?, period: String?) -> Int? {
        func number(_ text: String?) -> Int? { text?.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } }
        guard let quota = number(quota), let period = number(period), quota > 0, period > 0 else { return nil }
        return max(1, (quota + period - 1) / period)
    }

    /// A file of `/proc` or `/sys` whole (they report no size, so it is read to its end).
    private static func readSmallFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            bytes += buffer[..<count]
            if count < buffer.count { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

