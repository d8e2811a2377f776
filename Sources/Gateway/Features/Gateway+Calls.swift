import DAOEngine
import DAOValue
import HTTPTransport

extension Gateway {
    /// `POST /dao/{module}/{method}`: the body is the arguments, a JSON object
    /// by name or an array by position (or nothing).
    func call(_ routeCall: RouteCall, module: String, method: String) throws(Problem) -> HTTPResponse {
        let arguments = try jsonBody(routeCall)
        switch arguments {
        case .object, .array: break
        case .null where routeCall.request.body.isEmpty: break
        default:
            // A literal `null` too: the description says object, and no body already means no arguments.
            throw Problem(.invalidBody, "the arguments must be a JSON object (by name) or array (by position), not \(arguments.kindPhrase); send no body for no arguments")
        }
        let table = nonEmpty(try header(routeCall, .table))
        let context = try context(routeCall)
        try authorizeAccess(module: module, method: method, routeCall)
        do {
            // A method the path's lookup found is called by its parts: a `Call` would be made, copied into the engine
            // and destroyed twice. By name, the arguments are moved into the call, not copied (a copy of a `Value`,
            // and its destroy, switch over its cases).
            let result = if let resolved = routeCall.parameters.resolved {
                try engine.call(resolved, arguments: arguments, table: table, context: context)
            } else {
                try engine.call(Call(module: module, method: method, arguments: consume arguments, table: table), context: context)
            }
            var body: [UInt8] = []
            body.reserveCapacity(128)
            Self.write(result, to: &body, routeCall.encoding)
            return HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body)
        } catch {
            throw Problem(error)
        }
    }

    /// `POST /transaction`: `{"calls": [{"module", "method", "arguments", "table"}, …]}`
    /// run in one transaction of the caller's database; all or nothing.
    func transaction(_ routeCall: RouteCall) throws(Problem) -> HTTPResponse {
        let request = routeCall.request, encoding = routeCall.encoding
        let body = try bodyObject(request, allowed: ["calls"], example: #"{"calls": [{"module": …, "method": …, "arguments": …}]}"#)
        guard case .array(let items)? = body["calls"] else {
            throw Problem(.invalidBody, "calls must be an array of calls")
        }
        var calls: [Call] = []
        for (index, item) in items.enumerated() {
            func invalid(_ message: String) -> Problem {
                var problem = Problem(.invalidBody, "call \(index): \(message)")
                problem.extensions["call"] = .integer(Int64(index))
                return problem
            }
            guard case .object(let members) = item else { throw invalid("a call is an object") }
            if let extra = members.keys.first(where: { !["module", "method", "arguments", "table"].contains($0) }) {
                throw invalid("unknown member '\(extra.prefix(40))' (a call has module, method, arguments, table)")
            }
            guard case .string(let module)? = members["module"], case .string(let method)? = members["method"] else {
                throw invalid("module and method are strings")
            }
            let arguments = members["arguments"] ?? .null
            switch arguments {
            case .null, .object, .array: break
            default: throw invalid("arguments must be an object or an array")
            }
            var table: String?
            switch members["table"] {
            case nil, .null?: table = nonEmpty(try header(routeCall, .table))
            case .string(let name)?: table = name
            default: throw invalid("table must be a string")
            }
            calls.append(Call(module: module, method: method, arguments: arguments, table: table))
        }
        let context = try context(routeCall)
        try admitTransaction(calls, context, routeCall.context)
        for call in calls { try authorizeAccess(module: call.module, method: call.method, routeCall) }
        do {
            let results = try engine.transaction(calls, context: context)
            var body = Array(#"{"results":["#.utf8)
            for (index, result) in results.enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                Self.write(result, to: &body, encoding)
            }
            body += Array("]}".utf8)
            return HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body)
        } catch {
            throw Problem(error)
        }
    }

    /// A call's result as the contract writes it: `{"result": …}` for a
    /// select, `{"ok": true, "changes": N, "lastInsertRowId": ID}` for a write.
    static func write(_ result: CallResult, to body: inout [UInt8], _ encoding: JSONWriteOptions) {
        switch result {
        case .value(let value):
            body.appendASCII(#"{"result":"#)
            value.writeJSON(to: &body, options: encoding)
            body.append(UInt8(ascii: "}"))
        case .write(let write):
            body.appendASCII(#"{"ok":true,"changes":"#)
            Value.integer(Int64(write.changes)).writeJSON(to: &body, options: encoding)
            body.appendASCII(#","lastInsertRowId":"#)
            Value.integer(write.lastInsertRowID).writeJSON(to: &body, options: encoding)
            body.append(UInt8(ascii: "}"))
        }
    }
}
