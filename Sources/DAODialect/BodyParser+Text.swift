import ASCIIBytes
import DAOValue

private let space = UInt8(ascii: " ")
private let newline = UInt8(ascii: "\n")
private let singleQuote = UInt8(ascii: "'")
private let openBrace = UInt8(ascii: "{")
private let closeBrace = UInt8(ascii: "}")

@inline(__always) private func isSpace(_ byte: UInt8) -> Bool {
    byte == space || byte == newline || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
}

extension BodyParser {
    /// Scans SQL text: folds whitespace, drops comments, follows quotes and
    /// turns `#{}`, `@{}`, `${}` and `%{}` into nodes.
    mutating func scan(_ text: [UInt8], line startLine: Int, into list: inout NodeList) throws(LoadError) {
        try spend(bytes: text.count, line: startLine)
        var index = 0
        var line = startLine
        let count = text.count
        while index < count {
            let byte = text[index]
            let next: UInt8? = index + 1 < count ? text[index + 1] : nil
            switch quote {
            case .none:
                if byte == UInt8(ascii: "-") && next == UInt8(ascii: "-") {
                    while index < count && text[index] != newline { index += 1 }
                    list.appendSpace()
                } else if byte == UInt8(ascii: "/") && next == UInt8(ascii: "*") {
                    var end = index + 2
                    while end + 1 < count && !(text[end] == UInt8(ascii: "*") && text[end + 1] == UInt8(ascii: "/")) {
                        if text[end] == newline { line += 1 }
                        end += 1
                    }
                    guard end + 1 < count else { throw failure(line, "a /* comment is not closed") }
                    index = end + 2
                    list.appendSpace()
                } else if isSpace(byte) {
                    if byte == newline { line += 1 }
                    list.appendSpace()
                    index += 1
                } else if next == openBrace && (byte == UInt8(ascii: "#") || byte == UInt8(ascii: "@")
                    || byte == UInt8(ascii: "$") || byte == UInt8(ascii: "%")) {
                    index = try reference(byte, in: text, at: index, line: &line, into: &list)
                } else {
                    if byte == singleQuote {
                        quote = .string
                    } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "`") {
                        quote = .identifier(byte)
                    } else if byte == openBrace, let name = bareReference(in: text, at: index) {
                        throw failure(line, "'{\(name)}' is not a reference: write #{\(name)} to bind it, @{\(name)} to inline it, or ${\(name)} for a const or sql fragment")
                    }
                    list.append(byte: byte)
                    index += 1
                }
            case .string, .identifier:
                let closing = quote == .string ? singleQuote : { if case .identifier(let q) = quote { q } else { 0 } }()
                if byte == closing {
                    list.append(byte: byte)
                    if next == closing {
                        list.append(byte: byte)
                        index += 2
                    } else {
                        quote = .none
                        index += 1
                    }
                } else if next == openBrace && (byte == UInt8(ascii: "#") || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "$")) {
                    index = try reference(byte, in: text, at: index, line: &line, into: &list)
                } else {
                    if byte == newline { line += 1 }
                    list.append(byte: byte)
                    index += 1
                }
            }
        }
    }

    /// `{name}` or `{a.b}` at `index`, the reference's sigil-less foreach example.
    private func bareReference(in text: [UInt8], at index: Int) -> String? {
        var end = index + 1
        while end < text.count && text[end] != closeBrace && end - index < 100 { end += 1 }
        guard end < text.count, end > index + 1 else { return nil }
        let name = String(decoding: text[(index + 1)..<end], as: UTF8.self)
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.allSatisfy({ isIdentifier($0) }) ? name : nil
    }

    /// Handles the reference that starts at `index` (`#{`, `@{`, `${`, `%{`);
    /// returns the index after it.
    private mutating func reference(_ sigil: UInt8, in text: [UInt8], at index: Int, line: inout Int,
                                    into list: inout NodeList) throws(LoadError) -> Int {
        if sigil == UInt8(ascii: "%") { return try expandTemplate(in: text, at: index, line: line, into: &list) }
        let mark = String(UnicodeScalar(sigil))
        var close = index + 2
        while close < text.count && text[close] != closeBrace && text[close] != newline { close += 1 }
        guard close < text.count, text[close] == closeBrace else {
            throw failure(line, "\(mark){ is not closed by } on the same line")
        }
        let content = String(decoding: text[(index + 2)..<close], as: UTF8.self)
        switch sigil {
        case UInt8(ascii: "#"):
            guard quote == .none else {
                throw failure(line, "#{\(content)} inside a quoted literal would bind nothing: remove the quotes around it")
            }
            let (path, modifier) = try parseReference(content, mark: mark, line: line)
            if modifier == "no" {
                throw failure(line, "#{\(content)}: 'no \"\"' is for @{} only; #{} always binds a parameter")
            }
            try refuseWholeObjectWithSecrets(path, written: "#{\(content)}", line: line)
            list.append(.bind(BindReference(path: path, orEmpty: modifier == "or",
                                            encryptedProperty: encryptedProperty(of: path), line: line)))
        case UInt8(ascii: "@"):
            let (path, modifier) = try parseReference(content, mark: mark, line: line)
            if let property = encryptedProperty(of: path) {
                throw failure(line, "@{\(content)} would write the crypt property '\(property)' into the SQL text in plain: "
                    + "bind it with #{\(path)}, which encrypts it")
            }
            try refuseWholeObjectWithSecrets(path, written: "@{\(content)}", line: line)
            let mode: InlineReference.Mode
            switch (modifier, quote) {
            case ("no", _): mode = .raw
            case (_, .none): mode = .literal
            case (_, .string): mode = .insideString
            case (_, .identifier(let quoteByte)): mode = .insideIdentifier(quoteByte)
            }
            if mode == .raw, scope.arguments.contains(where: { $0.name == path.root }) { rawTextArguments.insert(path.root) }
            list.append(.inline(InlineReference(path: path, orEmpty: modifier == "or", mode: mode, line: line)))
        default:
            try expandConfig(content.trimmingCharacters(in: .whitespaces), line: line, into: &list)
        }
        return close + 1
    }

    /// `${T}`, `${const}`, `${fragment}`.
    private mutating func expandConfig(_ name: String, line: Int, into list: inout NodeList) throws(LoadError) {
        if name == "T" || name == "t" {
            namesTable = true
            if let table = module.tableName { list.append(text: table) } else { list.append(.table) }
            return
        }
        if module.cyclic.contains(name) {
            throw failure(line, "${\(name)} cannot be expanded: it is on a cycle of inclusions")
        }
        if expanding.contains(where: { $0.name == name }) {
            throw failure(line, "${\(name)} includes itself: \((expanding.map(\.name) + [name]).joined(separator: " → "))")
        }
        if let constant = module.consts[name] {
            expanding.append((name, line))
            defer { expanding.removeLast(); nesting -= 1 }
            try enter(line: line)
            try spend(inclusions: 1, line: line)
            try scan(Array(constant.value.utf8), line: constant.line, into: &list)
        } else if let fragment = module.fragments[name] {
            guard quote == .none else {
                throw failure(line, "${\(name)} is an sql fragment and cannot be used inside a quoted literal")
            }
            expanding.append((name, line))
            defer { expanding.removeLast(); nesting -= 1 }
            try enter(line: line)
            try spend(inclusions: 1, line: line)
            for node in try parseNodes(fragment.children, allowDynamic: true) { list.append(node) }
        } else if scope.slot(for: name) != nil {
            throw failure(line, "${\(name)} names config content (a const, an sql fragment, T); to use the argument '\(name)' write #{\(name)}")
        } else if isIdentifier(name) {
            throw failure(line, "${\(name)} is not defined: no const or sql fragment is named '\(name)'")
        } else {
            throw failure(line, "${\(name)} is not a reference: ${} takes the name of a const, an sql fragment, T or t")
        }
    }

    /// `%{'template with *', a, b}` → the template once per name, `*` replaced,
    /// joined with ", "; the result is scanned as SQL text.
    private mutating func expandTemplate(in text: [UInt8], at index: Int, line: Int,
                                         into list: inout NodeList) throws(LoadError) -> Int {
        let malformed = "malformed %{…}: expected %{'template with *', name, name…}"
        guard quote == .none else { throw failure(line, "%{…} cannot be used inside a quoted literal") }
        var position = index + 2
        func skipSpaces() { while position < text.count && isSpace(text[position]) { position += 1 } }
        skipSpaces()
        guard position < text.count, text[position] == singleQuote else { throw failure(line, malformed) }
        position += 1
        var template: [UInt8] = []
        while true {
            guard position < text.count else { throw failure(line, "\(malformed): the template's quote is not closed") }
            let byte = text[position]
            if byte == UInt8(ascii: "\\") && position + 1 < text.count && text[position + 1] == singleQuote {
                template.append(singleQuote)
                position += 2
            } else if byte == singleQuote {
                position += 1
                break
            } else {
                template.append(byte)
                position += 1
            }
        }
        var names: [String] = []
        while true {
            skipSpaces()
            guard position < text.count else { throw failure(line, "\(malformed): no closing }") }
            if text[position] == closeBrace { position += 1; break }
            guard text[position] == UInt8(ascii: ",") else { throw failure(line, malformed) }
            position += 1
            skipSpaces()
            let start = position
            while position < text.count && isIdentifierByte(text[position]) { position += 1 }
            let name = String(decoding: text[start..<position], as: UTF8.self)
            guard isIdentifier(name) else { throw failure(line, "\(malformed): '\(name)' is not a name") }
            names.append(name)
        }
        guard !names.isEmpty else { throw failure(line, "\(malformed): it lists no names") }
        let templateText = String(decoding: template, as: UTF8.self)
        guard templateText.contains("*") else { throw failure(line, "%{'\(templateText)', …}: the template has no * to replace") }
        let expansion = names.map { templateText.replacingOccurrences(of: "*", with: $0) }.joined(separator: ", ")
        try scan(Array(expansion.utf8), line: line, into: &list)
        return position
    }

    /// `name.a.b`, optionally followed by `or ""` or `no ""`.
    private func parseReference(_ content: String, mark: String, line: Int) throws(LoadError) -> (ValuePath, String?) {
        let tokens = content.split(whereSeparator: \.isWhitespace).map(String.init)
        let forms = mark == "@" ? "@{name}, @{name or \"\"} or @{name no \"\"}" : "#{name} or #{name or \"\"}"
        let malformed = "malformed reference \(mark){\(content)}: expected \(forms), where name may be a chain a.b.c"
        var modifier: String?
        switch tokens.count {
        case 1: break
        case 3 where (tokens[1] == "or" || tokens[1] == "no") && tokens[2] == "\"\"":
            modifier = tokens[1]
        default:
            throw failure(line, malformed)
        }
        guard let first = tokens.first else { throw failure(line, malformed) }
        let resolved = try path(first, line: line, what: "\(mark){\(content)}")
        return (resolved, modifier)
    }

    /// Refuses, in a write method, a reference to a whole object of a class
    /// with `crypt` properties: its JSON text would hold them in plain.
    private func refuseWholeObjectWithSecrets(_ path: ValuePath, written: String, line: Int) throws(LoadError) {
        guard isWrite, path.members.isEmpty, let className = scope.className(of: path.root),
              let property = module.encryptedProperties[className]?.sorted().first else { return }
        throw failure(line, "\(written) would write the whole \(className) object as JSON text, its crypt property "
            + "'\(property)' in plain: write its properties one by one (#{\(path.root).\(property)} is encrypted)")
    }

    /// The `crypt` property a binding writes, if any.
    ///
    /// In a write method, `#{x.p}` is encrypted when `p` is declared by the
    /// `crypt` of `x`'s class (from an `x:Class` annotation), or — when the
    /// module does not say what class `x` is — by any `crypt` of the module.
    private func encryptedProperty(of path: ValuePath) -> String? {
        guard isWrite, let property = path.members.last else { return nil }
        if path.members.count == 1, let className = scope.className(of: path.root) {
            return module.encryptedProperties[className]?.contains(property) == true ? property : nil
        }
        return module.anyEncryptedProperty.contains(property) ? property : nil
    }
}
