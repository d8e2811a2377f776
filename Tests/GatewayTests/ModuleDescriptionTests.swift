import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Gateway
import Testing

/// The OpenAPI description of unusual modules.
@Suite struct ModuleDescriptionTests {
    /// The OpenAPI document of module files, each given as XML.
    func document(_ files: [String]) throws -> Value {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-described-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, xml) in files.enumerated() {
            try Data(xml.utf8).write(to: directory.appendingPathComponent("m\(index).xml"))
        }
        let (modules, errors) = ModuleLoader.loadDirectory(directory.path)
        #expect(errors.isEmpty)
        let document = OpenAPIDescription.document(modules: modules, descriptions: MethodDescriber.describe(modules), version: "test")
        return try Value(parsingJSON: OpenAPIDescription.json(document))
    }

    /// X-Table-Name is asked for on the methods of template modules only:
    /// those whose statements name the table through `${T}`.
    @Test func onlyATemplateModulesMethodsTakeATableName() throws {
        let json = try document([#"<module name="Tableless"><select id="one" result="int">select 1</select></module>"#,
                                 #"<module name="Chat"><select id="all">select * from ${T}</select></module>"#])
        func parameters(_ path: String) -> [String] {
            json[member: "paths"]?[member: path]?[member: "post"]?[member: "parameters"]?.arrayValue?
                .compactMap { $0[member: "$ref"]?.stringValue } ?? []
        }
        #expect(parameters("/dao/Chat/all").contains("#/components/parameters/Table"))
        #expect(!parameters("/dao/Tableless/one").contains("#/components/parameters/Table"))
        #expect(!parameters("/dao/Tableless/one").isEmpty)
    }

    /// Sixty nested `foreach`es, each over a chain of sixteen properties of the
    /// last item: the argument's shape is cut at a bounded depth (it was a
    /// thousand levels, and encoding the document overflowed the stack).
    @Test func theDeepestArgumentAModuleAllowsIsDescribedToABoundedDepth() throws {
        let chain = String(repeating: ".b", count: ModuleLimits.chainLength)
        let levels = ModuleLimits.nesting - 4
        let foreaches = (0..<levels).map { #"<foreach item="i\#($0)" collection="\#($0 == 0 ? "l" : "i\($0 - 1)\(chain)")">"# }.joined()
        let json = try document([#"<module name="Deep" tableName="t"><select id="a" arguments="l">select 1 "#
            + foreaches + "#{i\(levels - 1)\(chain)}" + String(repeating: "</foreach>", count: levels) + "</select></module>"])
        let schema = try #require(json[member: "paths"]?[member: "/dao/Deep/a"]?[member: "post"]?[member: "requestBody"]?[member: "content"]?[member: "application/json"]?[member: "schema"]?[member: "properties"]?[member: "l"])
        func depth(_ value: Value) -> Int {
            let children = [value[member: "items"], value[member: "properties"]?.objectValue?.values.first].compactMap(\.self)
            return 1 + (children.map(depth).max() ?? 0)
        }
        #expect(depth(schema) > 20)
        #expect(depth(schema) <= 40)
    }
}
