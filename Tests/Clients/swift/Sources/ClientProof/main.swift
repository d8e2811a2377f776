// Every method of the example modules, a transaction, the key-value store,
// both caches and error cases through the Swift client that
// swift-openapi-generator makes of daogate's description; each request also
// goes, as raw HTTP with the same JSON, to a twin server, and the typed
// result (encoded back to JSON) must equal what the twin answers.
//
// usage: ClientProof CLIENT_SERVER_URL RAW_SERVER_URL
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OpenAPIRuntime
import OpenAPIURLSession

let arguments = CommandLine.arguments
guard arguments.count == 3, let clientURL = URL(string: arguments[1]), let rawURL = URL(string: arguments[2]) else {
    print("usage: ClientProof CLIENT_SERVER_URL RAW_SERVER_URL")
    exit(2)
}
let client = Client(serverURL: clientURL, transport: URLSessionTransport())
var failures: [String] = []
var calls = 0

/// JSON as Foundation objects, members that are null left out: the generated
/// types leave out a nil optional, the server writes it as null.
func normalized(_ value: Any) -> Any {
    if let object = value as? [String: Any] {
        return object.filter { !($0.value is NSNull) }.mapValues(normalized)
    }
    if let array = value as? [Any] { return array.map(normalized) }
    return value
}

func json(_ data: Data) -> Any? {
    (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])).map(normalized)
}

/// A request as raw HTTP to the twin server: its status and JSON.
func raw(_ method: String, _ path: String, body: Data?, headers: [String: String]) async throws -> (Int, Any?) {
    var request = URLRequest(url: URL(string: rawURL.absoluteString + path)!)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    if let body {
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
    }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as! HTTPURLResponse).statusCode, json(data))
}

/// Whether two JSON values (as JSONSerialization gives them) are equal.
func equal(_ a: Any?, _ b: Any?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case (let a as [String: Any], let b as [String: Any]):
        return Set(a.keys) == Set(b.keys) && a.allSatisfy { equal($0.value, b[$0.key]) }
    case (let a as [Any], let b as [Any]):
        return a.count == b.count && zip(a, b).allSatisfy { equal($0, $1) }
    case (let a as String, let b as String): return a == b
    case (is NSNull, is NSNull): return true
    case (let a as NSNumber, let b as NSNumber): return a == b
    default: return false
    }
}

/// A JSON value without the members of these names, at any depth: each
/// twin's own clock (`sentAt`, `updated`) differs.
func without(_ value: Any?, _ names: Set<String>) -> Any? {
    guard !names.isEmpty, let value else { return value }
    if let object = value as? [String: Any] {
        return object.filter { !names.contains($0.key) }.mapValues { without($0, names) as Any }
    }
    if let array = value as? [Any] { return array.map { without($0, names) as Any } }
    return value
}

struct NoBody: Encodable {}

/// One call both ways: the generated client's (`typed`, which throws unless
/// the answer is the status expected) and raw HTTP's with the same JSON body.
/// Records a failure when they differ; returns the typed result.
@discardableResult
func same<Body: Encodable, Result: Encodable>(
    _ name: String, method: String = "POST", _ path: String, body: Body? = NoBody?.none, user: String? = nil,
    table: String? = nil, expect: Int = 200, ignore: Set<String> = [], _ typed: () async throws -> Result
) async -> Result? {
    calls += 1
    var headers: [String: String] = [:]
    if let user { headers["X-User-Id"] = user }
    if let table { headers["X-Table-Name"] = table }
    do {
        let encoder = JSONEncoder()
        let result = try await typed()
        let bodyData = try body.map { try encoder.encode($0) }
        var (status, expected) = try await raw(method, path, body: bodyData, headers: headers)
        var got = json(try encoder.encode(result))
        (got, expected) = (without(got, ignore), without(expected, ignore))
        if status != expect {
            failures.append("\(name): raw HTTP got status \(status), expected \(expect)")
        } else if !equal(got, expected) {
            failures.append("\(name): the client got \(got ?? "nothing"), raw HTTP got \(expected ?? "nothing")")
        }
        return result
    } catch {
        failures.append("\(name): \(error)")
        return nil
    }
}

func check(_ condition: Bool, _ message: String) {
    if !condition { failures.append(message) }
}

/// Any JSON value, for the members the description leaves untyped.
func any(_ value: (any Sendable)?) throws -> OpenAPIValueContainer { try OpenAPIValueContainer(unvalidatedValue: value) }

// MARK: Demo: insert, read back by lastInsertRowId.

let demoItem = Operations.DemoInsertItem.Input.Body.JsonPayload(content: "something")
let inserted = await same("Demo.insertItem", "/dao/Demo/insertItem", body: demoItem) {
    try await client.demoInsertItem(body: .json(demoItem)).ok.body.json
}
check(inserted?.ok == true && inserted?.changes == 1 && inserted?.lastInsertRowId == 1, "Demo.insertItem: \(String(describing: inserted))")
for index: Int64 in [1, 99] {
    let body = Operations.DemoGetItem.Input.Body.JsonPayload(index: index)
    let item = await same("Demo.getItem", "/dao/Demo/getItem", body: body) { try await client.demoGetItem(body: .json(body)).ok.body.json }
    check(item?.result == (index == 1 ? "something" : nil), "Demo.getItem \(index): \(String(describing: item))")
}

// MARK: Messages: a per-user module with a map, crypt and a foreach insert.

let ann = "ann@example.com"  // swift-openapi-runtime sends it as ann%40example.com
let addMessages = Operations.MessagesAddMessages.Input.Body.JsonPayload(messages: [
    .init(content: try any("hello"), msgId: 10, read: true, time: 1_700_000_000, uin: 7),
    .init(content: try any("again"), msgId: 11, read: false, time: 1_700_000_100, uin: 7),
], onlyRead: false)
await same("Messages.addMessages", "/dao/Messages/addMessages", body: addMessages, user: ann) {
    try await client.messagesAddMessages(headers: .init(xUserId: ann), body: .json(addMessages)).ok.body.json
}
let insertMessage = Operations.MessagesInsertMessage.Input.Body.JsonPayload(
    model: .init(content: try any("third"), read: false, time: 1_700_000_200, uin: 8))
await same("Messages.insertMessage", "/dao/Messages/insertMessage", body: insertMessage, user: ann) {
    try await client.messagesInsertMessage(headers: .init(xUserId: ann), body: .json(insertMessage)).ok.body.json
}
let find = Operations.MessagesFind.Input.Body.JsonPayload(id: 10, time: 1)
let found = await same("Messages.find", "/dao/Messages/find", body: find, user: ann) {
    try await client.messagesFind(headers: .init(xUserId: ann), body: .json(find)).ok.body.json
}
check(found?.result?.msgId == 10, "Messages.find: \(String(describing: found))")
for msgId: Int64 in [11, 1] {
    let body = Operations.MessagesGetMessage.Input.Body.JsonPayload(msgId: msgId)
    let message = await same("Messages.getMessage", "/dao/Messages/getMessage", body: body, user: ann) {
        try await client.messagesGetMessage(headers: .init(xUserId: ann), body: .json(body)).ok.body.json
    }
    check((message?.result?.id == 11) == (msgId == 11), "Messages.getMessage \(msgId): \(String(describing: message))")
}
let messagesOf = Operations.MessagesMessagesOf.Input.Body.JsonPayload(uin: 7)
let messages = await same("Messages.messagesOf", "/dao/Messages/messagesOf", body: messagesOf, user: ann) {
    try await client.messagesMessagesOf(headers: .init(xUserId: ann), body: .json(messagesOf)).ok.body.json
}
check(messages?.result.map(\.msgId) == [11, 10], "Messages.messagesOf: \(String(describing: messages))")
let unread = await same("Messages.unreadCount", "/dao/Messages/unreadCount", user: ann) {
    try await client.messagesUnreadCount(headers: .init(xUserId: ann)).ok.body.json
}
check(unread?.result == 2, "Messages.unreadCount: \(String(describing: unread))")
let remove = Operations.MessagesRemove.Input.Body.JsonPayload(msgId: 11)
await same("Messages.remove", "/dao/Messages/remove", body: remove, user: ann) {
    try await client.messagesRemove(headers: .init(xUserId: ann), body: .json(remove)).ok.body.json
}
await same("Messages.unreadCount (another user)", "/dao/Messages/unreadCount", user: "bob") {
    try await client.messagesUnreadCount(headers: .init(xUserId: "bob")).ok.body.json
}
// The percent-encoded id reached ann@example.com's own storage, as raw HTTP names it.
if let (_, stored) = try? await raw("POST", "/dao/Messages/unreadCount", body: nil, headers: ["X-User-Id": ann]) {
    check((stored as? [String: Any])?["result"] as? Int == 1, "the twin's ann@example.com has 1 unread: \(stored ?? "nothing")")
}
let viaClient = try? await client.messagesUnreadCount(headers: .init(xUserId: ann)).ok.body.json.result
check(viaClient == 1, "ann@example.com has 1 unread message through the client: \(String(describing: viaClient))")

// MARK: Books: dynamic SQL of every kind.

for book in [Operations.BooksAddBook.Input.Body.JsonPayload(authorName: "Hipp", isbn: "1", title: "SQLite", year: 2000),
             .init(authorName: "Lattner", featured: true, isbn: "2", title: "Swift", year: 2014),
             .init(isbn: "3", title: "abc1", year: 2020)] {
    await same("Books.addBook", "/dao/Books/addBook", body: book) { try await client.booksAddBook(body: .json(book)).ok.body.json }
}
let duplicate = Operations.BooksAddBook.Input.Body.JsonPayload(isbn: "1", title: "dup")
let conflict = await same("Books.addBook (duplicate)", "/dao/Books/addBook", body: duplicate, expect: 409) {
    try await client.booksAddBook(body: .json(duplicate)).conflict.body.applicationProblemJson
}
check(conflict?.code == "constraint_violation", "Books.addBook duplicate: \(String(describing: conflict))")
for body in [Operations.BooksFindBooks.Input.Body.JsonPayload(title: "S%"),
             .init(author: .init(name: "Lattner"), state: "ACTIVE"),
             .init()] {
    await same("Books.findBooks", "/dao/Books/findBooks", body: body) { try await client.booksFindBooks(body: .json(body)).ok.body.json }
}
for body in [Operations.BooksSearchActive.Input.Body.JsonPayload(), .init(author: .init(name: "Hipp"))] {
    await same("Books.searchActive", "/dao/Books/searchActive", body: body) { try await client.booksSearchActive(body: .json(body)).ok.body.json }
}
let byIds = Operations.BooksByIds.Input.Body.JsonPayload(idList: [1, 3])
await same("Books.byIds", "/dao/Books/byIds", body: byIds) { try await client.booksByIds(body: .json(byIds)).ok.body.json }
let byCodes = Operations.BooksByCodes.Input.Body.JsonPayload(list: ["1", "2"], prefix: "abc")
let codes = await same("Books.byCodes", "/dao/Books/byCodes", body: byCodes) { try await client.booksByCodes(body: .json(byCodes)).ok.body.json }
check(codes?.result == ["abc1"], "Books.byCodes: \(String(describing: codes))")
let recent = Operations.BooksRecentTitles.Input.Body.JsonPayload(authors: ["a", "b"], title: "x", year: 2010)
await same("Books.recentTitles", "/dao/Books/recentTitles", body: recent) { try await client.booksRecentTitles(body: .json(recent)).ok.body.json }
let email = Operations.BooksUpdateAuthor.Input.Body.JsonPayload(email: "h@sqlite.org", id: 1)
await same("Books.updateAuthor", "/dao/Books/updateAuthor", body: email) { try await client.booksUpdateAuthor(body: .json(email)).ok.body.json }
let nothing = Operations.BooksUpdateAuthor.Input.Body.JsonPayload(id: 1, password: "p", username: "u")
let skipped = await same("Books.updateAuthor (nothing to set)", "/dao/Books/updateAuthor", body: nothing) {
    try await client.booksUpdateAuthor(body: .json(nothing)).ok.body.json
}
check(skipped?.changes == 0, "Books.updateAuthor with nothing to set: \(String(describing: skipped))")
let selectBook = Operations.BooksSelectBook.Input.Body.JsonPayload(id: 1)
let book = await same("Books.selectBook", "/dao/Books/selectBook", body: selectBook) { try await client.booksSelectBook(body: .json(selectBook)).ok.body.json }
check(book?.result?.email == "h@sqlite.org" && book?.result?.year == 2000, "Books.selectBook: \(String(describing: book))")
let sorted = Operations.BooksSorted.Input.Body.JsonPayload(direction: "DESC", orderBy: "year")
let sortedBooks = await same("Books.sorted", "/dao/Books/sorted", body: sorted) { try await client.booksSorted(body: .json(sorted)).ok.body.json }
check(sortedBooks?.result.first?.title == "abc1", "Books.sorted: \(String(describing: sortedBooks))")
let unsafe = Operations.BooksSorted.Input.Body.JsonPayload(orderBy: "year; drop table books")
let refused = await same("Books.sorted (unsafe)", "/dao/Books/sorted", body: unsafe, expect: 400) {
    try await client.booksSorted(body: .json(unsafe)).badRequest.body.applicationProblemJson
}
check(refused?.code == "unsafe_inline", "Books.sorted unsafe: \(String(describing: refused))")
let titlesFrom = Operations.BooksTitlesFrom.Input.Body.JsonPayload(year: 2010)
let titles = await same("Books.titlesFrom", "/dao/Books/titlesFrom", body: titlesFrom) { try await client.booksTitlesFrom(body: .json(titlesFrom)).ok.body.json }
check(titles?.result == ["Swift", "abc1"], "Books.titlesFrom: \(String(describing: titles))")
let removeBook = Operations.BooksRemoveBook.Input.Body.JsonPayload(id: 3)
await same("Books.removeBook", "/dao/Books/removeBook", body: removeBook) { try await client.booksRemoveBook(body: .json(removeBook)).ok.body.json }

// MARK: Templates: try/except keeps the rowid.

for (time, data, tag) in [(Int64(5), "first", "x"), (6, "second", "y")] {
    let body = Operations.TemplatesInsertTemplates.Input.Body.JsonPayload(templates: [
        .init(data: data, tag: tag, time: time, tplId: "a", tplVersion: 1),
    ])
    await same("Templates.insertTemplates", "/dao/Templates/insertTemplates", body: body) {
        try await client.templatesInsertTemplates(body: .json(body)).ok.body.json
    }
}
let getTemplate = Operations.TemplatesGetTemplate.Input.Body.JsonPayload(tplId: "a", tplVersion: 1)
let template = await same("Templates.getTemplate", "/dao/Templates/getTemplate", body: getTemplate) {
    try await client.templatesGetTemplate(body: .json(getTemplate)).ok.body.json
}
check(template?.result?.data == "second" && template?.result?.rowid == 1, "Templates.getTemplate: \(String(describing: template))")

// MARK: ChatMessages: a template module, its table per call.

for (sender, text) in [("ann", "hi"), ("bob", "yo")] {
    let body = Operations.ChatMessagesSend.Input.Body.JsonPayload(body: text, sender: sender)
    await same("ChatMessages.send", "/dao/ChatMessages/send", body: body, user: "u", table: "chat_1") {
        try await client.chatMessagesSend(headers: .init(xUserId: "u", xTableName: "chat_1"), body: .json(body)).ok.body.json
    }
}
let latest = Operations.ChatMessagesLatest.Input.Body.JsonPayload(limit: 10)
let chat = await same("ChatMessages.latest", "/dao/ChatMessages/latest", body: latest, user: "u", table: "chat_1", ignore: ["sentAt"]) {
    try await client.chatMessagesLatest(headers: .init(xUserId: "u", xTableName: "chat_1"), body: .json(latest)).ok.body.json
}
check(chat?.result.map(\.body) == ["yo", "hi"], "ChatMessages.latest: \(String(describing: chat))")
await same("ChatMessages.clear", "/dao/ChatMessages/clear", user: "u", table: "chat_1") {
    try await client.chatMessagesClear(headers: .init(xUserId: "u", xTableName: "chat_1")).ok.body.json
}
await same("ChatMessages.latest (another table)", "/dao/ChatMessages/latest", body: latest, user: "u", table: "chat_2") {
    try await client.chatMessagesLatest(headers: .init(xUserId: "u", xTableName: "chat_2"), body: .json(latest)).ok.body.json
}

// MARK: A transaction: a write and a select, told apart by their members (`ok` marks a write).

let transaction = Operations.DaogateTransaction.Input.Body.JsonPayload(calls: [
    .init(arguments: try any(["content": "in a transaction"]), method: "insertItem", module: .demo),
    .init(arguments: try any([2]), method: "getItem", module: .demo),
])
let results = await same("transaction", "/transaction", body: transaction) {
    try await client.daogateTransaction(body: .json(transaction)).ok.body.json
}
if let results = results?.results, results.count == 2, results[0].ok == true, results[1].ok == nil {
    check(results[0].lastInsertRowId == 2 && results[1].result?.value as? String == "in a transaction", "transaction: \(results)")
} else {
    failures.append("transaction: a write result then a select result, got \(String(describing: results))")
}

// MARK: A transaction whose later calls use earlier results: ResultReference values, made with the generated type.

/// Arguments holding a ResultReference at `name` (by name) or alone (by position, `name` nil).
func referring(_ name: String?, to pointer: String) throws -> OpenAPIValueContainer {
    let reference = try JSONDecoder().decode(Components.Schemas.ResultReference.self, from: Data(#"{"$result": "\#(pointer)"}"#.utf8))
    let encoded = String(decoding: try JSONEncoder().encode(reference), as: UTF8.self)
    let arguments = name.map { #"{"\#($0)": \#(encoded)}"# } ?? "[\(encoded)]"
    return try JSONDecoder().decode(OpenAPIValueContainer.self, from: Data(arguments.utf8))
}
let chained = Operations.DaogateTransaction.Input.Body.JsonPayload(calls: [
    .init(arguments: try any(["content": "parent"]), method: "insertItem", module: .demo),
    .init(arguments: try referring("index", to: "/0/lastInsertRowId"), method: "getItem", module: .demo),
    .init(arguments: try referring(nil, to: "/1/result"), method: "insertItem", module: .demo),
])
let chainedResults = await same("transaction with references", "/transaction", body: chained) {
    try await client.daogateTransaction(body: .json(chained)).ok.body.json
}
if let results = chainedResults?.results, results.count == 3 {
    check(results[1].result?.value as? String == "parent" && results[2].ok == true
          && results[2].lastInsertRowId == (results[0].lastInsertRowId ?? 0) + 1, "transaction with references: \(results)")
} else {
    failures.append("transaction with references: three results, got \(String(describing: chainedResults))")
}
let forward = Operations.DaogateTransaction.Input.Body.JsonPayload(calls: [
    .init(arguments: try referring("index", to: "/0/lastInsertRowId"), method: "getItem", module: .demo),
])
let selfReference = await same("transaction with a reference to itself", "/transaction", body: forward, expect: 400) {
    try await client.daogateTransaction(body: .json(forward)).badRequest.body.applicationProblemJson
}
check(selfReference?.code == "invalid_reference", "transaction with a reference to itself: \(String(describing: selfReference))")

// MARK: The key-value store, in the user's space.

let put = Components.Schemas.KVPut(purgeable: true, _type: .json, value: try any(["a": 1]))
await same("kv put", method: "PUT", "/kv/user/settings/theme", body: put, user: ann) {
    try await client.kvPutUser(path: .init(business: "settings", key: "theme"), headers: .init(xUserId: ann), body: .json(put)).ok.body.json
}
let entry = await same("kv get", method: "GET", "/kv/user/settings/theme", user: ann) {
    try await client.kvGetUser(path: .init(business: "settings", key: "theme"), headers: .init(xUserId: ann)).ok.body.json
}
check(entry?._type == .json, "kv get: \(String(describing: entry))")
await same("kv list", method: "GET", "/kv/user/settings?prefix=th", user: ann, ignore: ["updated"]) {
    try await client.kvListUser(path: .init(business: "settings"), query: .init(prefix: "th"), headers: .init(xUserId: ann)).ok.body.json
}
let missing = await same("kv get (absent)", method: "GET", "/kv/user/settings/none", user: ann, expect: 404) {
    try await client.kvGetUser(path: .init(business: "settings", key: "none"), headers: .init(xUserId: ann)).notFound.body.applicationProblemJson
}
check(missing?.code == "key_not_found", "kv get absent: \(String(describing: missing))")
await same("kv delete", method: "DELETE", "/kv/user/settings/theme", user: ann) {
    try await client.kvDeleteUser(path: .init(business: "settings", key: "theme"), headers: .init(xUserId: ann)).ok.body.json
}

// MARK: Both caches, in the common space.

let memoryCreate = Components.Schemas.MemoryCacheCreate(capacity: 10)
await same("memory cache create", method: "PUT", "/lru/memory/common/sessions", body: memoryCreate) {
    try await client.memoryCacheCreateCommon(path: .init(cache: "sessions"), body: .json(memoryCreate)).ok.body.json
}
let set = Components.Schemas.CacheSet(value: try any("token-1"))
await same("memory cache set", method: "PUT", "/lru/memory/common/sessions/entries/s1", body: set) {
    try await client.memoryCacheSetCommon(path: .init(cache: "sessions", key: "s1"), body: .json(set)).ok.body.json
}
let cached = await same("memory cache get", method: "GET", "/lru/memory/common/sessions/entries/s1") {
    try await client.memoryCacheGetCommon(path: .init(cache: "sessions", key: "s1")).ok.body.json
}
check(cached?.value.value as? String == "token-1", "memory cache get: \(String(describing: cached))")
let removeAll = Operations.MemoryCacheRemoveMatchingCommon.Input.Body.JsonPayload.RemoveAll(.init(all: true))
await same("memory cache remove all", method: "POST", "/lru/memory/common/sessions/remove", body: removeAll) {
    try await client.memoryCacheRemoveMatchingCommon(path: .init(cache: "sessions"), body: .json(removeAll)).ok.body.json
}
let diskCreate = Components.Schemas.DiskCacheCreate(capacity: 10, encrypted: true)
await same("disk cache create", method: "PUT", "/lru/disk/common/pages", body: diskCreate) {
    try await client.diskCacheCreateCommon(path: .init(cache: "pages"), body: .json(diskCreate)).ok.body.json
}
await same("disk cache set", method: "PUT", "/lru/disk/common/pages/entries/p1", body: set) {
    try await client.diskCacheSetCommon(path: .init(cache: "pages", key: "p1"), body: .json(set)).ok.body.json
}
await same("disk cache get", method: "GET", "/lru/disk/common/pages/entries/p1") {
    try await client.diskCacheGetCommon(path: .init(cache: "pages", key: "p1")).ok.body.json
}
let byKeys = Operations.DiskCacheRemoveMatchingCommon.Input.Body.JsonPayload.RemoveKeys(.init(keys: ["p1"]))
await same("disk cache remove keys", method: "POST", "/lru/disk/common/pages/remove", body: byKeys) {
    try await client.diskCacheRemoveMatchingCommon(path: .init(cache: "pages"), body: .json(byKeys)).ok.body.json
}
await same("disk cache get (removed)", method: "GET", "/lru/disk/common/pages/entries/p1", expect: 404) {
    try await client.diskCacheGetCommon(path: .init(cache: "pages", key: "p1")).notFound.body.applicationProblemJson
}

// MARK: An error case: a required argument left out.

let noTitle = Operations.BooksAddBook.Input.Body.JsonPayload(title: "")
let empty = await same("Books.addBook (empty title)", "/dao/Books/addBook", body: noTitle) {
    try await client.booksAddBook(body: .json(noTitle)).ok.body.json
}
check(empty?.ok == true, "Books.addBook with an empty title: \(String(describing: empty))")

print("\(calls) calls through the generated Swift client and raw HTTP")
if !failures.isEmpty {
    print(failures.joined(separator: "\n"))
    exit(1)
}
