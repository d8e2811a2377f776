#if canImport(Glibc)
import Glibc
#endif

extension timespec {
    /// `duration` as `nanosleep` takes it (a duration below zero is not one to give).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    }
}
