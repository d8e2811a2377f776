import Foundation
import Testing

/// `daogate serve --auth jwt` for real: tokens minted by `scripts/mint-token`,
/// curl, key rotation under a Python load loop, and the refusal to serve
/// beyond loopback without a mode.
@Suite struct AuthLiveTests {
    static let mintToken = LiveServer.root.appendingPathComponent("scripts/mint-token").path

    static func secret(in folder: URL, _ name: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func mint(_ secretFile: String, _ user: String, _ extra: [String] = []) throws -> String {
        try run("/usr/bin/python3", [mintToken, "--secret-file", secretFile, "--sub", user] + extra)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aTokenBindsTheCallerAndEveryRefusalIsA401WithItsCode() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = try Self.secret(in: folder, "jwt.secret")
        let server = try LiveServer(arguments: ["--auth", "jwt", "--jwt-admin-claim", "role=admin"],
                                    environment: ["DAOGATE_JWT_SECRET_FILE": secret])
        let ann = try Self.mint(secret, "ann")
        let put = try server.curl("/kv/user/biz/k", method: "PUT", body: #"{"value": "ann's"}"#, headers: ["Authorization: Bearer \(ann)"])
        #expect(put.status == 200)
        #expect(try server.curl("/kv/user/biz/k", headers: ["Authorization: Bearer \(ann)", "X-User-Id: ann"]).json?["value"] as? String == "ann's")

        let missing = try server.curl("/kv/user/biz/k", headers: ["X-User-Id: ann"])
        #expect(missing.status == 401)
        #expect(missing.code == "token_missing")
        #expect(missing.headers["www-authenticate"] == #"Bearer realm="daogate", error="invalid_token""#)
        let spoofed = try server.curl("/kv/user/biz/k", headers: ["Authorization: Bearer \(ann)", "X-User-Id: bob"])
        #expect(spoofed.status == 403)
        #expect(spoofed.code == "user_mismatch")
        let expired = try Self.mint(secret, "ann", ["--ttl", "-100"])
        #expect(try server.curl("/kv/user/biz/k", headers: ["Authorization: Bearer \(expired)"]).code == "token_expired")
        let other = try Self.mint(try Self.secret(in: folder, "other.secret"), "ann")
        #expect(try server.curl("/kv/user/biz/k", headers: ["Authorization: Bearer \(other)"]).code == "token_bad_signature")
        #expect(try server.curl("/storages", headers: ["Authorization: Bearer \(ann)"]).code == "admin_claim_required")
        let admin = try Self.mint(secret, "root", ["--claim", "role=admin"])
        #expect(try server.curl("/storages", headers: ["Authorization: Bearer \(admin)"]).status == 200)
        #expect(try server.curl("/healthz").status == 200)
        #expect(!server.log.contains(ann), "the token never appears in the log")
    }

    /// Tokens of the old key keep working while the JWKS gains a new key
    /// (SIGHUP, then a file change), under a load loop that counts every answer.
    @Test func keyRotationUnderLoadLosesNoRequest() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-rotate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = try Self.secret(in: folder, "old.secret"), new = try Self.secret(in: folder, "new.secret")
        func jwk(_ file: String, _ kid: String) throws -> String {
            let k = try Data(contentsOf: URL(fileURLWithPath: file)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            return #"{"kty": "oct", "kid": "\#(kid)", "k": "\#(k)"}"#
        }
        let jwks = folder.appendingPathComponent("jwks.json").path
        try #"{"keys": [\#(try jwk(old, "old"))]}"#.write(toFile: jwks, atomically: true, encoding: .utf8)
        let server = try LiveServer(arguments: ["--auth", "jwt", "--jwt-keys", jwks])
        let token = try Self.mint(old, "ann", ["--kid", "old"])

        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        load.arguments = ["-c", """
            import http.client, sys, time
            connection = http.client.HTTPConnection("127.0.0.1", \(server.port), timeout=10)
            counts = {}
            end = time.time() + 4
            while time.time() < end:
                connection.request("GET", "/kv/user/biz/missing", headers={"Authorization": "Bearer \(token)"})
                response = connection.getresponse()
                response.read()
                counts[response.status] = counts.get(response.status, 0) + 1
            print(" ".join(f"{status}:{count}" for status, count in sorted(counts.items())))
            """]
        let output = Pipe()
        load.standardOutput = output
        try load.run()
        Thread.sleep(forTimeInterval: 0.5)
        // The rotation: old and new overlap, by SIGHUP, then by the file changing alone.
        try #"{"keys": [\#(try jwk(new, "new")), \#(try jwk(old, "old"))]}"#.write(toFile: jwks, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        Thread.sleep(forTimeInterval: 1)
        try #"{"keys": [\#(try jwk(old, "old")), \#(try jwk(new, "new"))]}"#.write(toFile: jwks, atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 1.5)
        let counts = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        load.waitUntilExit()
        // Every answer is the 404 of a missing key: none was refused, none failed.
        #expect(counts.hasPrefix("404:") && !counts.contains(" "), "\(counts)")
        #expect(server.log.contains("SIGHUP: 2 JWT keys loaded"), "\(server.log)")
        #expect(server.log.contains("a JWT key file changed: 2 JWT keys loaded"), "\(server.log)")
        let fresh = try Self.mint(new, "ann", ["--kid", "new"])
        #expect(try server.curl("/kv/user/biz/missing", headers: ["Authorization: Bearer \(fresh)"]).code == "key_not_found")
        let unknown = try Self.mint(new, "ann", ["--kid", "retired"])
        #expect(try server.curl("/kv/user/biz/missing", headers: ["Authorization: Bearer \(unknown)"]).code == "token_unknown_key")
    }

    /// Runs `daogate serve` with `arguments`, expecting it to refuse to start; returns its exit status and message.
    static func refusedStart(_ arguments: [String]) throws -> (status: Int32, message: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LiveServer.binary)
        process.currentDirectoryURL = LiveServer.root
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-refused-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        process.arguments = ["serve", "--port", "0", "--data", data.path] + arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DAOGATE_") }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, message)
    }

    @Test func inconsistentAuthSettingsRefuseToStart() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let short = folder.appendingPathComponent("short").path
        try Data("too short".utf8).write(to: URL(fileURLWithPath: short))
        for (arguments, expected) in [
            (["--auth", "jwt"], "needs keys"),
            (["--jwt-secret-file", short], "with --auth jwt only"),
            (["--auth", "jwt", "--jwt-secret-file", short], "at least 32 bytes"),
            (["--auth", "jwt", "--jwt-keys", short], "no PEM public key"),
            (["--auth", "basic"], "jwt or trusted-header"),
            (["--auth", "jwt", "--jwt-secret-file", short, "--jwt-admin-claim", "admin"], "NAME=VALUE"),
        ] {
            let (status, message) = try Self.refusedStart(arguments)
            #expect(status != 0, "\(arguments)")
            #expect(message.contains(expected), "\(arguments): \(message)")
        }
    }

    @Test func servingBeyondLoopbackNeedsAModeAndNamesBoth() throws {
        let (status, message) = try Self.refusedStart(["--host", "0.0.0.0"])
        #expect(status != 0)
        #expect(message.contains("--auth jwt") && message.contains("--auth trusted-header"), "\(message)")
        // With a mode it serves (here on every address, answered on loopback).
        let server = try LiveServer(arguments: ["--host", "0.0.0.0", "--auth", "trusted-header"])
        #expect(try server.curl("/healthz").status == 200)
    }
}
