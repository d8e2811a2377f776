import CJemalloc
#if canImport(Glibc)
import Glibc
#endif

/// The allocator serving the process's `malloc`: jemalloc, linked into the executable (`CJemalloc`), unless a
/// library loaded ahead of it (an `LD_PRELOAD`) took `malloc` over. The start-up log says which.
enum MemoryAllocator {
    /// What the start-up log says: `jemalloc VERSION (FILE)`, or the file whose `malloc` serves the process
    /// instead, `warning` then true.
    static func startUpLine() -> (text: String, warning: Bool) {
        let malloc = file(of: "malloc") ?? "an unknown file"
        guard let version = jemallocVersion(), file(of: "mallctl") == malloc else {
            return ("malloc from \(malloc), not jemalloc's (the allocator daogate is built and measured with)", true)
        }
        return ("jemalloc \(version) (\(malloc))", false)
    }

    /// jemalloc's version as it reports it ("5.3.0-0-g…"); nil if it does not answer.
    private static func jemallocVersion() -> String? {
        var version: UnsafePointer<CChar>?
        var size = MemoryLayout<UnsafePointer<CChar>?>.size
        guard mallctl("version", &version, &size, nil, 0) == 0, let version else { return nil }
        return String(cString: version)
    }

    /// The file of the object the dynamic linker resolves `symbol` to for the whole process (`RTLD_DEFAULT`).
    private static func file(of symbol: String) -> String? {
        guard let address = dlsym(nil, symbol) else { return nil }
        var info = daogate_dl_info()
        guard daogate_dladdr(address, &info) != 0, let name = info.dli_fname else { return nil }
        return String(cString: name)
    }
}
