import DAODialect
import DAOEngine
import Foundation
import Testing

/// `daogate check --plans`: each full table scan a method's statements make,
/// with the index that would serve it, against the tables the initializer
/// and upgrades create.
@Suite struct PlanCheckTests {
    let fixture = EngineFixture()

    /// A module of notes by owner; `indexes` are created by its initializer (and `upgraded` by an upgrade).
    func notes(indexes: String = "", upgraded: String = "", scanOnModule: String = "", scanOnSearch: String = "") throws -> Module {
        try fixture.module("""
            <module name="Notes" initializer="create" tableName="notes" version="1.1" \(scanOnModule)>
              <update id="create">
                <step>create table if not exists ${T} (id integer primary key, owner text, created integer, body text)</step>
                \(indexes)
              </update>
              <upgrade toVersion="1.1">\(upgraded.isEmpty ? "<step>select 1</step>" : upgraded)</upgrade>
              <select id="byId" arguments="$id:long long">
                select * from ${T} where id = #{id}
              </select>
              <select id="byOwner" arguments="$owner:string">
                select id, body from ${T}
                where owner = #{owner} order by created desc
              </select>
              <select id="search" arguments="$text:string" \(scanOnSearch)>
                select id from ${T} where body like '%' || #{text} || '%'
              </select>
              <select id="everything">select * from ${T}</select>
              <delete id="purgeBefore" arguments="$time:long long">delete from ${T} where created &lt; #{time}</delete>
            </module>
            """, file: "notes.xml")
    }

    @Test func withoutIndexesEachScanIsReportedWithTheIndexThatServesIt() throws {
        let warnings = SQLCheck.plans([try notes()])
        let byMethod = Dictionary(grouping: warnings, by: \.method)
        #expect(byMethod["byId"] == nil, "an integer primary key is searched, not scanned")
        let byOwner = try #require(byMethod["byOwner"]?.first)
        #expect(byOwner.table == "notes")
        #expect(byOwner.line == 10)
        #expect(byOwner.file.hasSuffix("notes.xml"))
        #expect(byOwner.index == ["owner", "created"], "equality columns first, then the sort")
        #expect(byOwner.description.contains("notes.xml:10: Notes.byOwner: a full scan of table notes; an index on notes(owner, created) would serve it"))
        #expect(byMethod["purgeBefore"]?.first?.index == ["created"])
        // No index serves a LIKE with a leading wildcard: said so, not guessed.
        let search = try #require(byMethod["search"]?.first)
        #expect(search.index == nil && search.columns == ["body"])
        #expect(search.description.contains("no index on (body) serves it"))
        let all = try #require(byMethod["everything"]?.first)
        #expect(all.columns.isEmpty && all.index == nil)
    }

    @Test func anIndexFromTheInitializerOrAnUpgradeSilencesItsScan() throws {
        let initialized = SQLCheck.plans([try notes(indexes: "<step>create index notes_owner on ${T} (owner, created)</step>")])
        #expect(!initialized.contains { $0.method == "byOwner" })
        #expect(initialized.contains { $0.method == "purgeBefore" })
        let upgraded = SQLCheck.plans([try notes(upgraded: "<step>create index notes_created on ${T} (created)</step>")])
        #expect(!upgraded.contains { $0.method == "purgeBefore" })
        #expect(upgraded.contains { $0.method == "byOwner" })
    }

    @Test func scanAllowedSilencesAMethodOrAWholeModule() throws {
        let method = SQLCheck.plans([try notes(scanOnSearch: #"scan="allowed""#)])
        #expect(!method.contains { $0.method == "search" })
        #expect(method.contains { $0.method == "byOwner" })
        #expect(SQLCheck.plans([try notes(scanOnModule: #"scan="allowed""#)]).isEmpty)
        // The default says so too.
        #expect(SQLCheck.plans([try notes(scanOnSearch: #"scan="report""#)]).contains { $0.method == "search" })
    }

    @Test func anUnknownScanValueIsALoadError() throws {
        #expect(throws: LoadFailure.self) { try notes(scanOnSearch: #"scan="sometimes""#) }
    }

    @Test func aJoinThroughAnAliasNamesTheTableAndItsColumns() throws {
        let module = try fixture.module("""
            <module name="Tags" initializer="create" tableName="tags" version="1.0">
              <update id="create">
                <step>create table if not exists ${T} (id integer primary key, name text)</step>
                <step>create table if not exists tag_links (tag integer, note integer)</step>
              </update>
              <select id="notesTagged" arguments="$name:string">
                select l.note from ${T} t join tag_links as l on l.tag = t.id where t.name = #{name}
              </select>
            </module>
            """, file: "tags.xml")
        let warnings = SQLCheck.plans([module])
        let scanned = Set(warnings.map(\.table))
        #expect(scanned.contains("tags") || scanned.contains("tag_links"))
        for warning in warnings {
            #expect(warning.index != nil, "\(warning)")
            if warning.table == "tags" { #expect(warning.index == ["name"]) }
            if warning.table == "tag_links" { #expect(warning.index == ["tag"]) }
        }
    }

    @Test func aTemplateModulesTableIsNamedAsItsStatementsWriteIt() throws {
        let module = try fixture.module("""
            <module name="Chat" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, sender text)</update>
              <select id="from" arguments="$sender:string">select * from ${T} where sender = #{sender}</select>
            </module>
            """, file: "chat.xml")
        let warning = try #require(SQLCheck.plans([module]).first)
        #expect(warning.table == "${T}")
        #expect(warning.index == ["sender"])
    }

    /// The examples' scans, as `daogate check --plans modules` prints them: `ChatMessages.latest` (`order by id
    /// desc limit ?`, the rowid's order) and the indexed `Messages.messagesOf` are not among them.
    @Test func theExampleModulesScansAreTheseAndNoOthers() throws {
        let found = SQLCheck.plans(try EngineFixture.exampleModules()).map {
            "\(URL(fileURLWithPath: $0.file).lastPathComponent):\($0.line) \($0.method) \($0.table) \($0.index?.joined(separator: ",") ?? "-") \($0.columns.joined(separator: ","))"
        }
        #expect(found == [
            "Books.xml:23 findBooks books state,title state,title",
            "Books.xml:39 searchActive books state,title state,title",
            "Books.xml:63 byCodes books title title",
            "Books.xml:71 recentTitles books - ",
            "Books.xml:106 titlesFrom books year year,title",
            "Messages.xml:60 unreadCount messages - read",
        ])
    }
}
