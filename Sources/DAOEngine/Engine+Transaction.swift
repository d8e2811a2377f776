import DAODialect
import DAOValue

extension Engine {
    /// Runs several calls in one transaction of one database: all or nothing
    /// (the reference's `daoTransaction`). Every call must use the same
    /// database; the result lists each call's result.
    ///
    /// An argument value anywhere in a call's arguments may be a result reference,
    /// `{"$result": "/0/lastInsertRowId"}` (`ResultReference`): the value at that JSON Pointer in the results of
    /// the calls before it. Every reference's form, and that it names an earlier call, is checked before the
    /// transaction opens; a call without references is rendered then too, one with references when it runs,
    /// its resolved values checked against the method's arguments like any value.
    public func transaction(_ calls: [Call], context: CallContext = CallContext()) throws(EngineError) -> [CallResult] {
        var targets: [Target] = []
        // nil: the call has references, rendered when it runs.
        var renders: [[RenderedRun]?] = []
        for (index, call) in calls.enumerated() {
            do throws(EngineError) {
                let target = try target(of: call, context: context)
                if let first = targets.first, first.location != target.location {
                    throw EngineError(.invalidArguments, "module \(target.module.name) uses another database (\(target.location)) than module \(first.module.name) (\(first.location)); a transaction runs in one database")
                }
                targets.append(target)
                renders.append(try ResultReference.check(call.arguments, call: index) ? nil : try render(call.arguments, target, context))
            } catch {
                var failure = error
                failure.callIndex = index
                throw failure
            }
        }
        guard let location = targets.first?.location else { return [] }
        return try withDatabase(location) { database throws(EngineError) in
            try writing(targets, in: database) { db throws(EngineError) in
                try transaction(db) { () throws(EngineError) in
                    var results: [CallResult] = []
                    results.reserveCapacity(targets.count)
                    for (index, target) in targets.enumerated() {
                        do throws(EngineError) {
                            let runs: [RenderedRun]
                            if let rendered = renders[index] {
                                runs = rendered
                            } else {
                                let arguments = try ResultReference.resolve(calls[index].arguments, in: results, call: index)
                                runs = try render(arguments, target, context)
                            }
                            results.append(target.method.kind == .select
                                ? .value(try select(target, runs, on: db))
                                : .write(try write(target, runs, on: db)))
                        } catch {
                            var failure = error
                            failure.callIndex = index
                            throw failure
                        }
                    }
                    return results
                }
            }
        }
    }
}

extension CallResult {
    /// A member of `json` without writing it out: `result`, or `ok`, `changes`, `lastInsertRowId`.
    func member(_ name: String) -> Value? {
        switch self {
        case .value(let value): return name == "result" ? value : nil
        case .write(let write):
            switch name {
            case "ok": return .bool(true)
            case "changes": return .integer(Int64(write.changes))
            case "lastInsertRowId": return .integer(write.lastInsertRowID)
            default: return nil
            }
        }
    }

    /// The result as the API writes it, which a result reference points into:
    /// `{"result": …}` for a select, `{"ok": true, "changes": N, "lastInsertRowId": ID}` for a write.
    public var json: Value {
        switch self {
        case .value(let value):
            return .object(["result": value])
        case .write(let write):
            return .object(["ok": .bool(true), "changes": .integer(Int64(write.changes)),
                            "lastInsertRowId": .integer(write.lastInsertRowID)])
        }
    }
}

/// A transaction call's argument value that stands for an earlier call's result:
/// `{"$result": "/0/lastInsertRowId"}`, an object whose single member `$result` is a JSON Pointer
/// (RFC 6901, `~0` for `~` and `~1` for `/`) into the array of the results of the calls before it, each as
/// the API writes it (`CallResult.json`). Its first token is the index of an earlier call.
///
/// In a transaction's arguments, at any depth, an object with a member `$result` is a reference: one that
/// has other members too, a `$result` that is not a string, a string that is not a JSON Pointer, a pointer to
/// the same or a later call, or to a member that does not exist, is `invalid_reference`.
enum ResultReference {
    /// The member that makes an object a reference.
    static let member = "$result"

    /// Whether `arguments` hold references, each checked in form and in naming an earlier call than `call`.
    static func check(_ arguments: Value, call: Int) throws(EngineError) -> Bool {
        switch arguments {
        case .object(let members):
            if let target = members[member] {
                _ = try pointer(target, members.count, call: call)
                return true
            }
            var found = false
            for value in members.values {
                if try check(value, call: call) { found = true }
            }
            return found
        case .array(let values):
            var found = false
            for value in values {
                if try check(value, call: call) { found = true }
            }
            return found
        default:
            return false
        }
    }

    /// `arguments` with each reference replaced by the value it points to in `results`.
    static func resolve(_ arguments: Value, in results: [CallResult], call: Int) throws(EngineError) -> Value {
        switch arguments {
        case .object(let members):
            if let target = members[member] {
                let (text, tokens) = try pointer(target, members.count, call: call)
                let result = results[Int(tokens[0])!]
                // The result's own members are read without writing the result out as JSON.
                guard tokens.count > 1, var value = result.member(tokens[1]) else {
                    return try walk(result.json, tokens[1...], from: "/" + tokens[0], text, call: call)
                }
                if tokens.count > 2 {
                    value = try walk(value, tokens[2...], from: "/" + tokens[0] + "/" + escaped(tokens[1]), text, call: call)
                }
                return value
            }
            var resolved = members
            for (index, value) in members.values.enumerated() {
                resolved.values[index] = try resolve(value, in: results, call: call)
            }
            return .object(resolved)
        case .array(let values):
            var resolved: [Value] = []
            resolved.reserveCapacity(values.count)
            for value in values { resolved.append(try resolve(value, in: results, call: call)) }
            return .array(resolved)
        default:
            return arguments
        }
    }

    /// The value at `tokens` in `value` (reached by `walked`), or `invalid_reference` naming the first member missing.
    private static func walk(_ value: Value, _ tokens: ArraySlice<String>, from walked: String, _ text: String,
                             call: Int) throws(EngineError) -> Value {
        var value = value
        var walked = walked
        for token in tokens {
            let next: Value?
            switch value {
            case .object(let object): next = object[token]
            case .array(let elements):
                next = index(token).flatMap { $0 < elements.count ? elements[$0] : nil }
            default: next = nil
            }
            guard let next else {
                var what = value.kindPhrase
                if case .object(let object) = value {
                    what += " (" + object.keys.prefix(10).joined(separator: ", ") + (object.count > 10 ? ", …)" : ")")
                } else if case .array(let elements) = value {
                    what += " of \(elements.count)"
                }
                throw invalid(call, text, "\(walked) is \(what), which has no member '\(token.prefix(80))'")
            }
            value = next
            walked += "/" + escaped(token)
        }
        return value
    }

    /// A reference's pointer, as written and as tokens (unescaped), the first an earlier call's index.
    private static func pointer(_ target: Value, _ memberCount: Int, call: Int) throws(EngineError) -> (String, [String]) {
        guard case .string(let text) = target else {
            throw invalid(call, nil, "$result must be a JSON Pointer string such as \"/0/lastInsertRowId\", not \(target.kindPhrase)")
        }
        guard memberCount == 1 else {
            throw invalid(call, text, "a reference is an object with the single member $result")
        }
        guard text.first == "/" else {
            throw invalid(call, text, "a JSON Pointer starts with '/' and its first token is an earlier call's index, as in \"/0/lastInsertRowId\"")
        }
        let parts = text.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var tokens: [String] = []
        tokens.reserveCapacity(parts.count)
        for part in parts {
            guard part.utf8.contains(UInt8(ascii: "~")) else {
                tokens.append(String(part))
                continue
            }
            var token = ""
            var characters = part.makeIterator()
            while let character = characters.next() {
                guard character == "~" else { token.append(character); continue }
                switch characters.next() {
                case "0": token.append("~")
                case "1": token.append("/")
                default: throw invalid(call, text, "'~' in a JSON Pointer is '~0' (for ~) or '~1' (for /)")
                }
            }
            tokens.append(token)
        }
        guard let index = index(tokens[0]) else {
            throw invalid(call, text, "the first token names a call by its index (0 for the first), not '\(tokens[0].prefix(40))'")
        }
        guard index < call else {
            throw invalid(call, text, "it points to call \(index), and a call can only use the results of the calls before it"
                + (call == 0 ? " (call 0 is the first)" : " (0 to \(call - 1))"))
        }
        return (text, tokens)
    }

    /// An array index token: `0`, or digits not starting with `0`.
    private static func index(_ token: String) -> Int? {
        let digits = token.utf8
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              digits.count == 1 || digits.first != UInt8(ascii: "0") else { return nil }
        return Int(token)
    }

    private static func escaped(_ token: String) -> String {
        var text = ""
        for character in token {
            switch character {
            case "~": text += "~0"
            case "/": text += "~1"
            default: text.append(character)
            }
        }
        return text
    }

    private static func invalid(_ call: Int, _ pointer: String?, _ problem: String) -> EngineError {
        let shown = pointer.map { " \"\($0.prefix(200))\"" } ?? ""
        var error = EngineError(.invalidReference, "call \(call): the reference\(shown) is invalid: \(problem)")
        error.callIndex = call
        error.reference = pointer.map { String($0.prefix(200)) }
        return error
    }
}
