import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Testing

/// A statement's column names (and boolean columns) are read once per compilation, not per row or cell.
@Suite struct ResultColumnsTests {
    let fixture = EngineFixture()

    /// Column names are read once per compiled statement: a schema change that renames a column recompiles the
    /// cached statement, and the rows read after it carry the new name.
    @Test func columnNamesFollowASchemaChange() throws {
        let engine = try fixture.engine("""
            <module name="R" tableName="r" initializer="create" version="1.0">
              <update id="create">create table if not exists ${T} (id integer primary key, old_name text, flag bool)</update>
              <insert id="add" arguments="id, v">insert into ${T} (id, old_name, flag) values (#{id}, #{v}, 1)</insert>
              <update id="rename">alter table ${T} rename column old_name to new_name</update>
              <select id="all" result="[{}]">select * from ${T} order by id</select>
            </module>
            """)
        _ = try engine.write("R", "add", #"[1, "a"]"#)
        _ = try engine.write("R", "add", #"[2, "b"]"#)
        #expect(try engine.value("R", "all") == .array([
            .object(["id": 1, "old_name": "a", "flag": true]), .object(["id": 2, "old_name": "b", "flag": true])]))
        _ = try engine.write("R", "rename")
        #expect(try engine.value("R", "all") == .array([
            .object(["id": 1, "new_name": "a", "flag": true]), .object(["id": 2, "new_name": "b", "flag": true])]))
    }
}
