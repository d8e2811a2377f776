import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Synchronization
import Testing

/// A table upgraded by a reloaded module set while both sets run calls on
/// the same file: a call of the new set never runs against the table as it
/// was before the upgrade, whatever connection (the writer, a reader with a
/// snapshot) its read lands on.
@Suite struct UpgradeRaceTests {
    let fixture = EngineFixture()

    /// Version `round`.0 of a module whose every upgrade adds a column, with
    /// a select of the newest one.
    func notes(_ round: Int) throws -> Module {
        let upgrades = (0..<round).map { step in
            #"<upgrade toVersion="\#(step + 1).0"><step>alter table ${T} add column c\#(step + 1) text</step></upgrade>"#
        }.joined(separator: "\n")
        let newest = round == 0 ? "body" : "coalesce(c\(round), 'none')"
        return try fixture.module("""
            <module name="Notes" initializer="create" tableName="notes" version="\(round).0">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              \(upgrades)
              <insert id="add" arguments="$body:string">insert into ${T} (body) values (#{body})</insert>
              <select id="count" result="int">select count(*) from ${T}</select>
              <select id="newest" result="[string]">select \(newest) from ${T} order by id desc limit 1</select>
            </module>
            """, file: "notes-\(round).xml")
    }

    /// Runs `bodies` on threads of their own, at once; what they threw.
    func together(_ bodies: [@Sendable () throws -> Void]) -> [String] {
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for body in bodies {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do { try body() } catch { failures.withLock { $0.append("\(error)") } }
            }
        }
        group.wait()
        return failures.withLock { $0 }
    }

    /// A module at version 1.0, or at 2.0 with an upgrade that adds the column `tag` and a select of it.
    func module(_ name: String, table: String, upgraded: Bool) throws -> Module {
        try fixture.module("""
            <module name="\(name)" initializer="create" tableName="\(table)" version="\(upgraded ? "2.0" : "1.0")">
              <update id="create">create table if not exists ${T} (id integer primary key, body text)</update>
              \(upgraded ? #"<upgrade toVersion="2.0"><step>alter table ${T} add column tag text</step></upgrade>"# : "")
              <insert id="add" arguments="$body:string">insert into ${T} (body) values (#{body})</insert>
              <select id="count" result="int">select count(*) from ${T}</select>
              \(upgraded ? #"<select id="tags" result="[string]">select coalesce(tag, 'none') from ${T} order by id desc limit 1</select>"# : "")
            </module>
            """, file: "\(name)-\(upgraded ? 2 : 1).xml")
    }

    /// Calls the hook with each table event, on the thread that emits it
    /// (`should_upgrade` under the writer, before the upgrade).
    final class Hook: EngineObserver {
        let handler = Mutex<(@Sendable (TableEvent) -> Void)?>(nil)
        func engine(_ engine: Engine, didEmit event: TableEvent) { handler.withLock { $0 }?(event) }
    }

    /// The race, made to happen every time: one transaction of the new set
    /// upgrades two tables under one hold of the writer. As the first
    /// upgrade begins, the old set reads on a reader (the writer is busy),
    /// whose snapshot predates the upgrade; as the second begins, the first
    /// table is upgraded and committed, and the new set reads it. That read
    /// must see the new column: it waits for the writer, rather than
    /// trusting a readiness recorded before the writer's release and reading
    /// in the reader's old snapshot ("no such column: tag").
    @Test func aReadWhileAnUpgradeHoldsTheWriterSeesTheUpgradedTable() throws {
        let hook = Hook()
        let old = try Engine(modules: [try module("Notes", table: "notes", upgraded: false),
                                       try module("Other", table: "extras", upgraded: false)],
                             configuration: Engine.Configuration(dataDirectory: fixture.dataDirectory), observer: hook)
        defer { old.shutdown() }
        try old.write("Notes", "add", #"["first"]"#)
        try old.write("Other", "add", #"["first"]"#)
        #expect(try old.value("Notes", "count") == .integer(1))
        let new = try old.replacingModules([try module("Notes", table: "notes", upgraded: true),
                                            try module("Other", table: "extras", upgraded: true)])

        let outcomes = Mutex<[String: String]>([:])
        let reads = DispatchGroup()
        hook.handler.withLock { handler in
            handler = { event in
                guard event.kind == .shouldUpgrade else { return }
                let finished = DispatchSemaphore(value: 0)
                reads.enter()
                Thread.detachNewThread {
                    defer { finished.signal(); reads.leave() }
                    let outcome: String
                    do {
                        // Before Notes' upgrade: the old set's read, on a reader. Before Other's: the new set's.
                        outcome = event.module == "Notes" ? "\(try old.value("Notes", "count"))" : "\(try new.value("Notes", "tags"))"
                    } catch {
                        outcome = "\(error)"
                    }
                    outcomes.withLock { $0[event.module] = outcome }
                }
                // The old set's read needs no writer; the new set's may wait for it, until this transaction ends.
                _ = finished.wait(timeout: .now() + .milliseconds(event.module == "Notes" ? 10_000 : 300))
            }
        }
        _ = try new.transaction([Call(module: "Notes", method: "add", arguments: .array([.string("second")])),
                                 Call(module: "Other", method: "add", arguments: .array([.string("second")]))])
        reads.wait()
        #expect(outcomes.withLock { $0 } == ["Notes": "\(Value.integer(1))", "Other": "\(Value.array([.string("none")]))"])
        #expect(try new.value("Notes", "tags") == .array([.string("none")]))
    }

    @Test func callsOfTheNewSetNeverMeetTheTableBeforeItsUpgrade() throws {
        var old = try fixture.engine([try notes(0)])
        defer { old.shutdown() }
        try old.write("Notes", "add", #"["first"]"#)
        var failures: [String] = []
        for round in 1...12 {
            let current = old
            let new = try current.replacingModules([try notes(round)])
            let stop = Atomic<Bool>(false)
            failures += together([
                // The old set keeps writing and reading: the writer is busy, reads go to readers.
                { while !stop.load(ordering: .relaxed) { try current.write("Notes", "add", #"["old"]"#) } },
                { while !stop.load(ordering: .relaxed) { _ = try current.value("Notes", "count") } },
                // The new set's first write upgrades the table; its reads must see the new column.
                {
                    defer { stop.store(true, ordering: .relaxed) }
                    for _ in 0..<40 { try new.write("Notes", "add", #"["new"]"#) }
                },
                { while !stop.load(ordering: .relaxed) { _ = try new.value("Notes", "newest") } },
                { while !stop.load(ordering: .relaxed) { _ = try new.value("Notes", "newest") } },
            ])
            #expect(try new.value("Notes", "newest") == .array([.string("none")]))
            old = new
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }
}
