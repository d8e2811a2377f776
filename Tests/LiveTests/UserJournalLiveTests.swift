import Dispatch
import Foundation
import Synchronization
import Testing

/// Users' files under each journal: a server killed (SIGKILL) while users
/// write loses no write it acknowledged, and the files come back whole.
@Suite(.serialized) struct UserJournalLiveTests {
    @Test(arguments: [[], ["--synchronous", "full"], ["--user-journal", "wal", "--synchronous", "full"]])
    func aKilledServerLosesNoAcknowledgedWrite(_ settings: [String]) throws {
        let server = try LiveServer(arguments: settings, modules: "bench/modules")
        let acknowledged = Mutex<[(user: String, id: Int)]>([])
        let group = DispatchGroup()
        for writer in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                for step in 0..<400 {
                    let user = "u\(writer * 5 + step % 5)"
                    let id = writer * 1000 + step
                    guard let reply = try? server.curl("/dao/UserItems/putItem", body: "[\(id), \"v\(id)\"]",
                                                       headers: ["X-User-Id: \(user)"]),
                          reply.status == 200 else { return }  // killed
                    acknowledged.withLock { $0.append((user, id)) }
                }
            }.start()
        }
        // Killed once writes are flowing, while they go on.
        let start = Date()
        while acknowledged.withLock({ $0.count }) < 60 && Date() < start.addingTimeInterval(20) {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let restarted = try server.killedAndRestarted(arguments: settings, modules: "bench/modules")
        #expect(group.wait(timeout: .now() + 30) == .success)
        let written = acknowledged.withLock { $0 }
        #expect(written.count >= 60)
        for (user, id) in written {
            let reply = try restarted.curl("/dao/UserItems/getItem", body: "[\(id)]", headers: ["X-User-Id: \(user)"])
            #expect(reply.status == 200 && reply.body == #"{"result":"v\#(id)"}"#, "\(user) row \(id): \(reply.status) \(reply.body)")
        }
        let journal = settings.contains("wal") ? "wal" : "rollback"
        let files = try FileManager.default.contentsOfDirectory(atPath: restarted.data.path + "/users")
        #expect(files.contains { $0.hasSuffix("-wal") } == (journal == "wal"), "\(files.sorted())")
    }
}

/// A user's file is one file on disk in the default journal: no `-journal`
/// stays beside it once its writes are answered.
@Suite struct UserFilesOnDiskLiveTests {
    @Test func eachUserWrittenLeavesOneFile() throws {
        let server = try LiveServer(modules: "bench/modules")
        for user in 0..<30 {
            for id in 0..<3 {
                let reply = try server.curl("/dao/UserItems/putItem", body: "[\(id), \"v\(id)\"]", headers: ["X-User-Id: f\(user)"])
                #expect(reply.status == 200, "\(reply.body)")
            }
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: server.data.path + "/users")
        #expect(files.count == 30, "\(files.sorted())")
        #expect(files.allSatisfy { $0.hasSuffix(".db") }, "\(files.sorted())")
    }
}

/// One server per data folder: users' rollback files are written without
/// SQLite's file locks, so a second server on the folder must not start.
@Suite struct DataFolderLockLiveTests {
    @Test func aSecondServerOnTheSameDataFolderRefusesToStart() throws {
        let server = try LiveServer()
        let key = server.folder.appendingPathComponent("daogate.key").path
        let (status, output) = try LiveServer.refusal(["--modules", "modules", "--data", server.data.path, "--port", "0", "--key-file", key])
        #expect(status == 1)
        #expect(output.contains("another daogate serves this data folder"), "\(output)")
        // The first goes on serving.
        #expect(try server.curl("/healthz").status == 200)
    }
}
