import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Gateway
import HTTPTransport

/// The gateway in-process, without sockets: what one request costs in
/// daogate's own code (routing, headers, the store, JSON), for the routes
/// `bench/run http` loads: Demo's getItem, a KV get and a memory-cache get,
/// each by one of 1,000 keys in turn, for one user.
struct GatewayBenchmark {
    let modules: String

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-bench-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let demo = try ModuleLoader.load(file: modules + "/Demo.xml")
        let engine = try Engine(modules: [demo], configuration: Engine.Configuration(dataDirectory: directory, cipher: Cipher(key: .generate())))
        defer { engine.shutdown() }
        let gateway = try Gateway(engine: engine, events: EventLog(), configuration: GatewayConfiguration(accessLog: false))
        let user = [(name: "X-User-Id", value: "bench-user")]
        let json = [(name: "Content-Type", value: "application/json")]
        func send(_ method: String, _ path: String, _ body: String = "", headers: [(name: String, value: String)]) -> HTTPResponse {
            gateway.respond(to: HTTPRequest(method: method, path: path, query: [], headers: headers, body: Array(body.utf8)))
        }
        let rows = 1_000
        _ = send("PUT", "/lru/memory/user/bench", #"{"capacity": 1000}"#, headers: user + json)
        for row in 1...rows {
            _ = send("POST", "/dao/Demo/insertItem", #"["content of row \#(row)"]"#, headers: json)
            _ = send("PUT", "/kv/user/bench/k\(row)", #"{"value": "content of row \#(row)"}"#, headers: user + json)
            _ = send("PUT", "/lru/memory/user/bench/entries/k\(row)", #"{"value": "content of row \#(row)"}"#, headers: user + json)
        }
        let getItems = (1...rows).map { HTTPRequest(method: "POST", path: "/dao/Demo/getItem", query: [], headers: json, body: Array("[\($0)]".utf8)) }
        let kvGets = (1...rows).map { HTTPRequest(method: "GET", path: "/kv/user/bench/k\($0)", query: [], headers: user, body: []) }
        let lruGets = (1...rows).map { HTTPRequest(method: "GET", path: "/lru/memory/user/bench/entries/k\($0)", query: [], headers: user, body: []) }
        for (name, requests) in [("POST /dao/Demo/getItem", getItems), ("GET /kv/user/bench/k<n>", kvGets),
                                 ("GET /lru/memory/user/bench/entries/k<n>", lruGets)] {
            var index = 0
            let rate = measure(iterations: 100_000) {
                let response = gateway.respond(to: requests[index])
                precondition(response.status == 200, "\(name): \(response.status)")
                index = (index + 1) % requests.count
            }
            print("\(name): \(Int(rate)) requests/s on one thread, \(String(format: "%.2f", 1e6 / rate)) µs each")
        }
    }
}
