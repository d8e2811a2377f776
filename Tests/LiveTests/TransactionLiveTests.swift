import Foundation
import Testing

/// Over a real server: transactions with result references, `last_insert_rowid()` and the database's last insert
/// after a failed transaction, the `userId` global, the KV listing with values in pages, and initializers in
/// the OpenAPI document.
@Suite struct TransactionLiveTests {
    static let blog = """
        <module name="Blog" initializer="create" version="1.0">
          <update id="create">
            <step>create table if not exists posts (id integer primary key, title text not null, owner text)</step>
            <step>create table if not exists comments (id integer primary key, post integer not null references posts(id), body text)</step>
          </update>
          <insert id="addPost" arguments="$title:string">insert into posts (title, owner) values (#{title}, #{userId})</insert>
          <insert id="addComment" arguments="$post:long long, body:string">insert into comments (post, body) values (#{post}, #{body})</insert>
          <insert id="addCommentToLast" arguments="body">insert into comments (post, body) values (last_insert_rowid(), #{body})</insert>
          <select id="post" arguments="$id:long long" result="{}">select id, title from posts where id = #{id}</select>
          <select id="comments" arguments="$post:long long" result="[{}]">select post, body from comments where post = #{post} order by id</select>
          <select id="myTitles" result="[string]">select title from posts where owner is #{userId} order by id</select>
        </module>
        """

    let folder: URL
    let server: LiveServer

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-txn-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.blog.write(to: folder.appendingPathComponent("Blog.xml"), atomically: true, encoding: .utf8)
        server = try LiveServer(modules: folder.path)
    }

    func transaction(_ calls: String, user: String? = nil) throws -> LiveServer.Reply {
        try server.curl("/transaction", body: #"{"calls": \#(calls)}"#, headers: user.map { ["X-User-Id: \($0)"] } ?? [])
    }

    @Test func aParentAndItsChildrenInOneTransaction() throws {
        _ = try server.curl("/dao/Blog/addPost", body: #"["first"]"#)
        let reply = try transaction("""
            [{"module": "Blog", "method": "addPost", "arguments": {"title": "second"}},
             {"module": "Blog", "method": "addComment", "arguments": {"post": {"$result": "/0/lastInsertRowId"}, "body": "a"}},
             {"module": "Blog", "method": "addCommentToLast", "arguments": ["b"]},
             {"module": "Blog", "method": "post", "arguments": [{"$result": "/0/lastInsertRowId"}]},
             {"module": "Blog", "method": "addComment", "arguments": [{"$result": "/3/result/id"}, {"$result": "/3/result/title"}]}]
            """)
        #expect(reply.status == 200, "\(reply.body)")
        // addCommentToLast's last_insert_rowid() is the comment before it (1), as SQLite has it; its own row is 2.
        #expect(reply.body == #"{"results":[{"ok":true,"changes":1,"lastInsertRowId":2},{"ok":true,"changes":1,"lastInsertRowId":1},{"ok":true,"changes":1,"lastInsertRowId":2},{"result":{"id":2,"title":"second"}},{"ok":true,"changes":1,"lastInsertRowId":3}]}"#)
        #expect(try server.curl("/dao/Blog/comments", body: "[2]").body == #"{"result":[{"post":2,"body":"a"},{"post":2,"body":"second"}]}"#)
        #expect(try server.curl("/dao/Blog/comments", body: "[1]").body == #"{"result":[{"post":1,"body":"b"}]}"#)
    }

    @Test func aBadReferenceIsA400NamingTheCallAndNothingIsKept() throws {
        let forward = try transaction("""
            [{"module": "Blog", "method": "addPost", "arguments": ["never"]},
             {"module": "Blog", "method": "addComment", "arguments": [{"$result": "/1/lastInsertRowId"}, "x"]}]
            """)
        #expect(forward.status == 400)
        #expect(forward.code == "invalid_reference")
        #expect(forward.json?["call"] as? Int == 1)
        #expect(forward.json?["reference"] as? String == "/1/lastInsertRowId")
        let missing = try transaction("""
            [{"module": "Blog", "method": "addPost", "arguments": ["never"]},
             {"module": "Blog", "method": "addComment", "arguments": [{"$result": "/0/result/id"}, "x"]}]
            """)
        #expect(missing.status == 400)
        #expect(missing.code == "invalid_reference")
        #expect((missing.json?["detail"] as? String)?.contains("call 1") == true)
        let wrongType = try transaction("""
            [{"module": "Blog", "method": "addPost", "arguments": ["never"]},
             {"module": "Blog", "method": "post", "arguments": [1]},
             {"module": "Blog", "method": "addComment", "arguments": [{"$result": "/1/result/title"}, "x"]}]
            """)
        #expect(wrongType.status == 400)
        #expect(wrongType.code == "wrong_type")
        #expect(wrongType.json?["call"] as? Int == 2)
        #expect(try server.curl("/dao/Blog/post", body: "[1]").body == #"{"result":null}"#)
    }

    @Test func aFailedTransactionLeavesTheModulesLastInsertRowid() throws {
        #expect(try server.curl("/dao/Blog/addPost", body: #"["kept"]"#).json?["lastInsertRowId"] as? Int == 1)
        let failed = try transaction("""
            [{"module": "Blog", "method": "addPost", "arguments": ["gone"]},
             {"module": "Blog", "method": "addComment", "arguments": [42, "orphan"]}]
            """)
        #expect(failed.status == 409)
        #expect(try server.curl("/modules/Blog/last-insert-rowid").body == #"{"lastInsertRowId":1}"#)
    }

    @Test func userIdIsTheCallersOwnAndCannotBeSent() throws {
        _ = try server.curl("/dao/Blog/addPost", body: #"["ann's"]"#, headers: ["X-User-Id: ann"])
        _ = try server.curl("/dao/Blog/addPost", body: #"["bob's"]"#, headers: ["X-User-Id: bob"])
        _ = try server.curl("/dao/Blog/addPost", body: #"["nobody's"]"#)
        #expect(try server.curl("/dao/Blog/myTitles", method: "POST", headers: ["X-User-Id: ann"]).body == #"{"result":["ann's"]}"#)
        #expect(try server.curl("/dao/Blog/myTitles", method: "POST").body == #"{"result":["nobody's"]}"#)
        let forged = try server.curl("/dao/Blog/addPost", body: #"{"title": "x", "userId": "bob"}"#, headers: ["X-User-Id: ann"])
        #expect(forged.status == 400)
        #expect(forged.code == "unknown_argument")
        let global = try server.curl("/modules/Blog/globals", method: "PUT", body: #"{"userId": "bob"}"#)
        #expect(global.status != 200)
        #expect(try server.curl("/dao/Blog/myTitles", method: "POST", headers: ["X-User-Id: bob"]).body == #"{"result":["bob's"]}"#)
    }

    @Test func theKVListingGivesValuesInPages() throws {
        for (key, body) in [("a", #"{"value": 1}"#), ("b", #"{"value": "two", "encrypted": true}"#),
                            ("c", #"{"value": {"three": 3}}"#), ("d", #"{"value": true}"#), ("e", #"{"value": "AAE=", "type": "binary"}"#)] {
            #expect(try server.curl("/kv/user/prefs/\(key)", method: "PUT", body: body, headers: ["X-User-Id: ann"]).status == 200)
        }
        let first = try server.curl("/kv/user/prefs?values=true&limit=2", headers: ["X-User-Id: ann"])
        let keys = first.json?["keys"] as? [[String: Any]]
        #expect(keys?.map { $0["key"] as? String } == ["a", "b"])
        #expect(keys?.first?["value"] as? Int == 1)
        #expect(keys?.last?["value"] as? String == "two")
        #expect(keys?.last?["encrypted"] as? Bool == true)
        #expect(first.json?["next"] as? String == "b")
        let second = try server.curl("/kv/user/prefs?values=true&limit=2&after=b", headers: ["X-User-Id: ann"])
        let more = second.json?["keys"] as? [[String: Any]]
        #expect(more?.map { $0["key"] as? String } == ["c", "d"])
        #expect((more?.first?["value"] as? [String: Any])?["three"] as? Int == 3)
        #expect(second.json?["next"] as? String == "d")
        let last = try server.curl("/kv/user/prefs?values=true&limit=2&after=d", headers: ["X-User-Id: ann"])
        #expect((last.json?["keys"] as? [[String: Any]])?.first?["value"] as? String == "AAE=")
        #expect(last.json?["next"] == nil)
        // Without values: every key, no value, as before.
        let plain = try server.curl("/kv/user/prefs", headers: ["X-User-Id: ann"])
        #expect((plain.json?["keys"] as? [[String: Any]])?.count == 5)
        #expect((plain.json?["keys"] as? [[String: Any]])?.contains { $0["value"] != nil } == false)
        #expect(try server.curl("/kv/user/prefs?values=maybe", headers: ["X-User-Id: ann"]).code == "invalid_value")
        #expect(try server.curl("/kv/user/prefs?limit=0", headers: ["X-User-Id: ann"]).code == "invalid_value")
        #expect(try server.curl("/kv/user/prefs?limit=1001", headers: ["X-User-Id: ann"]).code == "invalid_value")
        // Another user sees none of them.
        #expect(try server.curl("/kv/user/prefs?values=true", headers: ["X-User-Id: bob"]).body == #"{"keys":[]}"#)
    }

    @Test func theInitializerIsServedAndDescribed() throws {
        let document = try server.curl("/openapi.json").json
        let paths = document?["paths"] as? [String: Any]
        #expect(paths?["/dao/Blog/create"] != nil)
        #expect(try server.curl("/dao/Blog/create", method: "POST").status == 200)
        let reference = (document?["components"] as? [String: Any]).flatMap { $0["schemas"] as? [String: Any] }?["ResultReference"]
        #expect(reference != nil)
    }
}
