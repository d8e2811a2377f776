import Foundation
import Testing

/// The memory caches' budget against a real `daogate serve`: what caches hold, nodes and index included, stays
/// within `--memory-cache-bytes` and is given back when they are emptied, whatever the way; one user filling
/// the budget makes the others' writes evict, never fail.
@Suite(.serialized) struct MemoryCacheLiveTests {
    static let adminToken = "memory-admin-token-0123456789"
    static let admin = "Authorization: Bearer \(adminToken)"
    static let budget = 4_194_304
    /// What the process may grow by beyond the budget: the allocator's arenas (one per worker thread) keeping
    /// freed request buffers, the parsed batches in flight, the registry of caches.
    static let allowance = 24 << 20

    /// The server's resident memory, from /proc (VmRSS), in bytes.
    static func residentBytes(_ server: LiveServer) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) else {
            throw LiveError("no VmRSS in \(status)")
        }
        return kilobytes * 1024
    }

    /// A gauge or counter of `/metrics`.
    static func metric(_ server: LiveServer, _ name: String) throws -> Int {
        let body = try server.curl("/metrics", headers: [admin]).body
        guard let line = body.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }), let value = Int(line.split(separator: " ")[1]) else {
            throw LiveError("no \(name) in \(body)")
        }
        return value
    }

    /// `count` entries `k0`… with 16-byte values in batches of 2,000; the statuses answered.
    static func fill(_ server: LiveServer, user: String?, cache: String, count: Int = 20_000) throws -> [Int] {
        let space = user == nil ? "common" : "user"
        let headers = user.map { ["X-User-Id: \($0)"] } ?? []
        var statuses: [Int] = []
        for start in stride(from: 0, to: count, by: 2_000) {
            let entries = (start..<min(count, start + 2_000)).map { #""k\#($0)": "value-\#(String(format: "%010d", $0))""# }
            let body = #"{"entries": {"# + entries.joined(separator: ",") + "}}"
            statuses.append(try server.curl("/lru/memory/\(space)/\(cache)/entries", method: "POST", body: body, headers: headers).status)
        }
        return statuses
    }

    /// Empties a cache one of four ways (by `index`): prefix, regex, suffix, remove-all; the count removed.
    static func empty(_ server: LiveServer, user: String, cache: String, way index: Int) throws -> Int {
        let path = "/lru/memory/user/\(cache)"
        let reply = switch index % 4 {
        case 0: try server.curl(path + "/remove", method: "POST", body: #"{"prefix": "k"}"#, headers: ["X-User-Id: \(user)"])
        case 1: try server.curl(path + "/remove", method: "POST", body: #"{"regex": "k[0-9]+"}"#, headers: ["X-User-Id: \(user)"])
        case 2: try server.curl(path + "/remove", method: "POST", body: #"{"suffix": ""}"#, headers: ["X-User-Id: \(user)"])
        default: try server.curl(path + "/entries", method: "DELETE", headers: ["X-User-Id: \(user)"])
        }
        guard reply.status == 200, let removed = reply.json?["removed"] as? Int else { throw LiveError("\(path): \(reply.status) \(reply.body)") }
        return removed
    }

    /// 24 caches under 12 users, each filled with 20,000 entries and emptied in turn (prefix, regex, suffix,
    /// remove-all), then all filled together (past the budget: eviction), emptied and deleted. The process's
    /// resident memory stays within the budget and `allowance` of what it was before the first cache, and the
    /// budget shows free again once the caches are empty.
    @Test func cachesFilledAndEmptiedUnderManyUsersStayWithinTheBudget() throws {
        let server = try LiveServer(arguments: ["--memory-cache-bytes", "\(Self.budget)"], environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken])
        let caches = (0..<24).map { (user: "user-\($0 % 12)", cache: "c\($0)") }
        _ = try server.curl("/lru/memory/user/warm-up", method: "PUT", body: #"{"capacity": 10}"#, headers: ["X-User-Id: warm-up"])
        _ = try Self.fill(server, user: "warm-up", cache: "warm-up", count: 2_000)
        _ = try server.curl("/lru/memory/user/warm-up", method: "DELETE", headers: ["X-User-Id: warm-up"])
        let start = try Self.residentBytes(server)
        var peak = start
        var figures: [String] = []

        for (index, (user, cache)) in caches.enumerated() {
            #expect(try server.curl("/lru/memory/user/\(cache)", method: "PUT", body: #"{"capacity": 20000}"#, headers: ["X-User-Id: \(user)"]).status == 200)
            let statuses = try Self.fill(server, user: user, cache: cache)
            #expect(statuses.allSatisfy { $0 == 200 }, "\(cache): \(statuses)")
            peak = max(peak, try Self.residentBytes(server))
            _ = try Self.empty(server, user: user, cache: cache, way: index)
            peak = max(peak, try Self.residentBytes(server))
        }
        let afterEmptying = try Self.residentBytes(server)
        print("MemoryCacheLiveTests RSS, 24 caches filled and emptied one at a time: start \(start >> 10) KiB, peak \(peak >> 10) KiB, after \(afterEmptying >> 10) KiB")
        let emptied = try Self.metric(server, "daogate_memory_cache_bytes")
        figures.append("one at a time: start \(start >> 10) KiB, peak \(peak >> 10) KiB, after \(afterEmptying >> 10) KiB, held after emptying \(emptied) B")
        // What 24 empty caches cost: their fixed cost, a little over a kilobyte each.
        #expect(emptied <= 24 * 1_200, "\(emptied) bytes held by 24 empty caches")

        for (user, cache) in caches {
            let statuses = try Self.fill(server, user: user, cache: cache)
            #expect(statuses.allSatisfy { $0 == 200 }, "\(cache): \(statuses)")
            #expect(try Self.metric(server, "daogate_memory_cache_bytes") <= Self.budget)
            peak = max(peak, try Self.residentBytes(server))
        }
        #expect(try Self.metric(server, "daogate_memory_cache_evictions_total") > 0)
        for (index, (user, cache)) in caches.enumerated() { _ = try Self.empty(server, user: user, cache: cache, way: index) }
        #expect(try Self.metric(server, "daogate_memory_cache_bytes") <= 24 * 1_200)
        for (user, cache) in caches {
            #expect(try server.curl("/lru/memory/user/\(cache)", method: "DELETE", headers: ["X-User-Id: \(user)"]).status == 200)
        }
        #expect(try Self.metric(server, "daogate_memory_cache_bytes") == 0)
        #expect(try Self.metric(server, "daogate_memory_caches") == 0)
        let end = try Self.residentBytes(server)
        figures.append("all together: peak \(peak >> 10) KiB, at the end \(end >> 10) KiB")
        print("MemoryCacheLiveTests RSS: " + figures.joined(separator: "; "))
        #expect(peak - start <= Self.budget + Self.allowance, "\(figures)")
        #expect(server.stop() == 0)
    }

    /// One user filling far past its share, then ten more filling the budget: another user's writes and the
    /// common space's still succeed (eviction makes room); only a value larger than a user's share is 507.
    @Test func oneUserFillingCannotMakeAnotherUsersOrTheCommonSpacesWriteFail() throws {
        let server = try LiveServer(arguments: ["--memory-cache-bytes", "\(Self.budget)"], environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken])
        #expect(try Self.metric(server, "daogate_memory_cache_user_limit_bytes") == Self.budget / 8)
        for user in ["hog"] + (0..<10).map({ "user-\($0)" }) {
            #expect(try server.curl("/lru/memory/user/c", method: "PUT", body: #"{"capacity": 20000}"#, headers: ["X-User-Id: \(user)"]).status == 200)
            let statuses = try Self.fill(server, user: user, cache: "c")
            #expect(statuses.allSatisfy { $0 == 200 }, "\(user): \(statuses)")
        }
        let hog = try server.curl("/lru/memory/user/c", headers: ["X-User-Id: hog"]).json?["count"] as? Int ?? -1
        #expect(hog >= 0 && hog < 20_000, "the hog holds \(hog) entries")
        #expect(try Self.metric(server, "daogate_memory_cache_bytes") <= Self.budget)

        for (user, space) in [("small", "user"), (nil, "common")] as [(String?, String)] {
            let headers = user.map { ["X-User-Id: \($0)"] } ?? []
            #expect(try server.curl("/lru/memory/\(space)/mine", method: "PUT", body: #"{"capacity": 100}"#, headers: headers).status == 200)
            for number in 0..<100 {
                let stored = try server.curl("/lru/memory/\(space)/mine/entries/n\(number)", method: "PUT", body: #"{"value": "\#(number)"}"#, headers: headers)
                #expect(stored.status == 200, "\(space) n\(number): \(stored.body)")
            }
            #expect(try server.curl("/lru/memory/\(space)/mine/entries/n99", headers: headers).body == #"{"value":"99"}"#)
        }
        #expect(try Self.fill(server, user: nil, cache: "mine", count: 2_000) == [200])

        // Larger than an argument may be: curl reads it from a file.
        let bigFile = server.folder.appendingPathComponent("big.json")
        try Data(#"{"value": "\#(String(repeating: "x", count: Self.budget / 8))"}"#.utf8).write(to: bigFile)
        let big = "@" + bigFile.path
        let refused = try server.curl("/lru/memory/user/mine/entries/big", method: "PUT", body: big, headers: ["X-User-Id: small"])
        #expect(refused.status == 507 && refused.code == "memory_full", "\(refused.body)")
        #expect(try server.curl("/lru/memory/user/mine/entries/n99", headers: ["X-User-Id: small"]).status == 200)
        #expect(try Self.metric(server, "daogate_memory_cache_evictions_total") > 0)
        #expect(server.stop() == 0)

        // A larger share takes it: the option and its variable.
        let bigCopy = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-big-\(UUID().uuidString).json")
        try FileManager.default.copyItem(at: bigFile, to: bigCopy)
        defer { try? FileManager.default.removeItem(at: bigCopy) }
        let generous = try LiveServer(arguments: ["--memory-cache-bytes", "\(Self.budget)"],
                                      environment: ["DAOGATE_ADMIN_TOKEN": Self.adminToken, "DAOGATE_MEMORY_CACHE_USER_BYTES": "1048576"])
        #expect(try Self.metric(generous, "daogate_memory_cache_user_limit_bytes") == 1_048_576)
        #expect(try generous.curl("/lru/memory/user/mine", method: "PUT", body: #"{"capacity": 10}"#, headers: ["X-User-Id: small"]).status == 200)
        #expect(try generous.curl("/lru/memory/user/mine/entries/big", method: "PUT", body: "@" + bigCopy.path, headers: ["X-User-Id: small"]).status == 200)
        #expect(generous.stop() == 0)
        let (status, output) = try LiveServer.refusal(["--memory-cache-bytes", "1000", "--memory-cache-user-bytes", "2000"])
        #expect(status != 0 && output.contains("daogate_memory_cache_user_bytes must be in 0...1000"), "\(output)")
    }
}
