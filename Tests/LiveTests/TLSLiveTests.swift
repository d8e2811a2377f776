import Foundation
import Testing

/// `daogate serve --tls-cert --tls-key`: HTTPS, SIGHUP reloads, and no start on a wrong pair.
@Suite struct TLSLiveTests {
    /// Makes a self-signed certificate for 127.0.0.1 and its key at `name`.crt and `name`.key in `folder`.
    static func makePair(_ folder: URL, _ name: String) throws -> (certificate: String, key: String) {
        let certificate = folder.appendingPathComponent("\(name).crt").path
        let key = folder.appendingPathComponent("\(name).key").path
        try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                     "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=\(name)",
                                     "-addext", "subjectAltName=IP:127.0.0.1"])
        guard FileManager.default.fileExists(atPath: certificate) else { throw LiveError("openssl made no certificate") }
        return (certificate, key)
    }

    static func replace(_ path: String, with source: String) throws {
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: source, toPath: path)
    }

    /// A fresh folder for the certificates, removed when the test ends.
    static func withFolder(_ body: (URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-tls-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(folder)
    }

    @Test func servesHTTPSAndReloadsTheCertificateOnSIGHUP() throws {
        try Self.withFolder { folder in
            let old = try Self.makePair(folder, "old")
            let new = try Self.makePair(folder, "new")
            let served = (certificate: folder.appendingPathComponent("served.crt").path, key: folder.appendingPathComponent("served.key").path)
            try FileManager.default.copyItem(atPath: old.certificate, toPath: served.certificate)
            try FileManager.default.copyItem(atPath: old.key, toPath: served.key)

            let server = try LiveServer(arguments: ["--tls-cert", served.certificate],
                                        environment: ["DAOGATE_TLS_KEY": served.key], trustedCertificate: old.certificate)
            #expect(server.base.hasPrefix("https://"))
            let stored = try server.curl("/dao/Demo/insertItem", method: "POST", body: #"["over TLS"]"#)
            #expect(stored.status == 200, "\(stored.body)")

            // A mismatched pair on disk: SIGHUP keeps the current one and says why.
            try Self.replace(served.key, with: new.key)
            kill(server.process.processIdentifier, SIGHUP)
            #expect(eventually { server.log.contains("kept the current TLS certificate") }, "\(server.log)")
            #expect(try server.curl("/healthz").status == 200)

            try Self.replace(served.certificate, with: new.certificate)
            kill(server.process.processIdentifier, SIGHUP)
            #expect(eventually { server.log.contains("reloaded the TLS certificate") }, "\(server.log)")
            server.trustedCertificate = new.certificate
            #expect(try server.curl("/healthz").status == 200)
            server.trustedCertificate = old.certificate
            #expect(throws: LiveError.self) { try server.curl("/healthz") }
            #expect(server.process.isRunning)
            #expect(server.stop() == 0)
        }
    }

    /// The suite `openssl s_client` negotiated offering only `suite` (TLS 1.2, or TLS 1.3 with `tls13`); nil when refused.
    static func negotiated(_ server: LiveServer, _ suite: String, tls13: Bool = false) throws -> String? {
        let offer = tls13 ? ["-tls1_3", "-ciphersuites", suite] : ["-tls1_2", "-cipher", suite + "@SECLEVEL=0"]
        // -brief reports on standard error.
        let command = (["timeout", "5", "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-brief"] + offer).joined(separator: " ")
        let output = try run("/bin/sh", ["-c", command + " 2>&1"], input: "")
        return output.split(separator: "\n").first { $0.hasPrefix("Ciphersuite: ") }.map { String($0.dropFirst("Ciphersuite: ".count)) }
    }

    /// The default profile refuses what has no forward secrecy or no AEAD, as `openssl s_client` offering each
    /// alone sees it; `--tls-priorities` (or `DAOGATE_TLS_PRIORITIES`) replaces it; a bad string does not start.
    @Test func theDefaultProfileRefusesSuitesWithoutForwardSecrecyAndTheOptionReplacesIt() throws {
        try Self.withFolder { folder in
            let certificate = folder.appendingPathComponent("rsa.crt").path
            let key = folder.appendingPathComponent("rsa.key").path
            try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                         "-days", "1", "-subj", "/CN=rsa", "-addext", "subjectAltName=IP:127.0.0.1"])
            let server = try LiveServer(arguments: ["--tls-cert", certificate, "--tls-key", key], trustedCertificate: certificate)
            for suite in ["AES256-SHA", "AES128-SHA", "AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA"] {
                #expect(try Self.negotiated(server, suite) == nil, "\(suite) was accepted")
            }
            #expect(try Self.negotiated(server, "TLS_AES_128_CCM_SHA256", tls13: true) == nil)
            for suite in ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"] {
                #expect(try Self.negotiated(server, suite) == suite, "\(suite) was refused")
            }
            #expect(try Self.negotiated(server, "TLS_AES_256_GCM_SHA384", tls13: true) == "TLS_AES_256_GCM_SHA384")
            #expect(try server.curl("/healthz").status == 200)
            #expect(server.stop() == 0)

            let legacy = try LiveServer(arguments: ["--tls-cert", certificate, "--tls-key", key],
                                        environment: ["DAOGATE_TLS_PRIORITIES": "NORMAL:-VERS-ALL:+VERS-TLS1.2"],
                                        trustedCertificate: certificate)
            #expect(try Self.negotiated(legacy, "AES256-SHA") == "AES256-SHA")
            #expect(legacy.stop() == 0)

            let dataKey = folder.appendingPathComponent("daogate.key")
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: dataKey)
            let common = ["--data", folder.appendingPathComponent("data").path, "--port", "0", "--key-file", dataKey.path]
            let cases: [([String], String)] = [
                (["--tls-cert", certificate, "--tls-key", key, "--tls-priorities", "NORMAL:+AES-512-GCM"],
                 "is not one GnuTLS takes at '+AES-512-GCM'"),
                (["--tls-priorities", "NORMAL"], "--tls-priorities (DAOGATE_TLS_PRIORITIES) needs --tls-cert and --tls-key"),
            ]
            for (arguments, message) in cases {
                let (status, output) = try LiveServer.refusal(common + arguments)
                #expect(status != 0, "\(arguments): \(output)")
                #expect(output.contains(message), "\(arguments): \(output)")
                #expect(!output.contains("listening"), "\(output)")
            }
        }
    }

    @Test func refusesToStartOnAMismatchedPairOrAHalfOne() throws {
        try Self.withFolder { folder in
            let first = try Self.makePair(folder, "first")
            let second = try Self.makePair(folder, "second")
            let key = folder.appendingPathComponent("daogate.key")
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: key)
            let cases: [([String], String)] = [
                (["--tls-cert", first.certificate, "--tls-key", second.key], "is not the key of the certificate"),
                (["--tls-cert", folder.appendingPathComponent("missing.crt").path, "--tls-key", first.key], "cannot read the TLS certificate file"),
                (["--tls-cert", first.certificate], "--tls-cert needs --tls-key"),
            ]
            for (arguments, message) in cases {
                let (status, output) = try LiveServer.refusal(
                    ["--data", folder.appendingPathComponent("data").path, "--port", "0", "--key-file", key.path] + arguments)
                #expect(status != 0, "\(arguments): \(output)")
                #expect(output.contains(message), "\(arguments): \(output)")
                #expect(!output.contains("listening"), "\(output)")
            }
        }
    }
}

/// Polls `condition` for up to 10 s.
private func eventually(_ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(10)
    while !condition() {
        guard Date() < deadline else { return false }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return true
}
