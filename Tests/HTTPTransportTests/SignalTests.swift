#if canImport(Glibc)
import Glibc
#endif
import HTTPTransport
import Testing

@Suite("Termination signals")
struct SignalTests {
    @Test func blockedSignalIsReceivedBySigwait() {
        var previous = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        HTTPServer.blockTerminationSignals()
        pthread_kill(pthread_self(), SIGINT)
        #expect(HTTPServer.waitForTerminationSignal() == SIGINT)
        pthread_kill(pthread_self(), SIGTERM)
        #expect(HTTPServer.waitForTerminationSignal() == SIGTERM)
    }
}
