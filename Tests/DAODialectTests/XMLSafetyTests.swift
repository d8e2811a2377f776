import DAODialect
import Foundation
import Testing

/// A module file can neither read other files, nor reach the network, nor expand itself.
@Suite struct XMLSafetyTests {
    let fixture = Fixture()

    @Test func externalEntityIsRefusedAndNothingIsRead() {
        let secret = fixture.write("TOP-SECRET-CONTENT", to: "secret.txt")
        let errors = fixture.errors("""
            <?xml version="1.0"?>
            <!DOCTYPE module [<!ENTITY xxe SYSTEM "file://\(secret)">]>
            <module name="m"><select id="a">select '&xxe;'</select></module>
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message == "a DOCTYPE declaration is not allowed in a module file")
        #expect(!errors.description.contains("TOP-SECRET"))
    }

    @Test func externalDTDIsRefusedWithoutReachingTheNetwork() {
        let started = Date()
        let errors = fixture.errors("""
            <!DOCTYPE module SYSTEM "http://192.0.2.1/module.dtd">
            <module name="m"/>
            """)
        #expect(errors.first?.message == "a DOCTYPE declaration is not allowed in a module file")
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func entityExpansionBombIsRefused() {
        var declarations = "<!ENTITY lol0 \"lol\">"
        for level in 1...9 {
            let previous = String(repeating: "&lol\(level - 1);", count: 10)
            declarations += "<!ENTITY lol\(level) \"\(previous)\">"
        }
        let errors = fixture.errors("""
            <!DOCTYPE module [\(declarations)]>
            <module name="m"><select id="a">select '&lol9;'</select></module>
            """)
        #expect(!errors.isEmpty)
    }

    @Test func predefinedEntitiesAndCharacterReferencesWork() throws {
        let loaded = try fixture.load(module("""
            <select id="a" arguments="x">select * from t where a &gt; 1 and b &lt; #{x} and c = '&amp;&#65;' <if true="x &gt; 1">and d</if></select>
            """))
        #expect(try loaded.render("a", "[2]") == [SQL("select * from t where a > 1 and b < ? and c = '&A' and d", [2])])
    }

    @Test func cdataSectionsAreSQLText() throws {
        let loaded = try fixture.load(module("<select id=\"a\" arguments=\"x\"><![CDATA[select * from t where a < #{x} and b > 1]]></select>"))
        #expect(try loaded.render("a", "[1]") == [SQL("select * from t where a < ? and b > 1", [1])])
    }

    @Test func processingInstructionsAreRefused() {
        let errors = fixture.errors("<module name=\"m\"><?php echo 1; ?></module>")
        #expect(errors.first?.message == "processing instructions are not allowed in a module file")
    }

    @Test func binaryGarbageIsAMalformedDocument() {
        let path = fixture.directory.appendingPathComponent("garbage.xml").path
        _ = FileManager.default.createFile(atPath: path, contents: Data((0..<512).map { UInt8(truncatingIfNeeded: $0 &* 37) }))
        do {
            _ = try ModuleLoader.load(file: path)
            Issue.record("loaded garbage")
        } catch {
            #expect(error.errors.first?.message.hasPrefix("malformed XML") == true)
        }
    }
}
