import DAODialect
import DAOValue

/// A full scan of a table that a method's statement makes: what
/// `daogate check --plans` reports, and `serve` warns of at start-up.
public struct PlanWarning: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var module: String
    public var method: String
    /// The table scanned; `${T}` for a template module's own table.
    public var table: String
    /// The columns of an index that SQLite was seen to use instead of the
    /// scan, in index order; nil when the statement filters and sorts on no
    /// column of the table, or when no index on those columns served it.
    public var index: [String]?
    /// The columns of the table its `WHERE`, `ON` and `ORDER BY` use (empty:
    /// it reads every row by design).
    public var columns: [String]

    /// `file:line: Module.method: …`.
    public var description: String { "\(file):\(line): \(message)" }

    /// `Module.method: a full scan of table … `, without the place.
    public var message: String {
        var text = "\(module).\(method): a full scan of table \(table)"
        if let index {
            text += "; an index on \(table)(\(index.joined(separator: ", "))) would serve it"
        } else if columns.isEmpty {
            text += " (no WHERE or ORDER BY on its columns: every row is read)"
        } else {
            text += "; no index on (\(columns.joined(separator: ", "))) serves it (a function of a column, a LIKE, an OR?)"
        }
        return text + "; scan=\"allowed\" on the method or module if it is deliberate"
    }
}

extension SQLCheck {
    /// `EXPLAIN QUERY PLAN` of every statement every method renders (the
    /// sample renderings `check` prepares), against the tables the
    /// initializers and upgrades create: each full `SCAN` of a table, once
    /// per statement and table, with the index that would serve it, tried
    /// in the sandbox. Methods and modules declaring `scan="allowed"` are
    /// left out. Statements SQLite cannot prepare are `check`'s to report.
    public static func plans(_ modules: [Module]) -> [PlanWarning] {
        guard let sandbox = try? Sandbox(modules) else { return [] }
        defer { sandbox.database.close() }
        let db = sandbox.database
        // One warning per statement and table: of the samples' renderings, the one that says most.
        struct Key: Hashable { var file: String; var line: Int; var method: String; var table: String }
        var warnings: [Key: PlanWarning] = [:]
        func rank(_ warning: PlanWarning) -> Int { warning.index != nil ? 2 : warning.columns.isEmpty ? 0 : 1 }
        for (module, table) in zip(modules, sandbox.tables) {
            for method in module.methods where method.name != module.initializer && !module.allowsScan(method: method.name) {
                for statement in renderings(of: method, table: table).flatMap(\.self) {
                    for scan in fullScans(statement.sql, on: db) {
                        guard var warning = judge(scan, statement.sql, on: db) else { continue }
                        warning.file = module.file
                        warning.line = statement.line
                        warning.module = module.name
                        warning.method = method.name
                        if module.tableName == nil && sameTable(scan.table, table) { warning.table = "${T}" }
                        let key = Key(file: warning.file, line: warning.line, method: warning.method, table: warning.table)
                        if let known = warnings[key], rank(known) >= rank(warning) { continue }
                        warnings[key] = warning
                    }
                }
            }
        }
        return warnings.values.sorted { ($0.file, $0.line, $0.table) < ($1.file, $1.line, $1.table) }
    }

    /// Whether a scan is worth a warning, and which index would serve it:
    /// - the statement filters on columns of the table (`WHERE`, `ON`,
    ///   `HAVING`): any scan of it, in an index's order or not, is reported,
    ///   with the index that makes SQLite search instead;
    /// - it only sorts on them: reported when SQLite sorts in a temporary
    ///   B-tree, with the index that spares the sort (`order by id desc limit
    ///   10` on the rowid is no scan worth a word);
    /// - neither: a plain scan reads every row by design, and is reported as such.
    static func judge(_ scan: Scan, _ sql: String, on db: Database) -> PlanWarning? {
        let columns = filterColumns(sql, table: scan.table, name: scan.name, on: db)
        var warning = PlanWarning(file: "", line: 0, module: "", method: "", table: scan.table, index: nil,
                                  columns: columns.all)
        if !columns.filter.isEmpty {
            if probe(columns.index, scan, on: db, { !fullScans(sql, on: db).contains { $0.name == scan.name } }) {
                warning.index = columns.index
            }
            return warning
        }
        if !columns.order.isEmpty {
            guard sortsInTemporaryTree(sql, on: db) else { return nil }
            if probe(columns.order, scan, on: db, { !sortsInTemporaryTree(sql, on: db) }) { warning.index = columns.order }
            return warning
        }
        return scan.inIndexOrder ? nil : warning
    }

    /// A table a plan scans whole: its name in the schema, the name the plan
    /// gives it (an alias), and whether it reads an index in order.
    struct Scan: Equatable {
        var table: String
        var name: String
        var inIndexOrder = false
    }

    /// The scans of real tables in `sql`'s query plan; none when it does not prepare.
    static func fullScans(_ sql: String, on db: Database) -> [Scan] {
        guard let rows = try? planDetails(sql, on: db) else { return [] }
        let tables = schemaTables(on: db)
        var scans: [Scan] = []
        for detail in rows {
            // SQLite 3.36+: "SCAN t", or "SCAN t USING [COVERING] INDEX i" (every entry of an index, in order); before:
            // "SCAN TABLE t". "SCAN CONSTANT ROW", a subquery's or a virtual table's scan are no table's.
            guard detail.hasPrefix("SCAN ") else { continue }
            var words = detail.dropFirst(5).split(separator: " ").map(String.init)
            if words.first == "TABLE" { words.removeFirst() }
            guard let name = words.first else { continue }
            let rest = words.dropFirst()
            guard rest.isEmpty || rest.first == "USING" && rest.contains("INDEX") else { continue }
            let inIndexOrder = !rest.isEmpty
            if let table = tables.first(where: { sameTable($0, name) }) ?? aliasedTable(name, in: sql, tables: tables) {
                scans.append(Scan(table: table, name: name, inIndexOrder: inIndexOrder))
            }
        }
        return scans
    }

    /// Whether SQLite sorts the rows of `sql` in a temporary B-tree (`ORDER BY`, `GROUP BY`, `DISTINCT`).
    static func sortsInTemporaryTree(_ sql: String, on db: Database) -> Bool {
        (try? planDetails(sql, on: db))?.contains { $0.hasPrefix("USE TEMP B-TREE") } ?? false
    }

    /// The `detail` column of `EXPLAIN QUERY PLAN sql`.
    static func planDetails(_ sql: String, on db: Database) throws(SQLiteError) -> [String] {
        let statement = try db.makeStatement("EXPLAIN QUERY PLAN " + sql)
        var details: [String] = []
        while try statement.step() {
            if case .string(let detail) = statement.value(at: 3) { details.append(detail) }
        }
        return details
    }

    /// The tables of the sandbox's schema.
    static func schemaTables(on db: Database) -> [String] {
        guard let statement = try? db.makeStatement(#"select name from sqlite_master where type = 'table' and name not like 'sqlite\_%' escape '\' and name not like '\_litestream\_%' escape '\'"#)
        else { return [] }
        var names: [String] = []
        while (try? statement.step()) == true {
            if case .string(let name) = statement.value(at: 0) { names.append(name) }
        }
        return names
    }

    /// The columns of a table, as SQLite names them.
    static func tableColumns(_ table: String, on db: Database) -> [String] {
        guard let statement = try? db.makeStatement("select name from pragma_table_info(?)") else { return [] }
        try? statement.bind([.string(table)])
        var names: [String] = []
        while (try? statement.step()) == true {
            if case .string(let name) = statement.value(at: 0) { names.append(name) }
        }
        return names
    }

    /// The table an alias stands for: `from Notes n`, `join Notes as n`.
    static func aliasedTable(_ alias: String, in sql: String, tables: [String]) -> String? {
        let tokens = SQLTokens(sql).tokens
        for (index, token) in tokens.enumerated() where sameTable(alias, token.identifier) && index > 0 {
            var before = index - 1
            if tokens[before].keyword == "AS", before > 0 { before -= 1 }
            if let name = tokens[before].identifier, let table = tables.first(where: { sameTable($0, name) }) { return table }
        }
        return nil
    }

    /// The columns of `table` (named `name` in the plan) that `sql` filters
    /// and sorts on: `all` of them in order of appearance; `index`, those an
    /// index would lead with: the columns compared for equality (`=`, `IS`,
    /// `IN`), then the first other filter column, else the `ORDER BY` ones.
    static func filterColumns(_ sql: String, table: String, name: String, on db: Database)
        -> (all: [String], filter: [String], order: [String], index: [String]) {
        let columns = tableColumns(table, on: db)
        func column(_ identifier: String?) -> String? {
            guard let identifier else { return nil }
            return columns.first { sameTable($0, identifier) }
        }
        enum Clause { case none, filter, order }
        let tokens = SQLTokens(sql).tokens
        var clause = Clause.none
        var stack: [Clause] = []
        var equality: [String] = [], other: [String] = [], order: [String] = []
        for (index, token) in tokens.enumerated() {
            switch token.keyword {
            case "WHERE", "ON", "HAVING": clause = .filter; continue
            case "BY" where index > 0 && tokens[index - 1].keyword == "ORDER": clause = .order; continue
            case "BY" where index > 0 && tokens[index - 1].keyword == "GROUP": clause = .order; continue
            case "SELECT", "FROM", "LIMIT", "UNION", "EXCEPT", "INTERSECT", "SET", "VALUES", "RETURNING", "WINDOW", "JOIN":
                clause = .none; continue
            default: break
            }
            if token.text == "(" { stack.append(clause); continue }
            if token.text == ")" { clause = stack.popLast() ?? .none; continue }
            guard clause != .none, let found = column(token.identifier) else { continue }
            // `x.col`: only when x is this table (or its alias).
            if index > 1, tokens[index - 1].text == "." {
                guard sameTable(table, tokens[index - 2].identifier) || sameTable(name, tokens[index - 2].identifier) else { continue }
            }
            if index + 1 < tokens.count, tokens[index + 1].text == "." { continue }
            if clause == .order {
                if !order.contains(found) { order.append(found) }
                continue
            }
            let next = index + 1 < tokens.count ? tokens[index + 1] : nil
            let isEquality = next?.text == "=" || next?.text == "==" || next?.keyword == "IS" || next?.keyword == "IN"
            if isEquality {
                if !equality.contains(found) { equality.append(found) }
                other.removeAll { $0 == found }
            } else if !equality.contains(found) && !other.contains(found) {
                other.append(found)
            }
        }
        var all: [String] = []
        for column in equality + other + order where !all.contains(column) { all.append(column) }
        var lead = equality
        if let range = other.first { lead.append(range) } else {
            for column in order where !lead.contains(column) { lead.append(column) }
        }
        return (all, equality + other, order, lead)
    }

    /// Whether an index on `columns` of the scanned table makes `served`
    /// true: the index is made in a savepoint, the plan asked again, and the
    /// index rolled back.
    static func probe(_ columns: [String], _ scan: Scan, on db: Database, _ served: () -> Bool) -> Bool {
        guard !columns.isEmpty else { return false }
        let create = "create index daogate_plan_probe on \(quoted(scan.table)) (\(columns.map(quoted).joined(separator: ", ")))"
        var result = false
        _ = try? db.inSavepoint { () throws -> Void in
            try db.execute(create)
            result = served()
            throw ProbeDone()
        }
        return result
    }

    /// Rolls the probe index back.
    private struct ProbeDone: Error {}
}

/// SQL text as tokens, enough to find clauses and the names in them: words,
/// quoted identifiers, and single punctuation; string literals and comments dropped.
struct SQLTokens {
    struct Token {
        var text: String
        /// An identifier, bare or quoted, unquoted.
        var identifier: String?
        /// The upper-cased word, for a bare word.
        var keyword: String?
    }

    var tokens: [Token] = []

    init(_ sql: String) {
        let bytes = Array(sql.utf8)
        var index = 0
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x5F || byte >= 0x80
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            case UInt8(ascii: "'"):
                index += 1
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "'") {
                        if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "'") { index += 2; continue }
                        break
                    }
                    index += 1
                }
                index += 1
                tokens.append(Token(text: "'…'"))
            case UInt8(ascii: "-") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "-"):
                while index < bytes.count && bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index + 1 < bytes.count && !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) { index += 1 }
                index += 2
            case UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "[") ? UInt8(ascii: "]") : byte
                var name: [UInt8] = []
                index += 1
                while index < bytes.count {
                    if bytes[index] == close {
                        if close != UInt8(ascii: "]") && index + 1 < bytes.count && bytes[index + 1] == close {
                            name.append(close)
                            index += 2
                            continue
                        }
                        break
                    }
                    name.append(bytes[index])
                    index += 1
                }
                index += 1
                let text = String(decoding: name, as: UTF8.self)
                tokens.append(Token(text: text, identifier: text))
            case UInt8(ascii: "="), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "!"):
                var end = index + 1
                while end < bytes.count && [UInt8(ascii: "="), UInt8(ascii: ">")].contains(bytes[end]) { end += 1 }
                tokens.append(Token(text: String(decoding: bytes[index..<end], as: UTF8.self)))
                index = end
            default:
                guard isWord(byte) else {
                    tokens.append(Token(text: String(UnicodeScalar(byte))))
                    index += 1
                    continue
                }
                var end = index
                while end < bytes.count && isWord(bytes[end]) { end += 1 }
                let text = String(decoding: bytes[index..<end], as: UTF8.self)
                let isNumber = byte >= 0x30 && byte <= 0x39
                tokens.append(Token(text: text, identifier: isNumber ? nil : text, keyword: isNumber ? nil : text.uppercased()))
                index = end
            }
        }
    }
}
