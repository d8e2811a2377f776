import ArgumentParser
import Foundation

/// Where an option's value comes from: the command line, else its environment variable, else the caller's
/// default; an empty variable counts as unset. Every command resolves its options here.
///
/// One rule names every variable, as PostgREST's `Config.hs` derives `PGRST_*` from its keys: `DAOGATE_` and
/// the flag in upper case, dashes as underscores (`--max-database-size` is `DAOGATE_MAX_DATABASE_SIZE`). An
/// option naming a secret's file, `--X-file`, also takes the secret itself in the variable of `X`
/// (`--key-file`, `DAOGATE_KEY`; `--admin-token-file`, `DAOGATE_ADMIN_TOKEN`).
struct OptionSource {
    let environment: [String: String]

    init(_ environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// The environment variable of `flag` (without its dashes): `max-database-size` → `DAOGATE_MAX_DATABASE_SIZE`.
    static func variable(_ flag: String) -> String {
        "DAOGATE_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// The value of `flag`'s variable, when set and not empty.
    func environmentValue(_ flag: String) -> String? {
        environment[Self.variable(flag)].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The option, else its variable; nil when neither is given.
    func text(_ option: String?, _ flag: String) -> String? {
        option ?? environmentValue(flag)
    }

    /// Whether the option or its variable is given.
    func isGiven<T>(_ option: T?, _ flag: String) -> Bool {
        option != nil || environmentValue(flag) != nil
    }

    /// A repeatable option, else its variable's comma-separated values.
    func list(_ option: [String], _ flag: String) -> [String] {
        guard option.isEmpty else { return option }
        return (environmentValue(flag) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A number in `range`: the option, else its variable, else `fallback`; out of range, a usage error.
    func number<T: FixedWidthInteger>(_ option: T?, _ flag: String, _ fallback: T, _ range: ClosedRange<T>) throws -> T {
        let name = Self.variable(flag)
        if let option {
            guard range.contains(option) else { throw ValidationError("\(name.lowercased()) must be in \(range)") }
            return option
        }
        guard let text = environmentValue(flag) else { return fallback }
        guard let parsed = T(text), range.contains(parsed) else { throw ValidationError("\(name)=\(text) must be a number in \(range)") }
        return parsed
    }
}
