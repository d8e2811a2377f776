import ArgumentParser
import DAOEngine
import Foundation
import Gateway

/// The options of `GET /changes` (the change feed), each also read from the environment.
struct ChangeFeedOptions: ParsableArguments {
    @Option(help: "Change-feed streams (GET /changes) open at once in all; beyond, 429 too_many_streams (DAOGATE_CHANGES_STREAMS; default 1000).")
    var changesStreams: Int?

    @Option(help: "Change-feed streams one user may have open at once (DAOGATE_CHANGES_STREAMS_PER_USER; default 8).")
    var changesStreamsPerUser: Int?

    @Option(help: "Bytes held for one change-feed client; a slower client is sent a final event and cut off (DAOGATE_CHANGES_BUFFER; default 1048576).")
    var changesBuffer: Int?

    @Option(help: "Seconds between a change feed's heartbeats (DAOGATE_CHANGES_HEARTBEAT; default 15).")
    var changesHeartbeat: Int?

    @Option(help: "Events of each database kept for a change-feed client to resume with Last-Event-ID (DAOGATE_CHANGES_WINDOW; default 256).")
    var changesWindow: Int?

    /// The limits, from the options, else the environment, else the defaults.
    func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> (limits: ChangeStreamLimits, window: Int) {
        let source = OptionSource(environment)
        let defaults = ChangeStreamLimits()
        let limits = ChangeStreamLimits(
            perUser: try source.number(changesStreamsPerUser, "changes-streams-per-user", defaults.perUser, 1...10_000),
            total: try source.number(changesStreams, "changes-streams", defaults.total, 1...1_000_000),
            bufferBytes: try source.number(changesBuffer, "changes-buffer", defaults.bufferBytes, 1024...1 << 30),
            heartbeat: .seconds(try source.number(changesHeartbeat, "changes-heartbeat", 15, 1...3600)))
        let window = try source.number(changesWindow, "changes-window", 256, 1...100_000)
        return (limits, window)
    }
}
