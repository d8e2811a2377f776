import Foundation
import HTTPTransport
import Testing

/// HTTPS: curl and openssl against a server with a certificate each test makes with the `openssl` command.
@Suite struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 and its key, in a folder of their own.
    struct Pair {
        let folder: URL
        let name: String
        var certificate: String { folder.appendingPathComponent("\(name).crt").path }
        var key: String { folder.appendingPathComponent("\(name).key").path }
        var configuration: TLSConfiguration { TLSConfiguration(certificateFile: certificate, keyFile: key) }

        /// Makes the pair; `algorithm` is an `openssl req -newkey` argument.
        init(in folder: URL, name: String, algorithm: [String] = ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]) throws {
            self.folder = folder
            self.name = name
            let result = try command("/usr/bin/openssl", ["req", "-x509", "-newkey"] + algorithm + [
                "-nodes", "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=\(name)",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ])
            guard result.status == 0 else { throw TLSTestError("openssl req failed: \(result.output)") }
        }
    }

    struct TLSTestError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// A fresh folder, removed when the test ends.
    static func withFolder<R>(_ body: (URL) throws -> R) throws -> R {
        // A client that hung up must fail a write to its pipe, not end the test process.
        signal(SIGPIPE, SIG_IGN)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }

    /// Runs a program to its end (bounded by `timeout` seconds); its exit status and standard output and error together.
    static func command(_ program: String, _ arguments: [String], input: String = "", timeout: Int = 10) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["\(timeout)", program] + arguments
        let output = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = standardInput
        try process.run()
        standardInput.fileHandleForWriting.write(Data(input.utf8))
        try standardInput.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// curl's status line for `url` trusting only `certificate`; "000" when no HTTP answer came.
    static func status(_ url: String, trusting certificate: String) throws -> String {
        try command("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "--cacert", certificate, url]).output
    }

    /// The peer certificate's subject and the protocol `openssl s_client` negotiated with `version` (e.g. `-tls1_2`).
    static func handshake(port: UInt16, version: String) throws -> (status: Int32, output: String) {
        try command("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", version,
                                         "-cipher", "DEFAULT@SECLEVEL=0", "-brief"], input: "", timeout: 5)
    }

    @Test func answersOverHTTPSWithTheGivenCertificateAndNotOverPlainHTTP() throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "first")
            try withServer(RecordingResponder(), configure: { $0.tls = pair.configuration }) { server throws in
                #expect(server.url.hasPrefix("https://"))
                #expect(try Self.status("https://127.0.0.1:\(server.port)/x", trusting: pair.certificate) == "200")
                let other = try Pair(in: folder, name: "other")
                #expect(try Self.status("https://127.0.0.1:\(server.port)/x", trusting: other.certificate) == "000")
                #expect(try Self.status("http://127.0.0.1:\(server.port)/x", trusting: pair.certificate) == "000")
            }
        }
    }

    @Test func servesAnRSAChainToo() throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "rsa", algorithm: ["rsa:2048"])
            try withServer(RecordingResponder(), configure: { $0.tls = pair.configuration }) { server throws in
                #expect(try Self.status("https://127.0.0.1:\(server.port)/x", trusting: pair.certificate) == "200")
            }
        }
    }

    @Test func negotiatesTLS12AndLaterOnly() throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "versions")
            try withServer(RecordingResponder(), configure: { $0.tls = pair.configuration }) { server throws in
                for refused in ["-tls1", "-tls1_1"] {
                    let result = try Self.handshake(port: server.port, version: refused)
                    #expect(result.status != 0, "\(refused): \(result.output)")
                    #expect(!result.output.contains("Protocol version: TLSv1"), "\(refused): \(result.output)")
                }
                for (accepted, protocolName) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
                    let result = try Self.handshake(port: server.port, version: accepted)
                    #expect(result.output.contains("Protocol version: \(protocolName)"), "\(accepted): \(result.output)")
                }
            }
        }
    }

    /// `openssl s_client -brief` offering only `suite` (a TLS 1.2 cipher list entry, or with `-tls1_3` a TLS 1.3
    /// cipher suite): the suite negotiated, nil when the handshake failed.
    static func negotiated(port: UInt16, suite: String, tls13: Bool = false) throws -> String? {
        let offer = tls13 ? ["-tls1_3", "-ciphersuites", suite] : ["-tls1_2", "-cipher", suite + "@SECLEVEL=0"]
        let result = try command("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-brief"] + offer,
                                 input: "", timeout: 5)
        guard result.status == 0, let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("Ciphersuite: ") }) else {
            return nil
        }
        return String(line.dropFirst("Ciphersuite: ".count))
    }

    /// What GnuTLS's `NORMAL` offered and Mozilla's intermediate profile does not: RSA key exchange (no forward
    /// secrecy), CBC with SHA-1 or SHA-256 MACs, AES-CCM. Each offered alone by the client, each refused.
    static let refusedSuites: [(suite: String, tls13: Bool)] = [
        ("AES256-SHA", false), ("AES128-SHA", false), ("AES128-GCM-SHA256", false), ("AES256-GCM-SHA384", false),
        ("ECDHE-RSA-AES128-SHA", false), ("ECDHE-RSA-AES256-SHA", false), ("ECDHE-RSA-AES128-SHA256", false),
        ("DHE-RSA-AES128-SHA", false), ("AES128-CCM", false), ("TLS_AES_128_CCM_SHA256", true),
    ]
    /// Mozilla's intermediate suites an RSA certificate serves (DHE needs a client offering FFDHE groups,
    /// which OpenSSL's does not on TLS 1.2).
    static let acceptedSuites: [(suite: String, tls13: Bool)] = [
        ("ECDHE-RSA-AES128-GCM-SHA256", false), ("ECDHE-RSA-AES256-GCM-SHA384", false), ("ECDHE-RSA-CHACHA20-POLY1305", false),
        ("TLS_AES_128_GCM_SHA256", true), ("TLS_AES_256_GCM_SHA384", true), ("TLS_CHACHA20_POLY1305_SHA256", true),
    ]

    @Test func offersOnlyForwardSecretAEADSuitesByDefault() throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "suites", algorithm: ["rsa:2048"])
            try withServer(RecordingResponder(), configure: { $0.tls = pair.configuration }) { server throws in
                for (suite, tls13) in Self.refusedSuites {
                    #expect(try Self.negotiated(port: server.port, suite: suite, tls13: tls13) == nil, "\(suite) was accepted")
                }
                for (suite, tls13) in Self.acceptedSuites {
                    #expect(try Self.negotiated(port: server.port, suite: suite, tls13: tls13) == suite, "\(suite) was refused")
                }
            }
        }
    }

    @Test func anECDSACertificateGetsTheECDSASuites() throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "ecdsa")
            try withServer(RecordingResponder(), configure: { $0.tls = pair.configuration }) { server throws in
                #expect(try Self.negotiated(port: server.port, suite: "ECDHE-ECDSA-AES128-GCM-SHA256") == "ECDHE-ECDSA-AES128-GCM-SHA256")
                #expect(try Self.negotiated(port: server.port, suite: "ECDHE-ECDSA-AES128-SHA") == nil)
            }
        }
    }

    /// An operator's priority string replaces the profile: GnuTLS's `NORMAL` takes `AES256-SHA` back.
    @Test func anOperatorsPriorityStringReplacesTheProfile() throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "normal", algorithm: ["rsa:2048"])
            var configuration = pair.configuration
            configuration.priorities = "NORMAL:-VERS-ALL:+VERS-TLS1.2"
            try withServer(RecordingResponder(), configure: { $0.tls = configuration }) { server throws in
                #expect(try Self.negotiated(port: server.port, suite: "AES256-SHA") == "AES256-SHA")
                #expect(try Self.negotiated(port: server.port, suite: "TLS_AES_128_GCM_SHA256", tls13: true) == nil)
            }
        }
    }

    @Test(arguments: [
        ("NORMAL:+NO-SUCH-THING", "is not one GnuTLS takes at '+NO-SUCH-THING'"),
        ("SECURE256:bogus", "is not one GnuTLS takes at 'bogus'"),
        ("", "is not one GnuTLS takes"),
        ("NORMAL:-CIPHER-ALL", "No or insufficient priorities were set"),
    ])
    func aBadPriorityStringStopsTheStart(_ priorities: String, _ reason: String) throws {
        try Self.withFolder { folder in
            let pair = try Pair(in: folder, name: "bad")
            var configuration = pair.configuration
            configuration.priorities = priorities
            let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 1, tls: configuration),
                                    responder: RecordingResponder())
            do throws(HTTPServerError) {
                try server.start()
                Issue.record("started with the priorities '\(priorities)'")
                server.shutdown()
            } catch {
                #expect(error.message.contains(reason), "\(error.message)")
                #expect(error.message.contains("cannot start the HTTPS server"), "\(error.message)")
            }
            #expect(server.port == 0)
        }
    }

    @Test func refusesToStartOnAnUnreadableOrMismatchedPair() throws {
        try Self.withFolder { folder in
            let first = try Pair(in: folder, name: "first")
            let second = try Pair(in: folder, name: "second")
            let cases: [(TLSConfiguration, String)] = [
                (TLSConfiguration(certificateFile: first.certificate, keyFile: second.key), "is not the key of the certificate"),
                (TLSConfiguration(certificateFile: folder.appendingPathComponent("none.crt").path, keyFile: first.key),
                 "cannot read the TLS certificate file"),
                (TLSConfiguration(certificateFile: first.certificate, keyFile: folder.appendingPathComponent("none.key").path),
                 "cannot read the TLS key file"),
                (TLSConfiguration(certificateFile: first.key, keyFile: first.key), "holds no usable PEM certificate chain"),
                (TLSConfiguration(certificateFile: first.certificate, keyFile: first.certificate), "holds no usable PEM private key"),
            ]
            for (configuration, reason) in cases {
                let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 1, tls: configuration),
                                        responder: RecordingResponder())
                do throws(HTTPServerError) {
                    try server.start()
                    Issue.record("started with \(configuration)")
                } catch {
                    #expect(error.message.contains(reason), "\(error.message)")
                    #expect(error.message.contains("cannot start the HTTPS server on 127.0.0.1:0"), "\(error.message)")
                }
                #expect(server.port == 0)
            }
        }
    }

    /// `openssl s_client` holding one keep-alive connection open, fed requests one at a time.
    final class OpenConnection: @unchecked Sendable {
        let process = Process()
        private let input = Pipe()
        private let lock = NSLock()
        private var received = ""

        init(port: UInt16, trusting certificate: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", certificate, "-verify_return_error", "-quiet"]
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = output
            output.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self else { return }
                lock.withLock { received += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
        }

        deinit {
            if process.isRunning { process.terminate() }
        }

        var text: String { lock.withLock { received } }

        /// Sends a request on the connection and waits for the `count`-th response to begin.
        func request(expectingResponse count: Int) -> Bool {
            input.fileHandleForWriting.write(Data("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
            return eventually(within: .seconds(5)) { text.components(separatedBy: "HTTP/1.1 200").count - 1 >= count }
        }
    }

    @Test func aReloadServesTheNewCertificateWhileAnOpenConnectionGoesOn() throws {
        try Self.withFolder { folder in
            let old = try Pair(in: folder, name: "old")
            let new = try Pair(in: folder, name: "new", algorithm: ["rsa:2048"])
            let served = try Pair(in: folder, name: "served")
            try FileManager.default.removeItem(atPath: served.certificate)
            try FileManager.default.removeItem(atPath: served.key)
            try FileManager.default.copyItem(atPath: old.certificate, toPath: served.certificate)
            try FileManager.default.copyItem(atPath: old.key, toPath: served.key)
            try withServer(RecordingResponder(), configure: { $0.tls = served.configuration }) { server in
                let url = "https://127.0.0.1:\(server.port)/x"
                let connection = try OpenConnection(port: server.port, trusting: old.certificate)
                #expect(connection.request(expectingResponse: 1), "\(connection.text)")

                // A broken pair is refused and the current one stays.
                try FileManager.default.removeItem(atPath: served.key)
                try FileManager.default.copyItem(atPath: new.key, toPath: served.key)
                #expect(throws: HTTPServerError.self) { try server.reloadCertificate() }
                #expect(try Self.status(url, trusting: old.certificate) == "200")

                try FileManager.default.removeItem(atPath: served.certificate)
                try FileManager.default.copyItem(atPath: new.certificate, toPath: served.certificate)
                try server.reloadCertificate()
                #expect(try Self.status(url, trusting: new.certificate) == "200")
                #expect(try Self.status(url, trusting: old.certificate) == "000")
                // The connection opened before the reload keeps working, on the same TLS session.
                #expect(connection.request(expectingResponse: 2), "\(connection.text)")
                #expect(connection.process.isRunning)
            }
        }
    }
}
