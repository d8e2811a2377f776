import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Gateway
import HTTPTransport
import JWT

/// `--auth jwt` against trusted-header, in-process: Demo's getItem by one of
/// 1,000 keys with a remembered token against the same call naming the user
/// in `X-User-Id`, in interleaved rounds; then what a first (not remembered)
/// verification costs per algorithm. Keys and signatures come from the
/// `openssl` command.
struct AuthBenchmark {
    let modules: String

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-bench-auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = try BenchKeys(folder: directory)
        let demo = try ModuleLoader.load(file: modules + "/Demo.xml")
        let engine = try Engine(modules: [demo], configuration: Engine.Configuration(dataDirectory: directory.appendingPathComponent("data").path))
        defer { engine.shutdown() }
        let plain = try Gateway(engine: engine, events: EventLog(), configuration: GatewayConfiguration(accessLog: false))
        let verifier = try JWTVerifier(settings: JWTSettings(secretFile: keys.secretFile))
        let jwt = try Gateway(engine: engine, events: EventLog(), configuration: GatewayConfiguration(accessLog: false, authentication: .jwt(verifier)))
        let json = [(name: "Content-Type", value: "application/json")]
        let token = try keys.token(.hs256, user: "bench-user")
        let rows = 1_000
        for row in 1...rows {
            _ = plain.respond(to: HTTPRequest(method: "POST", path: "/dao/Demo/insertItem", query: [], headers: json,
                                              body: Array(#"["content of row \#(row)"]"#.utf8)))
        }
        func getItems(_ headers: [(name: String, value: String)]) -> [HTTPRequest] {
            (1...rows).map { HTTPRequest(method: "POST", path: "/dao/Demo/getItem", query: [], headers: json + headers, body: Array("[\($0)]".utf8)) }
        }
        let trusted = getItems([(name: "X-User-Id", value: "bench-user")])
        let bearer = getItems([(name: "Authorization", value: "Bearer \(token)")])
        var rates: [String: [Double]] = [:]
        for _ in 0..<5 {
            for (name, gateway, requests) in [("trusted-header", plain, trusted), ("jwt, remembered token", jwt, bearer)] {
                var index = 0
                let rate = measure(rounds: 3, iterations: 30_000) {
                    let response = gateway.respond(to: requests[index])
                    precondition(response.status == 200, "\(name): \(response.status)")
                    index = (index + 1) % requests.count
                }
                rates[name, default: []].append(rate)
            }
        }
        let plainRate = median(rates["trusted-header"]!), jwtRate = median(rates["jwt, remembered token"]!)
        print("POST /dao/Demo/getItem, trusted-header: \(Int(plainRate)) requests/s on one thread")
        print("POST /dao/Demo/getItem, jwt with a remembered token: \(Int(jwtRate)) requests/s, \(String(format: "%.3f", jwtRate / plainRate)) × trusted-header")

        for algorithm in JWTAlgorithm.allCases {
            let settings = algorithm == .hs256 ? JWTSettings(secretFile: keys.secretFile, cacheCapacity: 0)
                : JWTSettings(keysFile: keys.publicKeyFile[algorithm]!, cacheCapacity: 0)
            let uncached = try JWTVerifier(settings: settings)
            let signed = try keys.token(algorithm, user: "bench-user")
            let rate = try measure(iterations: algorithm == .hs256 ? 20_000 : 2_000) { consume(try uncached.verify(signed)) }
            print("first verification, \(algorithm.rawValue): \(String(format: "%.1f", 1e6 / rate)) µs")
        }
    }
}

/// Keys made with the `openssl` command, and tokens it signs.
struct BenchKeys {
    let folder: URL
    let secretFile: String
    var privateKeyFile: [JWTAlgorithm: String] = [:]
    var publicKeyFile: [JWTAlgorithm: String] = [:]

    init(folder: URL) throws {
        self.folder = folder
        secretFile = folder.appendingPathComponent("secret").path
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: secretFile))
        for (algorithm, options) in [(JWTAlgorithm.rs256, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                                     (.es256, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                                     (.edDSA, ["-algorithm", "ED25519"])] {
            let privatePath = folder.appendingPathComponent("\(algorithm.rawValue).pem").path
            let publicPath = folder.appendingPathComponent("\(algorithm.rawValue).pub.pem").path
            _ = try Self.openssl(["genpkey"] + options + ["-out", privatePath])
            _ = try Self.openssl(["pkey", "-in", privatePath, "-pubout", "-out", publicPath])
            privateKeyFile[algorithm] = privatePath
            publicKeyFile[algorithm] = publicPath
        }
    }

    @discardableResult
    static func openssl(_ arguments: [String]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw OpenSSLFailed(command: arguments.first ?? "") }
        return [UInt8](data)
    }

    func token(_ algorithm: JWTAlgorithm, user: String) throws -> String {
        func base64URL(_ bytes: [UInt8]) -> String {
            Base64.encode(bytes).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = #"{"alg":"\#(algorithm.rawValue)","typ":"JWT"}"#
        let claims = #"{"sub":"\#(user)","exp":\#(Int(Date().timeIntervalSince1970) + 3600)}"#
        let input = base64URL(Array(header.utf8)) + "." + base64URL(Array(claims.utf8))
        let inputFile = folder.appendingPathComponent("input-\(UUID().uuidString)").path
        try Data(input.utf8).write(to: URL(fileURLWithPath: inputFile))
        var signature: [UInt8]
        switch algorithm {
        case .hs256:
            let secret = try Data(contentsOf: URL(fileURLWithPath: secretFile)).map { String(format: "%02x", $0) }.joined()
            signature = try Self.openssl(["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(secret)", "-binary", inputFile])
        case .rs256, .es256:
            signature = try Self.openssl(["dgst", "-sha256", "-sign", privateKeyFile[algorithm]!, "-binary", inputFile])
            if algorithm == .es256 { signature = Self.rawECDSA(signature) }
        case .edDSA:
            signature = try Self.openssl(["pkeyutl", "-sign", "-rawin", "-inkey", privateKeyFile[algorithm]!, "-in", inputFile])
        }
        return input + "." + base64URL(signature)
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }` → JWS r‖s, 32 bytes each.
    static func rawECDSA(_ der: [UInt8]) -> [UInt8] {
        var index = 2
        var raw: [UInt8] = []
        for _ in 0..<2 {
            let length = Int(der[index + 1])
            let value = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
            raw += [UInt8](repeating: 0, count: 32 - value.count) + value
            index += 2 + length
        }
        return raw
    }
}

struct OpenSSLFailed: Error {
    let command: String
}
