/// Cycles among `<const>`s and `<sql>` fragments, found before any method is
/// parsed: a cycle is a load error whether or not a method includes it.
extension ModuleParser {
    /// Reports every cycle of `${}` inclusions among the module's consts and
    /// fragments at the line of the inclusion that closes it, and returns the
    /// names on a cycle (methods that include one are not expanded).
    mutating func checkInclusionCycles(_ declarations: Declarations) -> Set<String> {
        var edges: [String: [(name: String, line: Int)]] = [:]
        var declaredAt: [String: Int] = [:]
        for (name, constant) in declarations.consts {
            edges[name] = inclusions(in: Array(constant.value.utf8), line: constant.line)
            declaredAt[name] = constant.line
        }
        for (name, fragment) in declarations.fragments {
            edges[name] = inclusions(in: fragment)
            declaredAt[name] = fragment.line
        }
        for name in edges.keys { edges[name]!.removeAll { declaredAt[$0.name] == nil } }

        // A depth-first walk with an explicit path, so a chain of thousands of
        // fragments cannot exhaust the stack.
        enum Mark { case onPath, done }
        var marks: [String: Mark] = [:]
        var cyclic: Set<String> = []
        for start in declaredAt.keys.sorted(by: { (declaredAt[$0]!, $0) < (declaredAt[$1]!, $1) }) where marks[start] == nil {
            var path: [(name: String, next: Int)] = [(start, 0)]
            marks[start] = .onPath
            while let top = path.last {
                let out = edges[top.name] ?? []
                guard top.next < out.count else {
                    marks[top.name] = .done
                    path.removeLast()
                    continue
                }
                path[path.count - 1].next += 1
                let edge = out[top.next]
                switch marks[edge.name] {
                case .onPath?:
                    let cycle = path.map(\.name).drop { $0 != edge.name } + [edge.name]
                    error(edge.line, "${\(edge.name)} includes itself: \(cycle.joined(separator: " → "))")
                    cyclic.formUnion(cycle)
                case .done?:
                    continue
                case nil:
                    marks[edge.name] = .onPath
                    path.append((edge.name, 0))
                }
            }
        }
        return cyclic
    }

    /// The `${name}` inclusions in a fragment's text, nested elements included.
    private func inclusions(in element: XMLElement) -> [(name: String, line: Int)] {
        var found: [(name: String, line: Int)] = []
        var pending = [element]
        while let current = pending.popLast() {
            for child in current.children {
                switch child {
                case .text(let text, let line): found += inclusions(in: Array(text.utf8), line: line)
                case .element(let nested): pending.append(nested)
                case .comment: continue
                }
            }
        }
        return found
    }

    /// The `${name}` inclusions in SQL text that starts on `line`; SQL comments
    /// (`--`, `/* */`) outside quotes include nothing, as when the text is parsed.
    private func inclusions(in text: [UInt8], line startLine: Int) -> [(name: String, line: Int)] {
        var found: [(name: String, line: Int)] = []
        var quote: UInt8?
        var line = startLine
        var index = 0
        func next(_ byte: Character) -> Bool { index + 1 < text.count && text[index + 1] == UInt8(ascii: byte.unicodeScalars.first!) }
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "$") && next("{") {
                var close = index + 2
                while close < text.count && text[close] != UInt8(ascii: "}") && text[close] != UInt8(ascii: "\n") { close += 1 }
                if close < text.count && text[close] == UInt8(ascii: "}") {
                    let name = String(decoding: text[(index + 2)..<close], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                    found.append((name, line))
                    index = close
                }
            } else if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "-") && next("-") {
                while index + 1 < text.count && text[index + 1] != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "/") && next("*") {
                index += 2
                while index < text.count && !(text[index] == UInt8(ascii: "*") && next("/")) {
                    if text[index] == UInt8(ascii: "\n") { line += 1 }
                    index += 1
                }
                index += 1
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "`") {
                quote = byte
            } else if byte == UInt8(ascii: "\n") {
                line += 1
            }
            if quote != nil && byte == UInt8(ascii: "\n") { line += 1 }
            index += 1
        }
        return found
    }
}
