import DAODialect
import DAOEngine
import DAOValue
import Foundation
import HTTPTransport
import Synchronization

/// The generation of the gateway that answers: a reload replaces it whole.
///
/// Each request reads it once (`Gateway.respond`), so a request is answered
/// by one module set from start to end: calls already running finish on the
/// old set, the next ones start on the new. A generation shares the
/// server's databases, caches, counters and events with the others; only the
/// modules, their checks and the OpenAPI document are its own.
final class Generations: Sendable {
    /// nil while the first generation, which its owner holds, is current:
    /// holding it here would keep it alive through its own reference.
    private let latest = Mutex<Gateway?>(nil)
    /// Held while a reload loads and swaps: reloads run one at a time.
    let reloading = Mutex<Void>(())

    var current: Gateway? { latest.withLock { $0 } }

    func replace(with gateway: Gateway) { latest.withLock { $0 = gateway } }
}

/// What a reload of the module folder did: applied, or refused with its problems.
public struct ModuleReload: Sendable {
    /// A module whose version changed: its tables are brought to it on their next call in each database.
    public struct VersionChange: Sendable, Equatable {
        public var module: String
        public var from: String
        public var to: String
    }

    /// What asked for it: `SIGHUP`, `POST /admin/reload`.
    public var reason: String
    public var time = Date()
    /// Why the new set was refused; empty when it replaced the old one.
    public var problems: [LoadError] = []
    /// The modules in use afterwards.
    public var modules = 0
    public var added: [String] = []
    public var removed: [String] = []
    public var changed: [VersionChange] = []
    /// The new set's full table scans (`daogate check --plans`), as warnings.
    public var warnings: [PlanWarning] = []

    public var applied: Bool { problems.isEmpty }

    /// The report as JSON; `details`: the problems and warnings (their files and lines), for the admin only.
    func value(details: Bool) -> Value {
        let formatter = ISO8601DateFormatter()
        var object: OrderedObject = [
            "outcome": .string(applied ? "applied" : "refused"), "reason": .string(reason),
            "time": .string(formatter.string(from: time)), "modules": .integer(Int64(modules)),
            "added": .array(added.map(Value.string)), "removed": .array(removed.map(Value.string)),
            "changed": .array(changed.map { ["module": .string($0.module), "fromVersion": .string($0.from), "toVersion": .string($0.to)] }),
        ]
        // One type per member (a member that is a list to some and a count to others breaks generated Java
        // clients): everyone gets the count, the admin the list too.
        object["problemCount"] = .integer(Int64(problems.count))
        if details {
            object["problems"] = Self.problemsValue(problems)
            object["warnings"] = .array(warnings.map { .string($0.description) })
        }
        return .object(object)
    }

    static func problemsValue(_ problems: [LoadError]) -> Value {
        .array(problems.map { ["file": .string($0.file), "line": .integer(Int64($0.line)), "message": .string($0.message)] })
    }
}

extension Gateway {
    /// The engine of the generation that answers now (after module reloads, not the first one's).
    public var currentEngine: Engine { (generations.current ?? self).engine }

    /// Loads the module folder again, with the checks of a start (the
    /// dialect, SQLite's, the encryption key); when the new set has no
    /// problem, it replaces the one in use at once, and the OpenAPI document
    /// with it. A refused set changes nothing. Either way the outcome is
    /// logged and kept for `GET /events`.
    @discardableResult
    public func reloadModules(reason: String) -> ModuleReload {
        generations.reloading.withLock { _ in
            let current = generations.current ?? self
            var report = ModuleReload(reason: reason)
            guard let directory = configuration.modulesDirectory else {
                report.problems = [LoadError(file: "<none>", line: 0, message: "the server was started without a module folder")]
                events.record(report)
                return report
            }
            let (loaded, loadErrors) = ModuleLoader.loadDirectory(directory)
            report.problems = loadErrors + SQLCheck.check(loaded)
            if report.problems.isEmpty {
                do {
                    let engine = try current.engine.replacingModules(loaded)
                    let next = try current.nextGeneration(engine)
                    report.compare(current.engine.modules, engine.modules)
                    report.warnings = SQLCheck.plans(loaded)
                    generations.replace(with: next)
                } catch {
                    report.problems = [LoadError(file: directory, line: 0, message: "\(error)")]
                }
            }
            events.record(report)
            return report
        }
    }

    /// The generation over `engine`'s modules, sharing everything else with this one.
    func nextGeneration(_ engine: Engine) throws -> Gateway {
        try Gateway(engine: engine, events: events, configuration: configuration, metrics: metrics, kv: kv,
                    memoryCaches: memoryCaches, diskCaches: diskCaches, changeStreams: changeStreams,
                    generations: generations)
    }

    /// `POST /admin/reload` (admin): the reload's report, or a 409 `modules_refused` with the problems.
    func reloadRoute(_ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        guard request.body.isEmpty else { throw Problem(.invalidBody, "POST /admin/reload takes no body") }
        guard configuration.modulesDirectory != nil else {
            throw Problem(.reloadUnavailable, "this server was started without a module folder to reload from")
        }
        let report = reloadModules(reason: "POST /admin/reload")
        guard report.applied else {
            let count = report.problems.count
            var problem = Problem(.modulesRefused, "the module folder has \(count) problem\(count == 1 ? "" : "s"): the modules in use stay")
            problem.extensions["problems"] = ModuleReload.problemsValue(report.problems)
            throw problem
        }
        return json(report.value(details: true))
    }
}

extension ModuleReload {
    /// Fills `modules`, `added`, `removed` and `changed` from the sets before and after.
    mutating func compare(_ old: [String: Module], _ new: [String: Module]) {
        modules = new.count
        added = new.keys.filter { old[$0] == nil }.sorted()
        removed = old.keys.filter { new[$0] == nil }.sorted()
        changed = new.values.compactMap { module in
            guard let before = old[module.name], before.version != module.version else { return nil }
            return VersionChange(module: module.name, from: before.version.description, to: module.version.description)
        }.sorted { $0.module < $1.module }
    }
}

/// The reloads `GET /events` shows, the most recent last.
final class ReloadLog: Sendable {
    private let reports = Mutex<[ModuleReload]>([])
    let capacity = 20

    func append(_ report: ModuleReload) {
        reports.withLock { reports in
            reports.append(report)
            if reports.count > capacity { reports.removeFirst(reports.count - capacity) }
        }
    }

    /// The most recent first; the problems and warnings themselves for the admin only.
    func value(everything: Bool) -> Value {
        .array(reports.withLock { $0 }.reversed().map { $0.value(details: everything) })
    }
}

extension EventLog {
    /// Logs a reload's outcome and keeps it for `GET /events`.
    func record(_ report: ModuleReload) {
        reloads.append(report)
        guard report.applied else {
            logger?.error("\(report.reason): the module folder has \(report.problems.count) problem\(report.problems.count == 1 ? "" : "s"); the modules in use stay")
            for problem in report.problems { logger?.error("\(problem)") }
            return
        }
        var text = "\(report.reason): \(report.modules) module\(report.modules == 1 ? "" : "s") reloaded"
        if !report.added.isEmpty { text += ", added \(report.added.joined(separator: ", "))" }
        if !report.removed.isEmpty { text += ", removed \(report.removed.joined(separator: ", "))" }
        for change in report.changed { text += ", \(change.module) \(change.from) → \(change.to)" }
        logger?.notice("\(text)")
        for warning in report.warnings { logger?.warning("\(warning)") }
    }
}
