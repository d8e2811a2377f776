import DAOValue
import Foundation

/// Where each user lives in a sharded deployment: a user belongs to a bucket,
/// `crc32(user) mod buckets`, and each bucket to one shard. The common space
/// (common modules, `/kv/common`, common caches, bound files) lives on one
/// shard, `common`. The map's `epoch` grows by one with every change, so two
/// copies tell which is newer.
///
/// The file is JSON; `ranges` are inclusive bucket ranges, each bucket in
/// exactly one:
///
/// ```json
/// {"epoch": 1, "buckets": 4096, "common": "c",
///  "shards": {"a": "127.0.0.1:8081", "b": "127.0.0.1:8082", "c": "127.0.0.1:8083"},
///  "ranges": [[0, 2047, "a"], [2048, 4095, "b"]]}
/// ```
public struct ShardMap: Sendable, Equatable {
    public var epoch: Int64
    public var buckets: Int
    /// The shard holding the common space.
    public var common: String
    /// Each shard's address, `host:port`, as HAProxy and the other shards reach it.
    public var shards: [String: String]
    /// The owner of every bucket, by bucket.
    public var owners: [String]

    public init(epoch: Int64, buckets: Int, common: String, shards: [String: String], owners: [String]) {
        self.epoch = epoch
        self.buckets = buckets
        self.common = common
        self.shards = shards
        self.owners = owners
    }

    /// A user's bucket: the CRC-32 of the id's bytes (as zlib and HAProxy's `crc32` converter compute it) modulo the buckets.
    public static func bucket(of user: String, buckets: Int) -> Int {
        Int(CRC32.checksum(user.utf8) % UInt32(buckets))
    }

    public func bucket(of user: String) -> Int { Self.bucket(of: user, buckets: buckets) }

    /// The shard owning a user.
    public func owner(of user: String) -> String { owners[bucket(of: user)] }

    /// Shard names must be HAProxy backend names and map values: letters, digits, `_`, `-`.
    static func isShardName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// Reads a map file; a malformed map is an error naming what is wrong.
    public init(contentsOf path: String) throws(ShardMapError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ShardMapError("cannot read the shard map \(path)")
        }
        try self.init(json: [UInt8](data), origin: path)
    }

    public init(json bytes: [UInt8], origin: String = "the shard map") throws(ShardMapError) {
        func fail(_ message: String) -> ShardMapError { ShardMapError("\(origin): \(message)") }
        guard case .object(let members)? = try? Value(parsingJSON: bytes) else { throw fail("not a JSON object") }
        if let extra = members.keys.first(where: { !["epoch", "buckets", "common", "shards", "ranges"].contains($0) }) {
            throw fail("unknown member '\(extra)'")
        }
        guard case .integer(let epoch)? = members["epoch"], epoch >= 0 else { throw fail("epoch is a non-negative integer") }
        guard case .integer(let buckets)? = members["buckets"], (1...65536).contains(buckets) else {
            throw fail("buckets is an integer from 1 to 65536")
        }
        guard case .object(let shardMembers)? = members["shards"], !shardMembers.isEmpty else {
            throw fail("shards is an object of shard name to host:port")
        }
        var shards: [String: String] = [:]
        for (name, address) in shardMembers {
            guard Self.isShardName(name) else { throw fail("shard name '\(name)' is not 1-64 of [A-Za-z0-9_-]") }
            guard case .string(let text) = address, text.contains(":") else { throw fail("shard \(name)'s address is host:port") }
            shards[name] = text
        }
        guard case .string(let common)? = members["common"], shards[common] != nil else {
            throw fail("common names one of the shards")
        }
        guard case .array(let ranges)? = members["ranges"] else { throw fail("ranges is an array of [first, last, shard]") }
        var owners = [String?](repeating: nil, count: Int(buckets))
        for range in ranges {
            guard case .array(let parts) = range, parts.count == 3, case .integer(let first) = parts[0],
                  case .integer(let last) = parts[1], case .string(let shard) = parts[2] else {
                throw fail("a range is [first, last, shard]")
            }
            guard first >= 0, first <= last, last < buckets else { throw fail("range [\(first), \(last)] is outside 0...\(buckets - 1)") }
            guard shards[shard] != nil else { throw fail("range [\(first), \(last)] names the unknown shard \(shard)") }
            for bucket in Int(first)...Int(last) {
                guard owners[bucket] == nil else { throw fail("bucket \(bucket) is in two ranges") }
                owners[bucket] = shard
            }
        }
        if let missing = owners.firstIndex(where: { $0 == nil }) { throw fail("bucket \(missing) is in no range") }
        self.init(epoch: epoch, buckets: Int(buckets), common: common, shards: shards, owners: owners.map { $0! })
    }

    /// The map as JSON, consecutive buckets of one shard as one range.
    public var json: [UInt8] {
        var ranges: [Value] = []
        var start = 0
        for bucket in 1...buckets where bucket == buckets || owners[bucket] != owners[start] {
            ranges.append(.array([.integer(Int64(start)), .integer(Int64(bucket - 1)), .string(owners[start])]))
            start = bucket
        }
        var shardMembers = OrderedObject()
        for name in shards.keys.sorted() { shardMembers[name] = .string(shards[name]!) }
        var object = OrderedObject()
        object["epoch"] = .integer(epoch)
        object["buckets"] = .integer(Int64(buckets))
        object["common"] = .string(common)
        object["shards"] = .object(shardMembers)
        object["ranges"] = .array(ranges)
        return Value.object(object).jsonBytes() + [UInt8(ascii: "\n")]
    }

    /// Writes the map atomically (a new file renamed over the old), so a reader sees the old map or the new one.
    public func write(to path: String) throws(ShardMapError) {
        do {
            try Data(json).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ShardMapError("cannot write the shard map \(path): \(error.localizedDescription)")
        }
    }
}

public struct ShardMapError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320): zlib's `crc32`, and HAProxy's `crc32` converter.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    public static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
