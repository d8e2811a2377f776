import Foundation
import Testing

/// One reload, whoever asks: SIGHUP, `POST /admin/reload` and a change of a JWT key file each read the JWT keys
/// and the module folder again, and each is recorded once (one entry in `GET /events`, one line per part in the log).
@Suite struct ReloadLiveTests {
    static let module = """
        <module name="Notes" initializer="create" tableName="notes" version="1.0">
          <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
          <select id="count" result="int">select count(*) from ${T}</select>
        </module>
        """

    func reloads(_ server: LiveServer, _ token: String) throws -> [[String: Any]] {
        let reply = try server.curl("/events", headers: ["Authorization: Bearer \(token)"])
        let json = try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any]
        return json?["reloads"] as? [[String: Any]] ?? []
    }

    /// Waits until `/events` lists `count` reloads; their reasons, the most recent first.
    func reasons(_ server: LiveServer, _ token: String, count: Int) throws -> [String] {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let listed = try reloads(server, token)
            if listed.count >= count || Date() > deadline { return listed.compactMap { $0["reason"] as? String } }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func occurrences(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    @Test func sighupPostAndAKeyFileChangeEachReloadEverythingOnce() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-reload-\(UUID().uuidString)")
        let modules = folder.appendingPathComponent("modules")
        try FileManager.default.createDirectory(at: modules, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.module.write(to: modules.appendingPathComponent("Notes.xml"), atomically: true, encoding: .utf8)
        let secret = try AuthLiveTests.secret(in: folder, "jwt.secret")
        let adminToken = folder.appendingPathComponent("admin.token")
        try "admin-token-0123456789-live".write(to: adminToken, atomically: true, encoding: .utf8)
        let server = try LiveServer(arguments: ["--auth", "jwt", "--jwt-secret-file", secret, "--admin-token-file", adminToken.path],
                                    modules: modules.path)
        let token = try AuthLiveTests.mint(secret, "ann")
        #expect(try reloads(server, token).isEmpty)

        kill(server.process.processIdentifier, SIGHUP)
        #expect(try reasons(server, token, count: 1) == ["SIGHUP"])
        #expect(occurrences("SIGHUP: 1 JWT key loaded", in: server.log) == 1, "\(server.log)")
        #expect(occurrences("SIGHUP: 1 module reloaded", in: server.log) == 1, "\(server.log)")

        let post = try server.curl("/admin/reload", method: "POST", headers: ["Authorization: Bearer admin-token-0123456789-live"])
        #expect(post.status == 200, "\(post.body)")
        #expect(try reasons(server, token, count: 2) == ["POST /admin/reload", "SIGHUP"])
        #expect(occurrences("POST /admin/reload: 1 JWT key loaded", in: server.log) == 1, "\(server.log)")
        #expect(occurrences("POST /admin/reload: 1 module reloaded", in: server.log) == 1, "\(server.log)")

        // A new key, written beside and renamed over the file: the watcher's reload, once for one change.
        let rotated = folder.appendingPathComponent("new.secret").path
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: rotated))
        let newToken = try AuthLiveTests.mint(rotated, "ann")
        #expect(rename(rotated, secret) == 0)
        // Only a token of the new key reads the events once the watcher has reloaded.
        #expect(try reasons(server, newToken, count: 3).first == "a JWT key file changed")
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try reasons(server, newToken, count: 4) == ["a JWT key file changed", "POST /admin/reload", "SIGHUP"])
        #expect(occurrences("a JWT key file changed: 1 JWT key loaded", in: server.log) == 1, "\(server.log)")
        #expect(occurrences("a JWT key file changed: 1 module reloaded", in: server.log) == 1, "\(server.log)")
        #expect(try server.curl("/events", headers: ["Authorization: Bearer \(token)"]).code == "token_bad_signature")
    }
}
