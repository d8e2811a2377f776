import DAOEngine
import DAOKeyValue
import DAOValue
import HTTPTransport

/// The key-value store over HTTP (APSharedPreferences):
///
/// | route | what |
/// |---|---|
/// | `GET /kv/{space}/{business}/{key}` | the entry; `?type=` insists on a type, `?default=` (JSON) answers when absent |
/// | `PUT /kv/{space}/{business}/{key}` | `{"value", "type"?, "encrypted"?, "purgeable"?}` |
/// | `DELETE /kv/{space}/{business}/{key}` | `{"deleted": bool}` |
/// | `GET /kv/{space}/{business}` | the business's keys (`?prefix=`), with `?values=true` their values, in pages (`?limit=`, `?after=`) |
/// | `DELETE /kv/{space}/{business}` | every entry of the business |
///
/// `{space}` is `common` or `user` (the caller's own, by `X-User-Id`), in
/// the storage `X-Storage` names. The key is the rest of the path, so it may
/// hold `/`.
extension Gateway {
    /// `GET /kv/{space}/{business}`: the business's keys in key order; with `?values=true` each with its value
    /// (decrypted as the single-key GET does), the reference's `getAll`. `?limit=` (1 to 1000; 100 by default
    /// with values, else all) and `?after=KEY` page through them: `next`, present when more follow, is the
    /// `after` of the next page.
    func kvList(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let request = call.request
        let location = try databaseLocation(space: call.parameters.space, call)
        let values: Bool
        switch request.queryValue("values") {
        case nil, "false": values = false
        case "true": values = true
        case let other?: throw Problem(.invalidValue, "values is true or false, not '\(other.prefix(40))'")
        }
        var limit: Int? = values ? Self.kvPageDefault : nil
        if let text = request.queryValue("limit") {
            guard let number = Int(text), (1...Self.kvPageMaximum).contains(number) else {
                throw Problem(.invalidValue, "limit is a whole number from 1 to \(Self.kvPageMaximum), not '\(text.prefix(40))'")
            }
            limit = number
        }
        let after = request.queryValue("after")
        return try storage {
            let page = try kv.list(call.parameters.business, prefix: request.queryValue("prefix"), after: after, limit: limit,
                                   values: values, in: location)
            var body: OrderedObject = ["keys": .array(page.entries.map { entry in
                var item: OrderedObject = [
                    "key": .string(entry.key.key), "type": .string(entry.key.type.rawValue), "encrypted": .bool(entry.key.encrypted),
                    "purgeable": .bool(entry.key.purgeable), "updated": .double(entry.key.updated)]
                if let value = entry.value { item["value"] = value }
                return .object(item)
            })]
            if page.more, let last = page.entries.last { body["next"] = .string(last.key.key) }
            return json(.object(body), call.encoding)
        }
    }

    /// Entries a page of `GET /kv/{space}/{business}?values=true` holds unless `limit` says.
    static let kvPageDefault = 100
    /// The most entries one page of the listing holds.
    static let kvPageMaximum = 1000

    /// `DELETE /kv/{space}/{business}`: every entry of the business.
    func kvDeleteBusiness(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let location = try databaseLocation(space: call.parameters.space, call)
        return try storage { json(["deleted": .integer(Int64(try kv.removeBusiness(call.parameters.business, in: location)))]) }
    }

    /// `PUT /kv/{space}/{business}/{key}`.
    func kvPut(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let location = try databaseLocation(space: call.parameters.space, call)
        let members = try bodyObject(call.request, allowed: ["value", "type", "encrypted", "purgeable"],
                                     example: #"{"value": …, "type": …, "encrypted": false, "purgeable": false}"#)
        guard let value = members["value"] else { throw Problem(.invalidBody, "the body needs a value") }
        let type = try kvType(members["type"], "type")
        let encrypted = try flag(members["encrypted"], "encrypted")
        let purgeable = try flag(members["purgeable"], "purgeable")
        return try storage {
            let entry = try kv.set(call.parameters.business, call.parameters.key, value: value, type: type,
                                   encrypted: encrypted, purgeable: purgeable, in: location)
            return Self.kvResponse(entry, isDefault: false, call.encoding)
        }
    }

    /// `DELETE /kv/{space}/{business}/{key}`.
    func kvDelete(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let location = try databaseLocation(space: call.parameters.space, call)
        return try storage { json(["deleted": .bool(try kv.remove(call.parameters.business, call.parameters.key, in: location))]) }
    }

    /// `GET /kv/{space}/{business}/{key}`, the hot route of the store.
    func kvGet(_ call: RouteCall) throws(Problem) -> HTTPResponse {
        let request = call.request, business = call.parameters.business, key = call.parameters.key, encoding = call.encoding
        let location = try databaseLocation(space: call.parameters.space, call)
        var requested: KVType?
        var fallback: Value?
        if !request.query.isEmpty {
            if let name = request.queryValue("type") {
                requested = try kvType(.string(name), "type")
            }
            if let text = request.queryValue("default") {
                do {
                    fallback = try Value(parsingJSON: text, options: JSONParseOptions(binaryMarkers: true))
                } catch {
                    throw Problem(.invalidValue, "default must be JSON (a string in quotes): \(error)")
                }
            }
        }
        return try storage {
            if let entry = try kv.get(business, key, in: location) {
                if let requested, !entry.type.reads(as: requested) {
                    throw KeyValueError(.typeMismatch, "\(business)/\(key) holds \(withIndefiniteArticle(entry.type.rawValue)), not \(withIndefiniteArticle(requested.rawValue))")
                }
                return Self.kvResponse(entry, isDefault: false, encoding)
            }
            guard let fallback else {
                throw KeyValueError(.keyNotFound, "no value under \(business)/\(key.prefix(200)); ?default= answers for a missing key")
            }
            // The default has the type asked for, as the reference's typed getters return theirs.
            guard let type = requested ?? KVType.inferred(from: fallback) else {
                throw KeyValueError(.invalidValue, "a null default needs ?type=")
            }
            let value = fallback == .null ? Value.null : try KVStore.conform(fallback, to: type)
            return Self.kvResponse(KVEntry(type: type, value: value, encrypted: false, purgeable: false, updated: 0),
                                   isDefault: true, encoding)
        }
    }

    /// `{"type", "value", "encrypted", "purgeable"}`, or for a default `{"type", "value", "default": true}`;
    /// when an entry was set shows in the listing of its business.
    static func kvResponse(_ entry: KVEntry, isDefault: Bool, _ encoding: JSONWriteOptions) -> HTTPResponse {
        var body: [UInt8] = []
        body.reserveCapacity(96)
        body.append(contentsOf: #"{"type":""#.utf8)
        body.append(contentsOf: entry.type.rawValue.utf8)
        body.append(contentsOf: #"","value":"#.utf8)
        entry.value.writeJSON(to: &body, options: encoding)
        if isDefault {
            body.append(contentsOf: #","default":true}"#.utf8)
        } else {
            body.append(contentsOf: entry.encrypted ? #","encrypted":true"#.utf8 : #","encrypted":false"#.utf8)
            body.append(contentsOf: entry.purgeable ? #","purgeable":true}"#.utf8 : #","purgeable":false}"#.utf8)
        }
        return HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body)
    }

    // MARK: Shared by the storage routes

    /// The database of `{space}` for the caller: `common`, or `user` (their own).
    /// The headers are checked whenever sent, as for DAO calls; the user id once.
    func databaseLocation(space: StorageSpace, _ call: RouteCall) throws(Problem) -> DatabaseLocation {
        let caller = try caller(call)
        switch space {
        case .common:
            return .common(storage: caller.storage)
        case .user:
            guard let user = caller.user else {
                throw Problem(EngineError(.userRequired, "the user space is the caller's own: the call needs a user id"))
            }
            return .user(user, storage: caller.storage)
        }
    }

    /// Runs a storage layer's work; its errors become problems.
    func storage<T>(_ body: () throws -> T) throws(Problem) -> T {
        do {
            return try body()
        } catch {
            throw Problem(thrown: error)
        }
    }

    func kvType(_ value: Value?, _ name: String) throws(Problem) -> KVType? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let type = KVType(rawValue: text) else {
                throw Problem(.invalidValue, "\(name) is one of \(KVType.allCases.map(\.rawValue).joined(separator: ", ")), not '\(text.prefix(40))'")
            }
            return type
        case let other?:
            throw Problem(.invalidValue, "\(name) is a string, not \(other.kindPhrase)")
        }
    }

    func flag(_ value: Value?, _ name: String) throws(Problem) -> Bool {
        switch value {
        case nil, .null?: return false
        case .bool(let flag)?: return flag
        case let other?: throw Problem(.invalidValue, "\(name) is true or false, not \(other.kindPhrase)")
        }
    }
}
