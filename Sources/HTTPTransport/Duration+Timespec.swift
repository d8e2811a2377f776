#if canImport(Glibc)
import Glibc
#endif

extension timespec {
    /// `duration` (zero or more) as `nanosleep` takes it: whole seconds, and the nanoseconds beyond them.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    }
}
