#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Synchronization

/// Where an HTTPS server's certificate chain and private key are (PEM files), read at start and again on `reloadCertificate()`.
public struct TLSConfiguration: Sendable {
    /// The certificate, then any intermediate certificates, in PEM.
    public var certificateFile: String
    /// The private key of the first certificate, in PEM (unencrypted).
    public var keyFile: String

    /// GnuTLS's priority string: the protocol versions, key exchanges and
    /// ciphers a handshake may use (`defaultPriorities` unless the operator
    /// names another).
    public var priorities: String

    public init(certificateFile: String, keyFile: String, priorities: String = TLSConfiguration.defaultPriorities) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.priorities = priorities
    }

    /// Mozilla's "intermediate" profile (the one nginx's and HAProxy's
    /// generated configurations use) as a GnuTLS priority string: TLS 1.3,
    /// and TLS 1.2 with forward secrecy (ECDHE or DHE key exchange) and an
    /// AEAD cipher (AES-GCM, ChaCha20-Poly1305) only. GnuTLS's `NORMAL` alone
    /// also offers RSA key exchange (no forward secrecy: `AES128-SHA`,
    /// `AES256-SHA`), CBC with SHA-1 MACs and AES-CCM.
    public static let defaultPriorities = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
        + ":-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD"
        + ":-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA"

    /// Checks a priority string as GnuTLS reads it: the error names the
    /// position GnuTLS stopped at, or says that the string leaves no cipher
    /// suite to offer.
    public static func checkPriorities(_ priorities: String) throws(HTTPServerError) {
        var cache: gnutls_priority_t?
        var position: Int?
        let result = priorities.withCString { text -> Int32 in
            var stop: UnsafePointer<CChar>?
            let result = gnutls_priority_init(&cache, text, &stop)
            // `stop` points into `text`: its offset, while `text` lives.
            if result != GNUTLS_E_SUCCESS, let stop { position = text.distance(to: stop) }
            return result
        }
        defer { if let cache { gnutls_priority_deinit(cache) } }
        let quoted = "'\(priorities.prefix(200))'"
        guard result == GNUTLS_E_SUCCESS, let cache else {
            let reason = gnutls_strerror(result).map { String(cString: $0) } ?? "GnuTLS error \(result)"
            let place = position.map { " at '\(String(decoding: priorities.utf8.dropFirst($0).prefix(40), as: UTF8.self))'" } ?? ""
            throw HTTPServerError(message: "the TLS priority string \(quoted) is not one GnuTLS takes\(place): \(reason)")
        }
        // Indices GnuTLS does not implement answer an error of their own; the end answers "not available".
        var index: UInt32 = 0
        for position in UInt32(0)... {
            let found = gnutls_priority_get_cipher_suite_index(cache, position, &index)
            if found == GNUTLS_E_SUCCESS { return }
            if found == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE { break }
        }
        throw HTTPServerError(message: "the TLS priority string \(quoted) leaves no cipher suite to offer")
    }
}

/// A certificate chain and its private key as GnuTLS presents them, checked to belong together.
///
/// GnuTLS does not take ownership of what the certificate callback hands it, and
/// a handshake may still be using a replaced pair: a store keeps every pair it
/// loaded until its server has stopped.
final class TLSCredentials: @unchecked Sendable {
    static let maximumChainLength: UInt32 = 16

    let chain: UnsafeMutablePointer<gnutls_pcert_st>
    let chainLength: UInt32
    let key: gnutls_privkey_t

    /// Reads both files; the error says which file is wrong and how (unreadable, not PEM, a key of another certificate).
    init(_ configuration: TLSConfiguration) throws(HTTPServerError) {
        let certificateText = try Self.read(configuration.certificateFile, what: "TLS certificate")
        let keyText = try Self.read(configuration.keyFile, what: "TLS key")

        let chain = UnsafeMutablePointer<gnutls_pcert_st>.allocate(capacity: Int(Self.maximumChainLength))
        var chainLength = Self.maximumChainLength
        let imported = certificateText.withUnsafeBufferPointer { bytes in
            var datum = gnutls_datum_t(data: UnsafeMutablePointer(mutating: bytes.baseAddress), size: UInt32(bytes.count))
            return gnutls_pcert_list_import_x509_raw(chain, &chainLength, &datum, GNUTLS_X509_FMT_PEM, 0)
        }
        guard imported == GNUTLS_E_SUCCESS, chainLength > 0 else {
            chain.deallocate()
            let reason = imported == GNUTLS_E_SUCCESS ? "no certificate in it" : Self.reason(imported)
            throw HTTPServerError(message: "the TLS certificate file \(configuration.certificateFile) holds no usable PEM certificate chain: \(reason)")
        }
        var key: gnutls_privkey_t?
        var keyed = gnutls_privkey_init(&key)
        if keyed == GNUTLS_E_SUCCESS, let key {
            keyed = keyText.withUnsafeBufferPointer { bytes in
                var datum = gnutls_datum_t(data: UnsafeMutablePointer(mutating: bytes.baseAddress), size: UInt32(bytes.count))
                return gnutls_privkey_import_x509_raw(key, &datum, GNUTLS_X509_FMT_PEM, nil, 0)
            }
        }
        guard keyed == GNUTLS_E_SUCCESS, let key else {
            Self.release(chain: chain, length: chainLength, key: key)
            throw HTTPServerError(message: "the TLS key file \(configuration.keyFile) holds no usable PEM private key: \(Self.reason(keyed))")
        }
        self.chain = chain
        self.chainLength = chainLength
        self.key = key
        // Thrown from here on, deinit releases what was loaded.
        guard let matches = Self.identifier(ofPrivateKey: key), matches == Self.identifier(ofPublicKey: chain.pointee.pubkey) else {
            throw HTTPServerError(message: "the TLS key file \(configuration.keyFile) is not the key of the certificate in \(configuration.certificateFile)")
        }
    }

    deinit {
        Self.release(chain: chain, length: chainLength, key: key)
    }

    private static func release(chain: UnsafeMutablePointer<gnutls_pcert_st>, length: UInt32, key: gnutls_privkey_t?) {
        for index in 0..<Int(length) {
            gnutls_pcert_deinit(chain + index)
        }
        chain.deallocate()
        if let key { gnutls_privkey_deinit(key) }
    }

    /// The SHA-256 identifier of the public half of `key`; nil if GnuTLS cannot derive it.
    private static func identifier(ofPrivateKey key: gnutls_privkey_t) -> [UInt8]? {
        var publicKey: gnutls_pubkey_t?
        guard gnutls_pubkey_init(&publicKey) == GNUTLS_E_SUCCESS, let publicKey else { return nil }
        defer { gnutls_pubkey_deinit(publicKey) }
        guard gnutls_pubkey_import_privkey(publicKey, key, 0, 0) == GNUTLS_E_SUCCESS else { return nil }
        return identifier(ofPublicKey: publicKey)
    }

    private static func identifier(ofPublicKey publicKey: gnutls_pubkey_t?) -> [UInt8]? {
        guard let publicKey else { return nil }
        var identifier = [UInt8](repeating: 0, count: 64)
        var size = identifier.count
        guard gnutls_pubkey_get_key_id(publicKey, GNUTLS_KEYID_USE_SHA256.rawValue, &identifier, &size) == GNUTLS_E_SUCCESS else {
            return nil
        }
        return Array(identifier.prefix(size))
    }

    private static func reason(_ code: Int32) -> String {
        gnutls_strerror(code).map { String(cString: $0) } ?? "GnuTLS error \(code)"
    }

    /// The whole file, or an error naming it and the system's reason.
    private static func read(_ path: String, what: String) throws(HTTPServerError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw HTTPServerError(message: "cannot read the \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw HTTPServerError(message: "cannot read the \(what) file \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            contents += buffer.prefix(count)
            guard contents.count <= 1 << 20 else {
                throw HTTPServerError(message: "the \(what) file \(path) is larger than 1 MiB")
            }
        }
        return contents
    }
}

/// The pair a TLS server presents, replaceable while it runs; every pair loaded stays alive as long as the store.
final class TLSCertificateStore: Sendable {
    let configuration: TLSConfiguration
    private let pairs: Mutex<[TLSCredentials]>

    init(_ configuration: TLSConfiguration) throws(HTTPServerError) {
        self.configuration = configuration
        pairs = Mutex([try TLSCredentials(configuration)])
    }

    /// Reads the files again; handshakes from then on present the new pair. On an error the current pair stays.
    func reload() throws(HTTPServerError) {
        let fresh = try TLSCredentials(configuration)
        pairs.withLock { $0.append(fresh) }
    }

    /// Fills in the certificate callback's answer with the newest pair.
    func present(chain: UnsafeMutablePointer<UnsafeMutablePointer<gnutls_pcert_st>?>,
                 length: UnsafeMutablePointer<UInt32>, key: UnsafeMutablePointer<gnutls_privkey_t?>) {
        pairs.withLock { pairs in
            let current = pairs[pairs.count - 1]
            chain.pointee = current.chain
            length.pointee = current.chainLength
            key.pointee = current.key
        }
    }

    /// The stores of the running TLS daemons, by their listening socket (what a handshake can find of its daemon).
    /// The lock is held while a daemon starts, so a handshake that comes before its daemon is registered waits.
    private static let running = Mutex<[Int32: TLSCertificateStore]>([:])

    /// Starts a daemon with `start` and registers `store` as its certificate's source, atomically; nil if the
    /// daemon did not start.
    static func register(_ store: TLSCertificateStore, starting start: () -> OpaquePointer?) -> (daemon: OpaquePointer, socket: Int32)? {
        running.withLock { running in
            guard let daemon = start() else { return nil }
            let socket = daogate_mhd_listen_socket(daemon)
            running[socket] = store
            return (daemon, socket)
        }
    }

    /// Forgets a stopped daemon's store.
    static func unregister(socket: Int32) {
        _ = running.withLock { $0.removeValue(forKey: socket) }
    }

    static func serving(socket: Int32) -> TLSCertificateStore? {
        running.withLock { $0[socket] }
    }
}

/// GnuTLS's certificate callback: the current pair of the daemon the handshake's connection belongs to.
func presentCertificate(
    _ session: gnutls_session_t?,
    _ requestedAuthorities: UnsafePointer<gnutls_datum_t>?,
    _ authorityCount: Int32,
    _ algorithms: UnsafePointer<gnutls_pk_algorithm_t>?,
    _ algorithmCount: Int32,
    _ chain: UnsafeMutablePointer<UnsafeMutablePointer<gnutls_pcert_st>?>?,
    _ chainLength: UnsafeMutablePointer<UInt32>?,
    _ key: UnsafeMutablePointer<gnutls_privkey_t?>?
) -> Int32 {
    guard let session, let chain, let chainLength, let key,
          let store = TLSCertificateStore.serving(socket: daogate_mhd_session_listen_socket(session)) else { return -1 }
    store.present(chain: chain, length: chainLength, key: key)
    return 0
}
