import DAODialect
import DAOValue
import Foundation
import Testing

/// The example modules shipped in `modules/` load cleanly and render what the README says.
@Suite struct ExampleModuleTests {
    static let modulesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("modules").path

    let modules: [String: Module]

    init() throws {
        let (loaded, errors) = ModuleLoader.loadDirectory(Self.modulesDirectory)
        #expect(errors.isEmpty, "\(errors)")
        modules = Dictionary(uniqueKeysWithValues: loaded.map { ($0.name, $0) })
    }

    @Test func allExampleModulesLoad() {
        #expect(Set(modules.keys) == ["Demo", "Messages", "Books", "Templates", "ChatMessages"])
    }

    @Test func demoIsTheReferenceExampleWithItsKeywordColumnQuoted() throws {
        let demo = try #require(modules["Demo"])
        #expect(try demo.render("createTable") == [SQL(#"create table if not exists demoTable ("index" integer primary key, content text)"#)])
        #expect(try demo.render("insertItem", #"["something"]"#) == [SQL("insert into demoTable (content) values(?)", ["something"])])
        #expect(try demo.render("getItem", "[1]") == [SQL(#"select content from demoTable where "index" = ?"#, [1])])
        #expect(demo.methods.allSatisfy { $0.isPrecomputed })
    }

    @Test func messagesEncryptsContentAndRendersTheReferenceFind() throws {
        let messages = try #require(modules["Messages"])
        #expect(messages.userDependent)
        #expect(try messages.render("find", "[1234, 2014]") == [SQL("select * from messages where id = ? and time > 2014", [1234])])
        let run = try #require(try messages.runs("insertMessage", #"[{"time": 1, "content": "hi", "uin": 7, "read": true}]"#).first)
        #expect(run.statements.first?.encrypted == [EncryptedBinding(index: 1, property: "content")])
        #expect(messages.upgrades.map(\.toVersion.description) == ["1.1", "1.2"])
    }

    @Test func booksRendersTheReferenceForeachResult() throws {
        let books = try #require(modules["Books"])
        #expect(try books.render("byCodes", #"[["1", "2", "3"], "abc"]"#)
            == [SQL("select title from books where title in ('abc1','abc2','abc3')")])
        #expect(try books.render("selectBook", "[1]") == [SQL(
            "select id, title, year, author_name, state, featured, username, email, bio from books where id = ?", [1])])
    }

    @Test func chatMessagesIsATemplate() throws {
        let chat = try #require(modules["ChatMessages"])
        #expect(chat.isTemplate)
        #expect(try chat.render("send", #"["ann", "hi"]"#, table: "chat_1") == [SQL("insert into chat_1 (sender, body) values (?, ?)", ["ann", "hi"])])
    }
}
