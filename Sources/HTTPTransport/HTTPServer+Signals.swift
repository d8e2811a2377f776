#if canImport(Glibc)
import Glibc
#endif

extension HTTPServer {
    /// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (call before `start()`, so worker threads inherit
    /// the mask), so `waitForTerminationSignal` and `waitForSignal` can receive them.
    public static func blockTerminationSignals() {
        var signals = handledSignals(reload: true)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Waits for SIGTERM or SIGINT, calling `onHangup` at each SIGHUP meanwhile
    /// (a reload); returns the terminating signal's number.
    public static func waitForTerminationSignal(onHangup: () -> Void) -> Int32 {
        while true {
            let signal = waitForSignal()
            guard signal == reloadSignal else { return signal }
            onHangup()
        }
    }

    /// Waits (sigwait) for SIGTERM, SIGINT or SIGHUP; returns the signal number.
    ///
    /// The signals must be blocked in every thread (`blockTerminationSignals()`
    /// first), or one may end the process before it is waited for.
    public static func waitForTerminationSignal() -> Int32 {
        wait(for: handledSignals(reload: false))
    }

    /// Waits (sigwait) for SIGTERM, SIGINT or SIGHUP (`reloadSignal`); returns the signal number.
    public static func waitForSignal() -> Int32 {
        wait(for: handledSignals(reload: true))
    }

    /// The signal that asks a running server to read its files again (the TLS certificate and key).
    public static let reloadSignal = SIGHUP

    private static func wait(for signals: sigset_t) -> Int32 {
        var signals = signals
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        return received
    }

    private static func handledSignals(reload: Bool) -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        if reload { sigaddset(&signals, SIGHUP) }
        return signals
    }
}
