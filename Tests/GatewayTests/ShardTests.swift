import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Gateway
import HTTPTransport
import Sharding
import Testing

/// Issue 13's shard side in process: the bucket function, the map file, and a shard refusing (421) what it does
/// not own without creating a file (503 for a moment when it just gave the bucket away), and freezing a bucket's
/// writes (503) while its reads go on.
@Suite struct ShardTests {
    /// zlib's `crc32` of each (Python's `zlib.crc32`), which HAProxy's `crc32` converter computes too.
    @Test(arguments: [("123456789", UInt32(3_421_780_262)), ("u-0000", 4_272_147_722), ("ann", 3_877_663_347),
                      ("a,b;c", 734_951_922), ("~!@#$%^&*()_+{}|:<>?", 1_009_383_837), ("", 0)])
    func crc32IsZlibs(_ text: String, _ expected: UInt32) {
        #expect(CRC32.checksum(text.utf8) == expected)
        #expect(ShardMap.bucket(of: text, buckets: 4096) == Int(expected % 4096))
    }

    static let mapJSON = #"{"epoch": 3, "buckets": 2, "common": "b", "shards": {"a": "127.0.0.1:1", "b": "127.0.0.1:2"}, "ranges": [[0, 0, "a"], [1, 1, "b"]]}"#

    @Test func theMapRoundTripsAndNamesOneOwnerPerBucket() throws {
        let map = try ShardMap(json: Array(Self.mapJSON.utf8))
        #expect(map.owners == ["a", "b"])
        #expect(map.owner(of: "u-0000") == "a")
        #expect(map.owner(of: "ann") == "b")
        #expect(try ShardMap(json: map.json) == map)
    }

    @Test(arguments: [
        (#"{"epoch": 1, "buckets": 2, "common": "a", "shards": {"a": "h:1"}, "ranges": [[0, 0, "a"]]}"#, "bucket 1 is in no range"),
        (#"{"epoch": 1, "buckets": 2, "common": "a", "shards": {"a": "h:1"}, "ranges": [[0, 1, "a"], [1, 1, "a"]]}"#, "bucket 1 is in two ranges"),
        (#"{"epoch": 1, "buckets": 2, "common": "a", "shards": {"a": "h:1"}, "ranges": [[0, 1, "z"]]}"#, "unknown shard z"),
        (#"{"epoch": 1, "buckets": 2, "common": "z", "shards": {"a": "h:1"}, "ranges": [[0, 1, "a"]]}"#, "common names one of the shards"),
        (#"{"epoch": 1, "buckets": 2, "common": "a", "shards": {"a b": "h:1"}, "ranges": [[0, 1, "a"]]}"#, "is not 1-64"),
    ])
    func aMalformedMapIsRefusedSayingWhy(_ json: String, _ expected: String) {
        #expect {
            _ = try ShardMap(json: Array(json.utf8))
        } throws: { error in
            (error as? ShardMapError)?.description.contains(expected) == true
        }
    }

    static func shardFixture(_ name: String, handoverGrace: Duration = .seconds(5),
                             userJournal: JournalMode = .rollback) throws -> GatewayFixture {
        try GatewayFixture(shard: { root in
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let mapPath = root.appendingPathComponent("shards.json").path
            try Data(Self.mapJSON.utf8).write(to: URL(fileURLWithPath: mapPath))
            return try Shard(name: name, mapPath: mapPath, dataDirectory: root.path, handoverGrace: handoverGrace)
        }, userJournal: userJournal)
    }

    /// A bucket this shard gave away when it read the map is, for a moment, a 503 `bucket_moving` with
    /// `Retry-After` (a request the proxy routed here before its own map changed is retried to the new owner),
    /// reads and writes alike, creating nothing; after the grace it is a 421 like any bucket never owned.
    @Test func aBucketGivenAwayMomentsAgoIsRetriedNotMisdirected() throws {
        let fixture = try Self.shardFixture("a", handoverGrace: .seconds(2))
        let own = [(Gateway.userHeader, "u-0000")]
        let ann = [(Gateway.userHeader, "ann")]
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: own).status == 200)
        let moved = Self.mapJSON.replacingOccurrences(of: #""epoch": 3"#, with: #""epoch": 4"#)
            .replacingOccurrences(of: #"[0, 0, "a"]"#, with: #"[0, 0, "b"]"#)
        try Data(moved.utf8).write(to: fixture.root.appendingPathComponent("shards.json"))
        try fixture.gateway.configuration.shard?.reload()
        let write = fixture.send("PUT", "/kv/user/biz/k", #"{"value": 2}"#, headers: own)
        let read = fixture.send("GET", "/kv/user/biz/k", headers: own)
        let never = fixture.send("GET", "/kv/user/biz/k", headers: ann)
        // Three in-process calls take milliseconds, well within the 2 s grace, so these hold on a loaded machine too.
        for reply in [write, read] {
            #expect(reply.status == 503 && reply.code == "bucket_moving" && reply.header("Retry-After") == "1", "\(reply.text)")
            #expect(reply.json[member: "shard"] == "b" && reply.json[member: "epoch"] == 4 && reply.json[member: "bucket"] == 0)
        }
        // A bucket this shard never owned is misdirected at once.
        #expect(never.status == 421 && never.code == "misdirected_request")
        Thread.sleep(forTimeInterval: 2.1)
        let late = fixture.send("PUT", "/kv/user/biz/k", #"{"value": 3}"#, headers: own)
        #expect(late.status == 421 && late.code == "misdirected_request" && late.json[member: "shard"] == "b", "\(late.text)")
        // Given back, it is served again at once.
        try Data(Self.mapJSON.utf8).write(to: fixture.root.appendingPathComponent("shards.json"))
        try fixture.gateway.configuration.shard?.reload()
        #expect(fixture.send("GET", "/kv/user/biz/k", headers: own).json[member: "value"] == 1)
    }

    /// A shard whose map is older than a peer's (a shard back after a failover with its own copy of the map):
    /// peer b, a real server on loopback, is at epoch 4; shard a, at epoch 3, refuses the user it owns with a
    /// 421 naming epoch 4 and creates no file, until its map file is at least epoch 4 and it reloads.
    @Test func aShardBehindItsPeersServesNothingUntilItsMapCatchesUp() throws {
        func map(_ text: String, at root: URL) throws -> String {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let path = root.appendingPathComponent("shards.json").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let newer = Self.mapJSON.replacingOccurrences(of: #""epoch": 3"#, with: #""epoch": 4"#)
        let peer = try GatewayFixture(shard: { root in try Shard(name: "b", mapPath: try map(newer, at: root), dataDirectory: root.path) })
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), responder: peer.gateway)
        try server.start()
        defer { server.shutdown(gracePeriod: .seconds(1)) }
        let address = "127.0.0.1:\(server.port)"
        let fixture = try GatewayFixture(shard: { root in
            try Shard(name: "a", mapPath: try map(Self.mapJSON.replacingOccurrences(of: "127.0.0.1:2", with: address), at: root),
                      dataDirectory: root.path)
        })
        let shard = try #require(fixture.gateway.configuration.shard)
        let check = shard.checkPeers(token: GatewayFixture.adminToken)
        #expect(check.answered == ["b"] && check.changed && check.behind?.epoch == 4 && check.behind?.shard == "b")
        let own = [(Gateway.userHeader, "u-0000")]
        for reply in [fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: own), fixture.send("GET", "/kv/user/biz/k", headers: own)] {
            #expect(reply.status == 421 && reply.code == "misdirected_request", "\(reply.text)")
            #expect(reply.json[member: "epoch"] == 4 && reply.json[member: "mapEpoch"] == 3 && reply.json[member: "bucket"] == 0)
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.root.appendingPathComponent("users").path))
        // A token the peer refuses is no answer: nothing changes.
        #expect(shard.checkPeers(token: "wrong").unanswered == ["b"] && shard.behind != nil)
        // The map file at epoch 4, then POST /shard/reload: current, and serving.
        _ = try map(newer.replacingOccurrences(of: "127.0.0.1:2", with: address), at: fixture.root)
        let reload = fixture.send("POST", "/shard/reload", headers: [("Authorization", "Bearer " + GatewayFixture.adminToken)])
        #expect(reload.status == 200 && reload.json[member: "epoch"] == 4, "\(reload.text)")
        #expect(shard.behind == nil)
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: own).status == 200)
    }

    /// Shard a owns bucket 0 (u-0000) and not bucket 1 (ann), nor the common space (b's).
    @Test func aShardAnswers421ForWhatItDoesNotOwnAndCreatesNoFile() throws {
        let fixture = try Self.shardFixture("a")
        let files = FileManager.default
        let ann = [(Gateway.userHeader, "ann")]
        let refusals = [
            fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: ann),
            fixture.send("GET", "/kv/user/biz/k", headers: ann),
            fixture.send("POST", "/dao/Messages/unreadCount", headers: ann),
            fixture.send("PUT", "/lru/disk/user/feed", #"{"capacity": 2}"#, headers: ann),
            fixture.send("POST", "/storage/purge", headers: ann),
            fixture.send("POST", "/dao/Demo/insertItem", #"["x"]"#),
            fixture.send("PUT", "/kv/common/biz/k", #"{"value": 1}"#),
            // A common transaction sent by its user's header: the shard checks the database it would run in.
            fixture.send("POST", "/transaction", #"{"calls": [{"module": "Demo", "method": "insertItem", "arguments": ["x"]}]}"#,
                         headers: [(Gateway.userHeader, "u-0000")]),
            fixture.send("POST", "/transaction", #"{"calls": [{"module": "Messages", "method": "unreadCount"}]}"#, headers: ann),
        ]
        for reply in refusals {
            #expect(reply.status == 421 && reply.code == "misdirected_request", "\(reply.text)")
            #expect(reply.json[member: "epoch"] == 3)
        }
        #expect(refusals[0].json[member: "bucket"] == 1 && refusals[0].json[member: "shard"] == "b")
        #expect(refusals[5].json[member: "shard"] == "b" && refusals[5].json[member: "bucket"] == nil)
        #expect(!files.fileExists(atPath: fixture.root.appendingPathComponent("users").path))
        #expect(!files.fileExists(atPath: fixture.root.appendingPathComponent("common.db").path))
        // Its own user is served, and what reaches no storage is served to anyone.
        let own = [(Gateway.userHeader, "u-0000")]
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: own).status == 200)
        #expect(fixture.send("GET", "/healthz", headers: ann).status == 200)
        #expect(fixture.send("GET", "/modules", headers: ann).status == 200)
    }

    /// Every route of the table, with every method it takes, sent for a user of another shard's bucket: a 421
    /// before anything is read or created, but for the routes whose declared space is none or the shard's own
    /// (the shard's reports and operations, the description), or a transaction's first call (checked by its
    /// calls). A route added later is admitted by the space it declares (`Route(…, space:)`).
    @Test func everyRouteReachingAUsersSpaceIsAdmittedByTheirBucket() throws {
        let fixture = try Self.shardFixture("a")
        let samples: [PathParameter: String] = [.module: "Messages", .method: "unreadCount", .space: "user", .kind: "memory",
                                                .business: "biz", .cache: "c", .key: "k"]
        var checked = 0
        for route in Gateway.routes {
            let template = route.template.description
            let path = route.template.segments.map { segment in
                switch segment {
                case .literal(let text): "/" + text
                case .parameter(let parameter): "/" + samples[parameter]!
                }
            }.joined()
            for method in route.methods where method != "HEAD" {
                let reply = fixture.send(method, path, method == "GET" || method == "DELETE" ? nil : "{}",
                                         headers: [(Gateway.userHeader, "ann"), ("Authorization", "Bearer \(GatewayFixture.adminToken)")])
                if [.none, .shard, .firstCall].contains(route.space) {
                    #expect(reply.status != 421, "\(method) \(template): \(reply.text)")
                } else {
                    #expect(reply.status == 421 && reply.code == "misdirected_request", "\(method) \(template): \(reply.status) \(reply.text)")
                    checked += 1
                }
            }
        }
        #expect(checked > 20)
        #expect(!FileManager.default.fileExists(atPath: fixture.root.appendingPathComponent("users").path))
    }

    @Test func theCommonShardServesTheCommonSpace() throws {
        let fixture = try Self.shardFixture("b")
        #expect(fixture.send("POST", "/dao/Demo/insertItem", #"["x"]"#).status == 200)
        #expect(fixture.send("POST", "/transaction", #"{"calls": [{"module": "Demo", "method": "insertItem", "arguments": ["y"]}]}"#,
                             headers: [(Gateway.userHeader, "u-0000"), ("X-Space", "common")]).status == 200)
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: [(Gateway.userHeader, "ann")]).status == 200)
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 1}"#, headers: [(Gateway.userHeader, "u-0000")]).status == 421)
    }

    /// A frozen bucket refuses writes with 503 and Retry-After, serves reads, and stays frozen across a restart.
    @Test func aFrozenBucketRefusesWritesAndServesReads() throws {
        let fixture = try Self.shardFixture("a")
        let own = [(Gateway.userHeader, "u-0000")]
        let admin = [("Authorization", "Bearer " + GatewayFixture.adminToken)]
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 7}"#, headers: own).status == 200)
        #expect(fixture.send("POST", "/dao/Messages/insertMessage", #"{"model": {"time": 1, "content": "c", "uin": 1, "read": false}}"#, headers: own).status == 200)
        let frozen = fixture.send("POST", "/shard/freeze", #"{"bucket": 0}"#, headers: admin)
        #expect(frozen.status == 200 && frozen.json[member: "files"] == ["users/p-u-0000.db"], "\(frozen.text)")
        let write = fixture.send("PUT", "/kv/user/biz/k", #"{"value": 8}"#, headers: own)
        #expect(write.status == 503 && write.code == "bucket_moving" && write.header("Retry-After") == "1")
        #expect(fixture.send("POST", "/dao/Messages/insertMessage", #"{"model": {"time": 2, "content": "d", "uin": 1, "read": false}}"#, headers: own).code == "bucket_moving")
        #expect(fixture.send("GET", "/kv/user/biz/k", headers: own).json[member: "value"] == 7)
        #expect(fixture.send("POST", "/dao/Messages/unreadCount", headers: own).json[member: "result"] == 1)
        // The export is a consistent copy, and it checks.
        let export = fixture.send("POST", "/shard/export", #"{"bucket": 0, "file": "users/p-u-0000.db"}"#, headers: admin)
        #expect(export.status == 200 && export.response.body.starts(with: Array("SQLite format 3".utf8)))
        #expect(fixture.send("POST", "/shard/export", #"{"bucket": 0, "file": "../common.db"}"#, headers: admin).status == 404)
        // Kept on disk: a shard started again on the folder still refuses the writes.
        let again = try Shard(name: "a", mapPath: fixture.root.appendingPathComponent("shards.json").path, dataDirectory: fixture.root.path)
        #expect(fixture.gateway.configuration.shard?.map == again.map)
        #expect(fixture.send("GET", "/shard", headers: admin).json[member: "frozen"] == [0])
        // Archive is refused while the map still gives the bucket to this shard.
        #expect(fixture.send("POST", "/shard/archive", #"{"bucket": 0}"#, headers: admin).code == "bucket_owned")
        #expect(fixture.send("POST", "/shard/unfreeze", #"{"bucket": 0}"#, headers: admin).status == 200)
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 8}"#, headers: own).status == 200)
    }

    /// A read admitted for a bucket just before the map gave the bucket away would open, and so create, the
    /// user's file after the archive removed it: the archive waits until the bucket's admitted requests end
    /// (and refuses with 503 `busy`, removing nothing, if they do not end in time).
    @Test func theArchiveWaitsForTheBucketsRequestsInFlight() throws {
        let fixture = try Self.shardFixture("a")
        let own = [(Gateway.userHeader, "u-0000")]
        let admin = [("Authorization", "Bearer " + GatewayFixture.adminToken)]
        let file = fixture.root.appendingPathComponent("users/p-u-0000.db").path
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 7}"#, headers: own).status == 200)
        let shard = try #require(fixture.gateway.configuration.shard)
        // Requests through the gateway are counted while they run and no longer once answered.
        #expect(fixture.send("GET", "/kv/user/biz/k", headers: own).json[member: "value"] == 7)
        #expect(fixture.send("POST", "/dao/Messages/unreadCount", headers: own).status == 200)
        #expect(shard.inFlight(0) == (reads: 0, writes: 0))
        // A read admitted under the old map, still running (as on another of the server's threads).
        let (bucket, admission) = shard.admit(.user("u-0000"), write: false)
        #expect(bucket == 0 && admission == .admitted)
        #expect(shard.inFlight(0) == (reads: 1, writes: 0))
        let moved = Self.mapJSON.replacingOccurrences(of: #""epoch": 3"#, with: #""epoch": 4"#)
            .replacingOccurrences(of: #"[0, 0, "a"]"#, with: #"[0, 0, "b"]"#)
        try Data(moved.utf8).write(to: fixture.root.appendingPathComponent("shards.json"))
        try shard.reload()
        // Not ended in time: 503 busy, the file kept.
        let late = fixture.send("POST", "/shard/archive", #"{"bucket": 0}"#, headers: admin)
        #expect(late.status == 503 && late.code == "busy", "\(late.text)")
        #expect(FileManager.default.fileExists(atPath: file))
        // Ended while the archive waits: the archive goes on once it has, and removes the file.
        final class Answer: @unchecked Sendable {
            var reply: GatewayFixture.Reply?
            let done = DispatchSemaphore(value: 0)
        }
        let answer = Answer()
        Thread.detachNewThread {
            answer.reply = fixture.send("POST", "/shard/archive", #"{"bucket": 0}"#, headers: admin)
            answer.done.signal()
        }
        #expect(answer.done.wait(timeout: .now() + 0.5) == .timedOut, "the archive did not wait for the read")
        #expect(FileManager.default.fileExists(atPath: file))
        shard.finish(bucket: 0, write: false)
        #expect(answer.done.wait(timeout: .now() + 10) == .success)
        #expect(answer.reply?.status == 200 && answer.reply?.json[member: "removed"] == 1, "\(answer.reply?.text ?? "")")
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(shard.inFlight(0) == (reads: 0, writes: 0))
    }

    /// The routes answered off libmicrohttpd's worker thread are the calls of a bucket move, which may take
    /// seconds, and no other.
    @Test func theCallsOfAMoveAreTheRoutesAnsweredOffTheWorkerThread() {
        #expect(Gateway.routes.filter(\.answersOffWorkerThread).map(\.template.description)
                == ["/shard/freeze", "/shard/export", "/shard/import", "/shard/archive"])
    }

    /// Shard a served by a real server with one worker thread, and a write admitted for bucket 0 still running
    /// (as on another thread): `shard.finish(bucket: 0, write: true)` ends it.
    static func servedWithAWriteRunning(offWorkerAnswerLimit: Int = HTTPServerConfiguration.defaultOffWorkerAnswerLimit)
        throws -> (GatewayFixture, HTTPServer, Shard) {
        let fixture = try shardFixture("a")
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 1,
                                                                       offWorkerAnswerLimit: offWorkerAnswerLimit),
                                responder: fixture.gateway)
        try server.start()
        let shard = try #require(fixture.gateway.configuration.shard)
        let (bucket, admission) = shard.admit(.user("u-0000"), write: true)
        #expect(bucket == 0 && admission == .admitted)
        return (fixture, server, shard)
    }

    /// The calls of a bucket move are answered off libmicrohttpd's worker thread: a freeze waiting for a write
    /// in flight holds none, so a server with one worker thread answers other requests meanwhile (with the
    /// freeze on its thread, `GET /healthz` would wait the freeze's 10 s out), and the freeze answers once the
    /// write ends. Real sockets, curl as the client.
    @Test func aFreezeWaitingForAWriteHoldsNoWorkerThread() throws {
        let (fixture, server, shard) = try Self.servedWithAWriteRunning()
        defer { server.shutdown(gracePeriod: .seconds(1)) }
        let base = "http://127.0.0.1:\(server.port)"
        final class Answer: @unchecked Sendable {
            var status = ""
            let done = DispatchSemaphore(value: 0)
        }
        let freeze = Answer()
        Thread.detachNewThread {
            freeze.status = (try? curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-X", "POST",
                                        "-H", "Authorization: Bearer " + GatewayFixture.adminToken,
                                        "-H", "Content-Type: application/json", "--data", #"{"bucket": 0}"#,
                                        base + "/shard/freeze"])) ?? "curl failed"
            freeze.done.signal()
        }
        #expect(freeze.done.wait(timeout: .now() + 0.5) == .timedOut, "the freeze did not wait for the write")
        let asked = ContinuousClock.now
        let health = try curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", base + "/healthz"])
        let waited = ContinuousClock.now - asked
        #expect(health == "200")
        #expect(waited < .seconds(3), "GET /healthz waited \(waited) for the freeze's thread")
        #expect(freeze.done.wait(timeout: .now()) == .timedOut, "the freeze answered before the write ended")
        shard.finish(bucket: 0, write: true)
        #expect(freeze.done.wait(timeout: .now() + 10) == .success)
        #expect(freeze.status == "200")
        #expect(fixture.send("POST", "/shard/unfreeze", #"{"bucket": 0}"#,
                             headers: [("Authorization", "Bearer " + GatewayFixture.adminToken)]).status == 200)
    }

    /// The long calls of a move are bounded: with the limit's worth being answered (a freeze waiting for a
    /// write), one more is 503 `too_many_long_calls` with `Retry-After`, and nothing of it is done (its bucket
    /// is not frozen); once the first ends, it is taken.
    @Test func aLongCallPastTheLimitIsRefusedAndChangesNothing() throws {
        let (fixture, server, shard) = try Self.servedWithAWriteRunning(offWorkerAnswerLimit: 1)
        defer { server.shutdown(gracePeriod: .seconds(1)) }
        let base = "http://127.0.0.1:\(server.port)"
        @Sendable func freeze(_ bucket: Int) throws -> String {
            try curl(["-s", "-D", "-", "--max-time", "30", "-X", "POST",
                      "-H", "Authorization: Bearer " + GatewayFixture.adminToken,
                      "-H", "Content-Type: application/json", "--data", "{\"bucket\": \(bucket)}", base + "/shard/freeze"])
        }
        let first = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? freeze(0)
            first.signal()
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while !shard.isFrozen(0) && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(shard.isFrozen(0))
        let refused = try freeze(1)
        #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused)")
        #expect(refused.contains(#""code":"too_many_long_calls""#))
        #expect(refused.lowercased().contains("retry-after: 1"))
        #expect(!shard.isFrozen(1))
        shard.finish(bucket: 0, write: true)
        #expect(first.wait(timeout: .now() + 10) == .success)
        #expect(try freeze(1).hasPrefix("HTTP/1.1 200"))
        for bucket in [0, 1] {
            #expect(fixture.send("POST", "/shard/unfreeze", "{\"bucket\": \(bucket)}",
                                 headers: [("Authorization", "Bearer " + GatewayFixture.adminToken)]).status == 200)
        }
    }

    /// An HAProxy whose runtime API takes the connection and never answers (a listening socket nobody serves)
    /// is a failure after the runtime's timeout, naming the socket and the command: a bucket move or a failover
    /// is not held for ever.
    @Test func aRuntimeAPIThatNeverAnswersIsAFailureAfterTheTimeout() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-mute-\(UUID().uuidString.prefix(8)).sock").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && listen(listener, 4) == 0)
        let asked = ContinuousClock.now
        #expect {
            try HAProxyRuntime(socket: path, timeout: .milliseconds(300)).run("show map")
        } throws: { error in
            "\(error)".contains("did not answer 'show map' within") && "\(error)".contains(path)
        }
        #expect(ContinuousClock.now - asked < .seconds(5))
    }

    /// A shard's name that does not resolve is asked again until the request's timeout
    /// (`ShardClient.resolutionPatience`; a container network's name server leaves queries unanswered for
    /// moments), and the failure then says what the resolver said. A name in `.invalid` never resolves (RFC 6761).
    @Test func aShardNameThatDoesNotResolveIsAskedAgainThenRefusedSayingWhy() throws {
        var client = ShardClient(address: "daogate-no-such-shard.invalid:8080", token: nil)
        client.timeout = 1
        let asked = ContinuousClock.now
        #expect {
            _ = try client.status()
        } throws: { error in
            let said = "cannot resolve daogate-no-such-shard.invalid: "
            return "\(error)".hasPrefix(said) && "\(error)".count > said.count  // the resolver's words follow
        }
        let waited = ContinuousClock.now - asked
        // Asked again after 0.1, 0.2 and 0.4 s; the next pause would pass the 1 s timeout.
        #expect(waited >= .milliseconds(700), "\(waited)")
        #expect(waited < .seconds(5), "\(waited)")
        // With no patience (the epoch checks'), asked once: refused before the first pause would have ended.
        client.resolutionPatience = .zero
        let once = ContinuousClock.now
        #expect(throws: ShardClientError.self) { _ = try client.status() }
        #expect(ContinuousClock.now - once < .milliseconds(700))
    }

    /// On a shard whose users' files are WAL (those Litestream replicates), a file made again at a removed path
    /// just after the archive removed it — as Litestream's set-up of a database it had just found does, by
    /// opening its path — is removed too, while the archive looks (`Gateway.recreationWindow`): no empty file
    /// of the bucket is left when it answers.
    @Test func theArchiveRemovesAFileMadeAgainJustAfterItsRemoval() throws {
        let fixture = try Self.shardFixture("a", userJournal: .wal)
        let own = [(Gateway.userHeader, "u-0000")]
        let admin = [("Authorization", "Bearer " + GatewayFixture.adminToken)]
        let file = fixture.root.appendingPathComponent("users/p-u-0000.db").path
        #expect(fixture.send("PUT", "/kv/user/biz/k", #"{"value": 7}"#, headers: own).status == 200)
        #expect(FileManager.default.fileExists(atPath: file))
        let moved = Self.mapJSON.replacingOccurrences(of: #""epoch": 3"#, with: #""epoch": 4"#)
            .replacingOccurrences(of: #"[0, 0, "a"]"#, with: #"[0, 0, "b"]"#)
        try Data(moved.utf8).write(to: fixture.root.appendingPathComponent("shards.json"))
        try #require(fixture.gateway.configuration.shard).reload()
        final class Recreation: @unchecked Sendable {
            var made = false
            let done = DispatchSemaphore(value: 0)
        }
        let recreation = Recreation()
        Thread.detachNewThread {
            // Once the archive removed it, the file is made again, empty, 200 ms later.
            let deadline = Date().addingTimeInterval(10)
            while FileManager.default.fileExists(atPath: file), Date() < deadline { usleep(500) }
            usleep(200_000)
            recreation.made = FileManager.default.createFile(atPath: file, contents: nil)
            recreation.done.signal()
        }
        let reply = fixture.send("POST", "/shard/archive", #"{"bucket": 0}"#, headers: admin)
        #expect(reply.status == 200 && reply.json[member: "removed"] == 1, "\(reply.text)")
        #expect(recreation.done.wait(timeout: .now() + 10) == .success)
        #expect(recreation.made)
        #expect(!FileManager.default.fileExists(atPath: file), "the file made again after the archive is still there")
    }

    @Test func aServerThatIsNoShardHasNoShardOperations() throws {
        let fixture = try GatewayFixture()
        let reply = fixture.send("GET", "/shard", headers: [("Authorization", "Bearer " + GatewayFixture.adminToken)])
        #expect(reply.status == 404 && reply.code == "not_a_shard")
        #expect(fixture.send("GET", "/shard").status == 401)
    }

    @Test func theHAProxyConfigurationRoutesCommonModulesToTheCommonShard() throws {
        let (modules, errors) = ModuleLoader.loadDirectory(GatewayFixture.modulesDirectory)
        #expect(errors.isEmpty)
        let map = try ShardMap(json: Array(Self.mapJSON.utf8))
        let generator = HAProxyConfiguration(map: map, routing: Gateway.shardRouting(modules: modules), listen: "127.0.0.1:8080", user: .header,
                                             directory: "/etc/haproxy/d", runtimeSocket: "/run/h.sock")
        let files = Dictionary(uniqueKeysWithValues: generator.files.map { ($0.name, $0.content) })
        let prefixes = try #require(files["common-prefixes.lst"]).split(separator: "\n")
        #expect(prefixes.contains("/dao/Demo/") && prefixes.contains("/kv/common/"))
        #expect(!prefixes.contains("/dao/Messages/"))
        #expect(files["buckets.map"]?.hasSuffix("0 a\n1 b\n") == true)
        let configuration = try #require(files["haproxy.cfg"])
        #expect(configuration.contains("req.fhdr(x-user-id)"))
        #expect(configuration.contains("use_backend %[var(txn.user),crc32,mod(2),map_int(/etc/haproxy/d/buckets.map,b)]"))
    }

    /// A shard named by a host name (compose's `shard-a:8080`) comes back at another address after a restart:
    /// HAProxy resolves it again at run time (a `resolvers` section, `init-addr` so that an unresolvable name
    /// does not stop HAProxy's start), and real HAProxy accepts the configuration. Addresses given as IPs
    /// (IPv4, bracketed IPv6) are left as they were.
    @Test func shardsNamedByHostAreResolvedAgainAtRunTime() throws {
        let json = #"{"epoch": 1, "buckets": 2, "common": "b", "shards": {"a": "shard-a.invalid:8080", "b": "127.0.0.1:2", "c": "[::1]:3"}, "ranges": [[0, 0, "a"], [1, 1, "b"]]}"#
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-resolvers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let generator = HAProxyConfiguration(map: try ShardMap(json: Array(json.utf8)), routing: Gateway.shardRouting(modules: []),
                                             listen: "127.0.0.1:8080", user: .header, directory: folder.path,
                                             runtimeSocket: folder.appendingPathComponent("h.sock").path)
        for file in generator.files {
            try Data(file.content.utf8).write(to: folder.appendingPathComponent(file.name))
        }
        let configuration = generator.configuration
        #expect(configuration.contains("resolvers system\n    parse-resolv-conf\n"))
        #expect(configuration.contains("server a shard-a.invalid:8080 check inter 1s fall 2 rise 1 maxconn 64 resolvers system init-addr last,libc,none\n")
            || configuration.contains("server a shard-a.invalid:8080 check") && configuration.contains("resolvers system init-addr last,libc,none"))
        #expect(!configuration.contains("server b 127.0.0.1:2 check inter 1s fall 2 rise 1 maxconn 64 resolvers"))
        #expect(configuration.split(separator: "\n").filter { $0.contains("init-addr") }.count == 1)
        let ipOnly = HAProxyConfiguration(map: try ShardMap(json: Array(Self.mapJSON.utf8)), routing: Gateway.shardRouting(modules: []),
                                          listen: "127.0.0.1:8080", user: .header, directory: "/d", runtimeSocket: "/s").configuration
        #expect(!ipOnly.contains("resolvers"))
        // HAProxy itself checks the configuration (`-c`): the section and the server options are its own.
        let haproxy = Process()
        haproxy.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        haproxy.arguments = ["haproxy", "-c", "-f", folder.appendingPathComponent("haproxy.cfg").path]
        let output = Pipe()
        haproxy.standardOutput = output
        haproxy.standardError = output
        try haproxy.run()
        haproxy.waitUntilExit()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(haproxy.terminationStatus == 0, "haproxy -c: \(said)")
    }

    /// HAProxy's lists come from the routes' declared spaces: every route of a `{space}` sends its common form
    /// to the common shard and its user form by the user, every route of a `{module}` a common module's paths
    /// to the common shard and a user module's by the user; a route reaching no space is on neither list.
    @Test func theHAProxyListsAreDerivedFromTheRouteTable() throws {
        let (modules, errors) = ModuleLoader.loadDirectory(GatewayFixture.modulesDirectory)
        #expect(errors.isEmpty)
        let routing = Gateway.shardRouting(modules: modules)
        func toCommonShard(_ path: String) -> Bool {
            routing.commonPaths.contains(path) || routing.commonPrefixes.contains { path.hasPrefix($0) }
        }
        func sample(_ route: Route, _ values: [PathParameter: String]) -> String {
            route.template.segments.map { segment in
                switch segment {
                case .literal(let text): "/" + text
                case .parameter(let parameter): "/" + (values[parameter] ?? "x")
                }
            }.joined()
        }
        var checked = 0
        for route in Gateway.routes {
            for kind in ["memory", "disk"] {
                let common = sample(route, [.space: "common", .kind: kind, .module: "Demo"])
                let user = sample(route, [.space: "user", .kind: kind, .module: "Messages"])
                switch route.space {
                case .pathSpace, .module:
                    #expect(toCommonShard(common), "\(route.template): \(common)")
                    #expect(!toCommonShard(user), "\(route.template): \(user)")
                    checked += 1
                case .none, .shard, .caller, .callerOrQuery, .firstCall:
                    #expect(!toCommonShard(common), "\(route.template): \(common)")
                }
            }
        }
        #expect(checked > 30)
        #expect(routing.spaceHeaderPaths == Gateway.routes.filter { $0.space == .firstCall }.map(\.template.description))
        #expect(routing.spaceQueryPaths == Gateway.routes.filter { $0.space == .callerOrQuery }.map(\.template.description))
        // A common module's paths, whole and as prefixes.
        #expect(routing.commonPaths.contains("/modules/Demo") && routing.commonPrefixes.contains("/dao/Demo/"))
        let configuration = HAProxyConfiguration(map: try ShardMap(json: Array(Self.mapJSON.utf8)), routing: routing, listen: "127.0.0.1:8080",
                                                 user: .header, directory: "/d", runtimeSocket: "/s").configuration
        #expect(configuration.contains("    acl transaction path /transaction\n    acl space_common req.hdr(x-space) -m str common\n"
            + "    acl changes path /changes\n    acl changes_common urlp(space) -m str common\n"))
        #expect(configuration.contains("    use_backend b if transaction space_common\n    use_backend b if changes changes_common\n"))
    }
}
