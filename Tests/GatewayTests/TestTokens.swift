import COpenSSL
import DAOValue
import Foundation
import JWT
import Testing

/// Keys made by the `openssl` command in a temporary folder, once per test
/// run, and JWTs signed with them by libcrypto: HS256, RS256, ES256, EdDSA.
final class TestKeys: @unchecked Sendable {
    static let shared = try! TestKeys()

    let folder: URL
    /// The HS256 secret file (32 random bytes).
    let secretFile: String
    /// PEM private keys by algorithm, and their public halves.
    private var privateKeys: [JWTAlgorithm: OpaquePointer] = [:]
    private(set) var publicPEM: [JWTAlgorithm: String] = [:]
    let secret: [UInt8]

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        secretFile = folder.appendingPathComponent("secret").path
        try Data(secret).write(to: URL(fileURLWithPath: secretFile))
        let generate: [JWTAlgorithm: [String]] = [
            .rs256: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
            .es256: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            .edDSA: ["-algorithm", "ED25519"],
        ]
        for (algorithm, options) in generate {
            let privatePath = folder.appendingPathComponent("\(algorithm.rawValue).pem").path
            let publicPath = folder.appendingPathComponent("\(algorithm.rawValue).pub.pem").path
            try Self.openssl(["genpkey"] + options + ["-out", privatePath])
            try Self.openssl(["pkey", "-in", privatePath, "-pubout", "-out", publicPath])
            let pem = try String(contentsOfFile: privatePath, encoding: .utf8)
            privateKeys[algorithm] = pem.withCString { text in
                let bio = BIO_new_mem_buf(text, -1)
                defer { BIO_free(bio) }
                return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
            }
            publicPEM[algorithm] = try String(contentsOfFile: publicPath, encoding: .utf8)
        }
    }

    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw OpenSSLFailed(arguments: arguments) }
    }

    /// A new file of `text` in the keys folder.
    func file(_ name: String, _ text: String) throws -> String {
        let path = folder.appendingPathComponent("\(UUID().uuidString)-\(name)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The public key as a JWK (RFC 7517), with `kid`.
    func jwk(_ algorithm: JWTAlgorithm, kid: String) -> String {
        let key = privateKeys[algorithm]!
        switch algorithm {
        case .hs256:
            return #"{"kty":"oct","kid":"\#(kid)","k":"\#(Self.base64URL(secret))"}"#
        case .rs256:
            func number(_ name: String) -> [UInt8] {
                var bn: OpaquePointer?
                EVP_PKEY_get_bn_param(key, name, &bn)
                defer { BN_free(bn) }
                var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(bn) + 7) / 8))
                BN_bn2bin(bn, &bytes)
                return bytes
            }
            return #"{"kty":"RSA","kid":"\#(kid)","n":"\#(Self.base64URL(number("n")))","e":"\#(Self.base64URL(number("e")))"}"#
        case .es256:
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            EVP_PKEY_get_octet_string_param(key, "pub", &point, 65, &length)
            return #"{"kty":"EC","crv":"P-256","kid":"\#(kid)","x":"\#(Self.base64URL(Array(point[1..<33])))","y":"\#(Self.base64URL(Array(point[33..<65])))"}"#
        case .edDSA:
            var raw = [UInt8](repeating: 0, count: 32)
            var length = 32
            EVP_PKEY_get_raw_public_key(key, &raw, &length)
            return #"{"kty":"OKP","crv":"Ed25519","kid":"\#(kid)","x":"\#(Self.base64URL(raw))"}"#
        }
    }

    /// A signed JWT: `claims` as given (add `exp` yourself), `header` members beside `alg`.
    func token(_ algorithm: JWTAlgorithm, _ claims: OrderedObject, header: OrderedObject = [:],
               alg: String? = nil, secret override: [UInt8]? = nil) -> String {
        var fullHeader: OrderedObject = ["alg": .string(alg ?? algorithm.rawValue), "typ": "JWT"]
        for (name, value) in header { fullHeader[name] = value }
        let input = Self.base64URL(Value.object(fullHeader).jsonBytes()) + "." + Self.base64URL(Value.object(claims).jsonBytes())
        return input + "." + Self.base64URL(sign(Array(input.utf8), algorithm, secret: override ?? secret))
    }

    func sign(_ input: [UInt8], _ algorithm: JWTAlgorithm, secret: [UInt8]) -> [UInt8] {
        if algorithm == .hs256 {
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            HMAC(EVP_sha256(), secret, Int32(secret.count), input, input.count, &digest, &length)
            return digest
        }
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestSignInit(context, nil, algorithm == .edDSA ? nil : EVP_sha256(), nil, privateKeys[algorithm]!)
        var length = 0
        EVP_DigestSign(context, nil, &length, input, input.count)
        var signature = [UInt8](repeating: 0, count: length)
        EVP_DigestSign(context, &signature, &length, input, input.count)
        signature = Array(signature.prefix(length))
        guard algorithm == .es256 else { return signature }
        // DER ECDSA-Sig-Value → JWS r‖s.
        var pointer: UnsafePointer<UInt8>? = signature.withUnsafeBufferPointer { $0.baseAddress }
        let parsed = signature.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            pointer = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &pointer, buffer.count)
        }
        defer { ECDSA_SIG_free(parsed) }
        var raw = [UInt8](repeating: 0, count: 64)
        raw.withUnsafeMutableBufferPointer { buffer in
            _ = BN_bn2binpad(ECDSA_SIG_get0_r(parsed), buffer.baseAddress, 32)
            _ = BN_bn2binpad(ECDSA_SIG_get0_s(parsed), buffer.baseAddress! + 32, 32)
        }
        return raw
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        String(Base64.encode(bytes).compactMap { character -> Character? in
            switch character {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: character
            }
        })
    }

    /// Seconds since 1970, now.
    static var now: Int64 { Int64(Date().timeIntervalSince1970) }
}

struct OpenSSLFailed: Error {
    let arguments: [String]
}
