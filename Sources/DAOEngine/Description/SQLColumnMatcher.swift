/// The table column each `?` of an SQL statement meets, read from the
/// statement's text: what lets daogate infer an argument's type from the
/// column its values go to.
///
/// It knows the patterns that say for sure which column a value meets, and
/// nothing else:
/// - `insert [or …] into T (c1, c2, …) values (e1, e2, …), …`: a `?` that
///   is the i-th expression of a row goes to ci (without a column list, to
///   the table's i-th column), also through `coalesce`, `ifnull`, `min`,
///   `max`, the first argument of `nullif` and parentheses (`coalesce(?, 0)`),
///   not through other functions or operators (`json(?)`, `? || 'x'`);
/// - `COLUMN op ?` and `? op COLUMN` for `=` `==` `!=` `<>` `<` `>` `<=` `>=`
///   `like` `glob` `is` (and `is not`, `not like`, `not glob`),
///   `COLUMN [not] in (?, ?, …)`, `COLUMN [not] between ? and ?`, `set COLUMN = ?`,
///   where no operator binds either side tighter (`a + 1 = ?` meets no column);
/// - `limit ?`, `offset ?`: an integer.
///
/// A column is looked for in the tables its (sub)query reads, innermost
/// first, as SQLite resolves names; `t.COLUMN` in the table `t` names
/// (directly or as an alias).
struct SQLColumnMatcher {
    /// A column a `?` meets, by name.
    struct ColumnReference: Equatable {
        var name: String
        /// The tables it may belong to, innermost scope first: those each
        /// enclosing (sub)query reads, or writes; for `t.COLUMN`, the one `t` names.
        var scopes: [[String]]
        /// Whether the value is stored in the column (an insert's values, an update's `set`).
        var written: Bool
        /// Whether the value is a `like` or `glob` pattern, or matched against one.
        var matchesPattern = false
    }

    /// What a `?` meets.
    enum Target: Equatable {
        case column(ColumnReference)
        /// The `index`-th of the `count` columns of `table`: an insert without a column list.
        case tableColumn(table: String, index: Int, count: Int)
        /// `limit ?` or `offset ?`.
        case integer
    }

    /// One entry per `?` in order, nil where no column is known for sure.
    private(set) var targets: [Target?] = []

    private let tokens: [SQLToken]
    /// The clause each token is in (`set`, `where`, …) within its parentheses.
    private var clauses: [String?] = []
    /// The parentheses each token is in: 0 for none, else the index of the `(`, plus one.
    private var groups: [Int] = []
    /// For each parenthesized group, the group it is in.
    private var enclosing: [Int: Int] = [:]
    /// The tables each group's query reads (or writes), and what aliases stand for.
    private var tables: [Int: [String]] = [:]
    private var aliases: [Int: [String: String]] = [:]

    init(sql: String) {
        tokens = SQLToken.tokenize(sql)
        var placeholders: [Int] = []
        var stack: [(group: Int, clause: String?)] = [(0, nil)]
        for (index, token) in tokens.enumerated() {
            switch (token.kind, token.text) {
            case (.symbol, ")"): if stack.count > 1 { stack.removeLast() }
            case (.word, let word) where Self.clauseWords.contains(word): stack[stack.count - 1].clause = word
            case (.placeholder, _): placeholders.append(index)
            default: break
            }
            clauses.append(stack.last!.clause)
            groups.append(stack.last!.group)
            if token.kind == .symbol && token.text == "(" {
                enclosing[index + 1] = stack.last!.group
                stack.append((index + 1, nil))
            }
        }
        findTables()
        let inserted = insertedTargets()
        targets = placeholders.map { inserted[$0] ?? target(ofPlaceholderAt: $0) }
    }

    private static let statementWords: Set<String> = ["select", "insert", "replace", "update", "delete"]
    private static let clauseWords: Set<String> = [
        "select", "from", "where", "set", "values", "returning", "on", "using", "group", "having", "order", "limit", "do",
    ]
    /// Words that may stand right before an operator but name no column.
    private static let valueWords: Set<String> = [
        "null", "true", "false", "end", "current_date", "current_time", "current_timestamp",
    ]
    /// Words that may follow a table name and are not its alias.
    private static let nonAliases: Set<String> = [
        "where", "join", "inner", "left", "right", "full", "cross", "natural", "outer", "on", "using", "group", "order",
        "limit", "offset", "set", "values", "select", "default", "union", "except", "intersect", "window", "having",
        "returning", "indexed", "not", "do", "as", "and", "or", "from",
    ]
    private static let comparisons: Set<String> = ["=", "==", "!=", "<>", "<", ">", "<=", ">="]
    /// Operators that bind at least as tightly as a comparison.
    private static let operators: Set<String> = [
        "=", "==", "!=", "<>", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "||", "&", "|", "<<", ">>", "~", "->", "->>",
    ]

    // MARK: Tokens

    private func word(_ index: Int) -> String? {
        guard tokens.indices.contains(index), tokens[index].kind == .word else { return nil }
        return tokens[index].text
    }

    private func symbol(_ index: Int) -> String? {
        guard tokens.indices.contains(index), tokens[index].kind == .symbol else { return nil }
        return tokens[index].text
    }

    private func isPlaceholder(_ index: Int) -> Bool {
        tokens.indices.contains(index) && tokens[index].kind == .placeholder
    }

    /// The name a token gives, when it can be a column's or a table's.
    private func name(_ index: Int) -> String? {
        guard tokens.indices.contains(index) else { return nil }
        switch tokens[index].kind {
        case .identifier: return tokens[index].text
        case .word where !Self.valueWords.contains(tokens[index].text): return tokens[index].text
        default: return nil
        }
    }

    /// Whether the token is an operator binding what follows or precedes it
    /// at least as tightly as a comparison.
    private func isOperator(_ index: Int) -> Bool {
        symbol(index).map(Self.operators.contains) ?? false
    }

    /// `name` or `schema.name` from `index`: its last part, the part before
    /// (when there is one), and the index after it.
    private func qualifiedName(startingAt index: Int) -> (name: String, qualifier: String?, end: Int)? {
        guard name(index) != nil else { return nil }
        var last = index
        while symbol(last + 1) == ".", name(last + 2) != nil { last += 2 }
        return (name(last)!, last > index ? name(last - 2) : nil, last + 1)
    }

    // MARK: Tables

    /// Records the tables each group's query reads (`from`, `join`, `, t`
    /// in a from clause), updates, or (for `values`, `on conflict`) inserts into, with their aliases.
    private mutating func findTables() {
        var into: [Int: String] = [:]
        for index in tokens.indices {
            let group = groups[index]
            let start: Int
            switch (word(index), symbol(index)) {
            case ("from"?, _), ("join"?, _): start = index + 1
            case (_, ","?) where clauses[index] == "from": start = index + 1
            case ("update"?, _) where word(index - 1) != "do": start = word(index + 1) == "or" ? index + 3 : index + 1
            case ("into"?, _):
                if let table = qualifiedName(startingAt: index + 1) { into[group] = table.name }
                continue
            default: continue
            }
            guard let table = qualifiedName(startingAt: start) else { continue }
            tables[group, default: []].append(table.name)
            var alias = table.end
            if word(alias) == "as" { alias += 1 }
            if let name = name(alias), tokens[alias].kind == .identifier || !Self.nonAliases.contains(name) {
                aliases[group, default: [:]][name.lowercased()] = table.name
            }
        }
        for (group, table) in into where tables[group] == nil {
            tables[group] = [table]
        }
    }

    /// The groups a token is in, innermost first.
    private func scopeChain(of index: Int) -> [Int] {
        var chain = [groups[index]]
        while let outer = enclosing[chain.last!] { chain.append(outer) }
        return chain
    }

    /// The column `name` whose reference starts at token `index`, `t.name` when `qualifier` is `t`.
    private func reference(_ name: String, qualifier: String?, at index: Int, written: Bool, pattern: Bool) -> Target {
        let chain = scopeChain(of: index)
        guard let qualifier = qualifier?.lowercased() else {
            return .column(ColumnReference(name: name, scopes: chain.map { tables[$0] ?? [] }, written: written,
                                           matchesPattern: pattern))
        }
        let table = chain.lazy.compactMap { group in
            aliases[group]?[qualifier] ?? self.tables[group]?.first { $0.lowercased() == qualifier }
        }.first
        return .column(ColumnReference(name: name, scopes: [[table ?? qualifier]], written: written, matchesPattern: pattern))
    }

    // MARK: Inserts

    /// The targets of the `?`s in an insert's value rows, by token index.
    private func insertedTargets() -> [Int: Target] {
        guard let start = tokens.indices.first(where: { groups[$0] == 0 && word($0).map(Self.statementWords.contains) == true }),
              word(start) == "insert" || word(start) == "replace",
              let into = tokens.indices.first(where: { $0 > start && word($0) == "into" }),
              let table = qualifiedName(startingAt: into + 1)
        else { return [:] }
        var index = table.end
        if word(index) == "as" { index += 2 }
        var columns: [String]?
        if symbol(index) == "(" {
            var names: [String] = []
            index += 1
            while let name = name(index) {
                names.append(name)
                index += 1
                if symbol(index) == "," { index += 1 } else { break }
            }
            guard symbol(index) == ")" else { return [:] }
            columns = names
            index += 1
        }
        guard word(index) == "values" else { return [:] }
        index += 1
        var targets: [Int: Target] = [:]
        while symbol(index) == "(" {
            let row = index
            var expression = 0
            var depth = 1
            var placeholders: [(token: Int, expression: Int)] = []
            index += 1
            while index < tokens.count && depth > 0 {
                switch (tokens[index].kind, tokens[index].text) {
                case (.symbol, "("): depth += 1
                case (.symbol, ")"): depth -= 1
                case (.symbol, ","): if depth == 1 { expression += 1 }
                case (.placeholder, _): placeholders.append((index, expression))
                default: break
                }
                index += 1
            }
            let count = expression + 1
            for (token, expression) in placeholders where isValue(placeholderAt: token, ofRowAt: row) {
                if let columns {
                    if columns.count == count {
                        targets[token] = .column(ColumnReference(name: columns[expression], scopes: [[table.name]], written: true))
                    }
                } else {
                    targets[token] = .tableColumn(table: table.name, index: expression, count: count)
                }
            }
            guard symbol(index) == ",", symbol(index + 1) == "(" else { break }
            index += 1
        }
        return targets
    }

    /// Functions whose value is one of their arguments'.
    private static let passingFunctions: Set<String> = ["coalesce", "ifnull", "min", "max"]

    /// Whether the `?` is the value of its row's expression, possibly through
    /// parentheses and `passingFunctions`.
    private func isValue(placeholderAt index: Int, ofRowAt row: Int) -> Bool {
        var start = index
        var end = index
        while true {
            guard let before = symbol(start - 1), before == "(" || before == ",",
                  let after = symbol(end + 1), after == ")" || after == ","
            else { return false }
            var open = start - 1
            var depth = 0
            while open > row, symbol(open) != "(" || depth > 0 {
                if symbol(open) == ")" { depth += 1 } else if symbol(open) == "(" { depth -= 1 }
                open -= 1
            }
            if open == row { return true }
            var close = end + 1
            depth = 0
            while close < tokens.count, symbol(close) != ")" || depth > 0 {
                if symbol(close) == "(" { depth += 1 } else if symbol(close) == ")" { depth -= 1 }
                close += 1
            }
            switch word(open - 1) {
            case let function? where Self.passingFunctions.contains(function):
                start = open - 1
            case "nullif"? where before == "(":
                start = open - 1
            case nil where name(open - 1) == nil && before == "(" && after == ")":
                start = open
            default:
                return false
            }
            end = close
        }
    }

    // MARK: Comparisons

    private func target(ofPlaceholderAt index: Int) -> Target? {
        if word(index - 1) == "limit" || word(index - 1) == "offset"
            || (symbol(index - 1) == "," && isPlaceholder(index - 2) && word(index - 3) == "limit") {
            return isOperator(index + 1) ? nil : .integer
        }
        let patterns: Set<String> = ["like", "glob"]
        if let column = columnBefore(placeholderAt: index) {
            let written = clauses[index] == "set" && (symbol(index - 1) == "=" || symbol(index - 1) == "==")
            return reference(column.name, qualifier: column.qualifier, at: column.index, written: written,
                             pattern: word(index - 1).map(patterns.contains) == true)
        }
        return columnAfter(placeholderAt: index).map { column in
            let pattern = (word(index + 1) == "not" ? word(index + 2) : word(index + 1)).map(patterns.contains) == true
            return reference(column.name, qualifier: column.qualifier, at: column.index, written: false, pattern: pattern)
        }
    }

    /// `COLUMN op ?`, `COLUMN [not] in (…, ?, …)`, `COLUMN [not] between ? and ?`.
    private func columnBefore(placeholderAt index: Int) -> (name: String, qualifier: String?, index: Int)? {
        if let start = inListStart(placeholderAt: index) {
            return column(endingBefore: start)
        }
        guard !isOperator(index + 1) else { return nil }
        if word(index - 1) == "and", isPlaceholder(index - 2), word(index - 3) == "between" {
            return column(endingBefore: word(index - 4) == "not" ? index - 4 : index - 3)
        }
        if word(index - 1) == "between" {
            guard word(index + 1) == "and" else { return nil }
            return column(endingBefore: word(index - 2) == "not" ? index - 2 : index - 1)
        }
        return operatorStart(endingAt: index - 1).flatMap(column(endingBefore:))
    }

    /// Where the `[not] in (` of a list holding the `?` as an element of its own starts.
    private func inListStart(placeholderAt index: Int) -> Int? {
        guard symbol(index + 1) == "," || symbol(index + 1) == ")" else { return nil }
        var open = index - 1
        while symbol(open) == "," {
            guard tokens.indices.contains(open - 1), [.placeholder, .string, .number].contains(tokens[open - 1].kind) else { return nil }
            open -= 2
        }
        guard symbol(open) == "(", word(open - 1) == "in" else { return nil }
        return word(open - 2) == "not" ? open - 2 : open - 1
    }

    /// The first token of the comparison operator that ends at `end`.
    private func operatorStart(endingAt end: Int) -> Int? {
        if let symbol = symbol(end), Self.comparisons.contains(symbol) { return end }
        switch word(end) {
        case "like", "glob": return word(end - 1) == "not" ? end - 1 : end
        case "is": return end
        case "not": return word(end - 1) == "is" ? end - 1 : nil
        default: return nil
        }
    }

    /// The last token of the comparison operator that starts at `start`.
    private func operatorEnd(startingAt start: Int) -> Int? {
        if let symbol = symbol(start), Self.comparisons.contains(symbol) { return start }
        switch word(start) {
        case "like", "glob": return start
        case "is": return word(start + 1) == "not" ? start + 1 : start
        case "not": return word(start + 1) == "like" || word(start + 1) == "glob" ? start + 1 : nil
        default: return nil
        }
    }

    /// `? op COLUMN`.
    private func columnAfter(placeholderAt index: Int) -> (name: String, qualifier: String?, index: Int)? {
        guard !isOperator(index - 1), word(index - 1) != "between", word(index - 1) != "and" || word(index - 3) != "between",
              let end = operatorEnd(startingAt: index + 1), let column = qualifiedName(startingAt: end + 1),
              symbol(column.end) != "(", !isOperator(column.end)
        else { return nil }
        return (column.name, column.qualifier, end + 1)
    }

    /// The column (`c` or `t.c`) whose last token is right before `end`,
    /// unless an operator before it binds it to something else.
    private func column(endingBefore end: Int) -> (name: String, qualifier: String?, index: Int)? {
        guard let column = name(end - 1) else { return nil }
        var first = end - 1
        while symbol(first - 1) == ".", name(first - 2) != nil { first -= 2 }
        guard !isOperator(first - 1), symbol(first - 1) != ".", word(first - 1) != "collate" else { return nil }
        return (column, first < end - 1 ? name(end - 3) : nil, first)
    }
}

/// A token of SQL text: comments and white space are dropped.
struct SQLToken: Equatable {
    enum Kind: Equatable {
        /// A bare word, lower-cased: a keyword or a name.
        case word
        /// A quoted identifier (`"…"`, `[…]`, `` `…` ``), unquoted.
        case identifier
        case string
        case number
        /// `?`, `?NNN`, `:name`, `@name`, `$name`.
        case placeholder
        case symbol
    }

    var kind: Kind
    var text: String

    static func tokenize(_ sql: String) -> [SQLToken] {
        let bytes = Array(sql.utf8)
        var tokens: [SQLToken] = []
        var index = 0
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        func isWordByte(_ byte: UInt8) -> Bool {
            byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
                || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
        /// The end of a quoted run starting at `start`, a doubled closing quote standing for itself.
        func quotedEnd(from start: Int, close: UInt8) -> Int {
            var end = start + 1
            while end < bytes.count {
                if bytes[end] == close {
                    if close != UInt8(ascii: "]"), end + 1 < bytes.count, bytes[end + 1] == close { end += 2; continue }
                    return end + 1
                }
                end += 1
            }
            return end
        }
        /// The name a quoted identifier from `start` to `end` stands for.
        func unquoted(_ start: Int, _ end: Int) -> String {
            let close = bytes[start] == UInt8(ascii: "[") ? UInt8(ascii: "]") : bytes[start]
            var name: [UInt8] = []
            var index = start + 1
            while index < end && !(bytes[index] == close && index == end - 1) {
                name.append(bytes[index])
                index += bytes[index] == close && close != UInt8(ascii: "]") ? 2 : 1
            }
            return String(decoding: name, as: UTF8.self)
        }
        while index < bytes.count {
            let byte = bytes[index]
            let next: UInt8? = index + 1 < bytes.count ? bytes[index + 1] : nil
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0C:
                index += 1
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                index += 2
                while index < bytes.count && !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/")) { index += 1 }
                index = min(bytes.count, index + 2)
            case UInt8(ascii: "'"):
                let end = quotedEnd(from: index, close: byte)
                tokens.append(SQLToken(kind: .string, text: text(index..<end)))
                index = end
            case UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "["):
                let end = quotedEnd(from: index, close: byte == UInt8(ascii: "[") ? UInt8(ascii: "]") : byte)
                tokens.append(SQLToken(kind: .identifier, text: unquoted(index, end)))
                index = end
            case UInt8(ascii: "?"), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "$"):
                var end = index + 1
                while end < bytes.count && isWordByte(bytes[end]) { end += 1 }
                tokens.append(SQLToken(kind: byte == UInt8(ascii: "?") || end > index + 1 ? .placeholder : .symbol, text: text(index..<end)))
                index = end
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let hexadecimal = byte == UInt8(ascii: "0") && next.map { $0 | 0x20 == UInt8(ascii: "x") } == true
                var end = index + 1
                while end < bytes.count {
                    let current = bytes[end]
                    let exponentSign = !hexadecimal && (current == UInt8(ascii: "+") || current == UInt8(ascii: "-"))
                        && bytes[end - 1] | 0x20 == UInt8(ascii: "e")
                    guard isWordByte(current) || current == UInt8(ascii: ".") || exponentSign else { break }
                    end += 1
                }
                tokens.append(SQLToken(kind: .number, text: text(index..<end)))
                index = end
            case UInt8(ascii: "."):
                if let next, next >= UInt8(ascii: "0"), next <= UInt8(ascii: "9") {
                    var end = index + 1
                    while end < bytes.count && (isWordByte(bytes[end]) || bytes[end] == UInt8(ascii: ".")) { end += 1 }
                    tokens.append(SQLToken(kind: .number, text: text(index..<end)))
                    index = end
                } else {
                    tokens.append(SQLToken(kind: .symbol, text: "."))
                    index += 1
                }
            case _ where isWordByte(byte):
                var end = index + 1
                while end < bytes.count && isWordByte(bytes[end]) { end += 1 }
                if end == index + 1, byte | 0x20 == UInt8(ascii: "x"), next == UInt8(ascii: "'") {
                    let close = quotedEnd(from: end, close: UInt8(ascii: "'"))
                    tokens.append(SQLToken(kind: .string, text: text(index..<close)))
                    index = close
                } else {
                    tokens.append(SQLToken(kind: .word, text: text(index..<end).lowercased()))
                    index = end
                }
            default:
                let three = index + 2 < bytes.count ? text(index..<index + 3) : ""
                let two = next != nil ? text(index..<index + 2) : ""
                let length = three == "->>" ? 3 : ["==", "!=", "<>", "<=", ">=", "||", "<<", ">>", "->"].contains(two) ? 2 : 1
                tokens.append(SQLToken(kind: .symbol, text: text(index..<index + length)))
                index += length
            }
        }
        return tokens
    }
}
