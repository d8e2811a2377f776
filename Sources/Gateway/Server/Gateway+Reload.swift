import DAODialect
import DAOEngine
import DAOValue
import Foundation
import HTTPTransport
import Synchronization

/// What one reload did (`ServerState.reload`): the module folder's outcome, and one line for each other part
/// read again (the TLS certificate, the JWT keys, the key folder), logged together.
public struct ServerReload: Sendable {
    /// One part besides the modules: applied, or kept as it was, and why.
    public struct Part: Sendable {
        public var applied: Bool
        public var message: String
        public var warnings: [String] = []

        init(applied: Bool, _ message: String, warnings: [String] = []) {
            self.applied = applied
            self.message = message
            self.warnings = warnings
        }
    }

    /// What asked for it: `SIGHUP`, `POST /admin/reload`, a JWT key file's change.
    public var reason: String
    public var parts: [Part] = []
    public var modules: ModuleReload

    init(reason: String) {
        self.reason = reason
        self.modules = ModuleReload(reason: reason)
    }
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
    /// `POST /admin/reload` (admin): the reload's report, or a 409 `modules_refused` with the problems.
    func reloadRoute(_ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        guard request.body.isEmpty else { throw Problem(.invalidBody, "POST /admin/reload takes no body") }
        guard configuration.modulesDirectory != nil else {
            throw Problem(.reloadUnavailable, "this server was started without a module folder to reload from")
        }
        // Everything is read again (`ServerState.reload`); the answer is the module folder's part, the others
        // are in the log.
        let report = state.reload(reason: "POST /admin/reload").modules
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
    /// Logs a reload's outcome, each part on a line of its own that starts with the reason, and keeps the
    /// module folder's for `GET /events`.
    func record(_ reload: ServerReload) {
        for part in reload.parts {
            if part.applied { logger?.notice("\(reload.reason): \(part.message)") } else { logger?.error("\(reload.reason): \(part.message)") }
            for warning in part.warnings { logger?.warning("\(warning)") }
        }
        let report = reload.modules
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
