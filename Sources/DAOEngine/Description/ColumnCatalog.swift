import SQLiteDatabase
import DAOValue

/// The columns of every table and view of a database, with their declared
/// types: where a value's column type is looked up.
struct ColumnCatalog {
    struct Column {
        var name: String
        var declaredType: String
    }

    /// Lower-cased table name → its columns in order.
    private var tables: [String: [Column]] = [:]

    init() {}

    /// Reads `database`'s schema (SQLite's `sqlite_` tables and Litestream's `_litestream_` tables left out).
    init(_ database: Database) {
        guard let names = try? database.makeStatement(
            #"select name from sqlite_schema where type in ('table', 'view') and name not like 'sqlite\_%' escape '\' and name not like '\_litestream\_%' escape '\'"#),
            let info = try? database.makeStatement("select name, type from pragma_table_info(?)")
        else { return }
        while (try? names.step()) == true {
            let table = names.string(at: 0)
            guard (try? info.bind([.string(table)])) != nil else { continue }
            var columns: [Column] = []
            while (try? info.step()) == true {
                columns.append(Column(name: info.string(at: 0), declaredType: info.string(at: 1)))
            }
            tables[table.lowercased()] = columns
        }
    }

    /// The columns of `table`, in order; nil when there is no such table.
    func columns(of table: String) -> [Column]? {
        tables[table.lowercased()]
    }

    /// The declared type of the column a reference names: in the first
    /// scope where one of its tables has it (none when several do: SQLite
    /// would call it ambiguous), else, when every table in scope is known,
    /// the one column of that name among all the tables (none when several
    /// have one). The rowid of a table without a column of that name is an `INTEGER`.
    func declaredType(of reference: SQLColumnMatcher.ColumnReference) -> String? {
        let name = reference.name.lowercased()
        var everyTableKnown = true
        for scope in reference.scopes {
            var found: [String] = []
            for table in scope {
                guard let columns = columns(of: table) else {
                    everyTableKnown = false
                    continue
                }
                if let column = columns.first(where: { $0.name.lowercased() == name }) {
                    found.append(column.declaredType)
                } else if ["rowid", "oid", "_rowid_"].contains(name) {
                    found.append("INTEGER")
                }
            }
            if !found.isEmpty { return found.count == 1 ? found[0] : nil }
        }
        guard everyTableKnown else { return nil }
        let matches = tables.values.flatMap { $0.filter { $0.name.lowercased() == name } }
        return matches.count == 1 ? matches[0].declaredType : nil
    }
}
