import ArgumentParser
import Sharding

extension Settings {
    /// The shard this server is (`--shard NAME --shard-map FILE`), its map read and checked; nil without one.
    func shard() throws -> Shard? {
        guard let shardName, let shardMap else { return nil }
        do {
            return try Shard(name: shardName, mapPath: shardMap, dataDirectory: data)
        } catch {
            throw RunFailure("\(error)")  // it names the file
        }
    }
}
