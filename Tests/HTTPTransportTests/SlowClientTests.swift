import HTTPTransport
import Synchronization
import Testing

/// A flag one thread sets and another polls.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// Slowloris and trickling clients: a per-address connection limit and deadlines on a request's headers and body
/// that do not move when a byte arrives.
@Suite("Slow clients: connection limits and request deadlines")
struct SlowClientTests {
    /// Opens `count` connections from `source`, starts a request on each and keeps adding a header line to each
    /// every `interval`, until `stop` is set: a slowloris.
    private static func slowloris(port: UInt16, source: String, count: Int, interval: Duration,
                                  stop: Flag) -> BackgroundThread<Int> {
        BackgroundThread {
            var clients: [RawClient] = []
            for _ in 0..<count {
                guard let client = try? RawClient(port: port, source: source, timeout: 1) else { continue }
                if (try? client.send("GET /slow HTTP/1.1\r\nHost: x\r\n")) != nil { clients.append(client) }
            }
            var line = 0
            while !stop.isSet {
                sleep(for: interval)
                line += 1
                clients.removeAll { (try? $0.send("X-Line-\(line): trickle\r\n")) == nil }
            }
            return clients.count
        }
    }

    @Test func aSlowlorisAtThePerAddressLimitLeavesOthersAnswered() throws {
        let responder = RecordingResponder()
        try withServer(responder, configure: {
            $0.connectionLimit = 16
            $0.connectionsPerAddress = 4
            $0.headerTimeout = .seconds(30)
        }) { server in
            let stop = Flag()
            // More connections than the server takes in all, from one address.
            let attack = Self.slowloris(port: server.port, source: "127.0.0.2", count: 40, interval: .milliseconds(100), stop: stop)
            sleep(for: .milliseconds(800))
            for _ in 0..<5 {
                let start = ContinuousClock.now
                let client = try RawClient(port: server.port, timeout: 2)
                try client.send("GET /normal HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
                #expect(ContinuousClock.now - start < .seconds(1))
            }
            stop.set()
            // The server held no more of the attacker's connections than the limit.
            #expect(try attack.join() <= 4)
            #expect(responder.requests.allSatisfy { $0.path == "/normal" })
        }
    }

    @Test func trickledHeadersAreCutOffAtTheDeadline() throws {
        let responder = RecordingResponder()
        try withServer(responder, configure: { $0.headerTimeout = .seconds(1) }) { server in
            let client = try RawClient(port: server.port, timeout: 5)
            let start = ContinuousClock.now
            try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n")
            var line = 0
            // A byte every 50 ms: the idle timeout (30 s) would never fire.
            while (try? client.send("X-\(line): y\r\n")) != nil, ContinuousClock.now - start < .seconds(4) {
                line += 1
                sleep(for: .milliseconds(50))
            }
            let cut = ContinuousClock.now - start
            #expect(cut >= .milliseconds(900))
            #expect(cut < .milliseconds(2500))
            #expect(responder.requests.isEmpty)
        }
    }

    @Test func aTrickledBodyIsCutOffAtTheDeadline() throws {
        let responder = RecordingResponder()
        try withServer(responder, configure: { $0.bodyTimeout = .seconds(1) }) { server in
            let client = try RawClient(port: server.port, timeout: 5)
            try client.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            let start = ContinuousClock.now
            while (try? client.send("b")) != nil, ContinuousClock.now - start < .seconds(4) {
                sleep(for: .milliseconds(50))
            }
            let cut = ContinuousClock.now - start
            #expect(cut >= .milliseconds(900))
            #expect(cut < .milliseconds(2500))
            #expect(responder.requests.isEmpty)
            #expect(eventually { server.inFlightRequests == 0 })
        }
    }

    /// The deadlines bound the client, not the server: a slow answer is not cut, and each request on a
    /// keep-alive connection has its own deadline, from the end of the previous response.
    @Test func aSlowAnswerAndAKeepAliveConnectionAreNotCut() throws {
        let responder = RecordingResponder { request in
            if request.path == "/slow-answer" { sleep(for: .milliseconds(1500)) }
            return HTTPResponse(status: 200)
        }
        try withServer(responder, configure: { $0.headerTimeout = .seconds(1); $0.bodyTimeout = .seconds(1) }) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /slow-answer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            #expect(try client.readResponse().status == 200)
            for _ in 0..<3 {
                sleep(for: .milliseconds(600))
                try client.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
            }
            // Idle past the header deadline: closed.
            let idle = ContinuousClock.now
            #expect(client.waitForClose())
            #expect(ContinuousClock.now - idle < .milliseconds(2500))
        }
    }

    @Test(arguments: [
        (16, 17, "connectionsPerAddress"),
        (16, -1, "connectionsPerAddress"),
    ])
    func perAddressLimitIsCheckedAgainstTheTotal(total: Int, perAddress: Int, field: String) {
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, threads: 2, connectionLimit: total,
                                                                       connectionsPerAddress: perAddress),
                                responder: RecordingResponder())
        #expect(throws: HTTPServerError.self) { try server.start() }
        do {
            try server.start()
        } catch {
            #expect(error.message.contains(field))
        }
    }
}
