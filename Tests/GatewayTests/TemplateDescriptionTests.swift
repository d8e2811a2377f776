import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Gateway
import Testing

/// The OpenAPI description asks for `X-Table-Name` on the methods of template
/// modules only: those whose statements name the table through `${T}`.
@Suite struct TemplateDescriptionTests {
    @Test func onlyATemplateModulesMethodsTakeATableName() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-templates-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"<module name="Tableless"><select id="one" result="int">select 1</select></module>"#.utf8)
            .write(to: directory.appendingPathComponent("tableless.xml"))
        try Data(#"<module name="Chat"><select id="all">select * from ${T}</select></module>"#.utf8)
            .write(to: directory.appendingPathComponent("chat.xml"))
        let (modules, errors) = ModuleLoader.loadDirectory(directory.path)
        #expect(errors.isEmpty)
        let document = OpenAPIDescription.document(modules: modules, descriptions: MethodDescriber.describe(modules), version: "test")
        let json = try Value(parsingJSON: OpenAPIDescription.json(document))
        func parameters(_ path: String) -> [String] {
            json[member: "paths"]?[member: path]?[member: "post"]?[member: "parameters"]?.arrayValue?
                .compactMap { $0[member: "$ref"]?.stringValue } ?? []
        }
        #expect(parameters("/dao/Chat/all").contains("#/components/parameters/Table"))
        #expect(!parameters("/dao/Tableless/one").contains("#/components/parameters/Table"))
        #expect(!parameters("/dao/Tableless/one").isEmpty)
    }
}
