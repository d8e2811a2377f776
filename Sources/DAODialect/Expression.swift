import DAOValue

/// Why a condition could not be parsed or bound, and where in its text.
public struct ExpressionSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in a module author's terms: "'=' is not an operator: use '==' to compare".
    public var message: String
    /// The 1-based character column in the condition where the problem is.
    public var column: Int

    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    public var description: String { "column \(column): \(message)" }
}

/// Why a condition could not be evaluated with the values of one call.
public struct EvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, naming the condition or the part of it that failed.
    public var message: String
    /// The argument path involved, as written ("author.name"), when there is one.
    public var name: String?

    public init(_ message: String, name: String? = nil) {
        self.message = message
        self.name = name
    }

    public var description: String { message }
}

/// A parsed `true=` / `false=` condition of an `if` or `when`.
///
/// Parse once at load, ``bound(_:)`` its names to slots, then evaluate per call:
/// evaluation does no string work and no lookups beyond `globals` and members.
public struct Expression: Sendable {
    /// How deep a condition may nest: each operator, `not`, sign and pair of
    /// parentheses is a level. Parsing, binding and evaluating recurse once per
    /// level, so a deeper condition is refused at load rather than allowed to
    /// exhaust the stack (`a + a + …` is as deep as it has terms).
    public static let maximumDepth = 100

    /// The condition as written.
    public let source: String
    /// Root names the expression reads (e.g. `["title", "year", "authors"]`), for load-time checks.
    public let names: Set<String>
    let root: Node
    /// Whether every name has a slot; true from the start when there are no names.
    let isBound: Bool

    /// Parses a condition.
    public static func parse(_ source: String) throws(ExpressionSyntaxError) -> Expression {
        var parser = try Parser(source)
        let root = try parser.parseCondition()
        return Expression(source: source, names: parser.names, root: root, isBound: parser.names.isEmpty)
    }

    /// Binds each root name to where it lives.
    ///
    /// `resolve` returns `nil` for a name the method does not know: that is an
    /// error at the name's column. Binding a bound expression again rebinds it.
    public func bound(_ resolve: (String) -> Slot?) throws(ExpressionSyntaxError) -> Expression {
        func bind(_ node: Node) throws(ExpressionSyntaxError) -> Node {
            switch node {
            case .literal:
                return node
            case .name(let root, let members, let span):
                guard let slot = resolve(root) else {
                    throw ExpressionSyntaxError("unknown name '\(root)'", column: source.column(of: span.lowerBound))
                }
                return .path(ValuePath(root: root, slot: slot, members: members), span)
            case .path(let path, let span):
                return try bind(.name(root: path.root, members: path.members, span: span))
            case .unary(let op, let operand, let span):
                return .unary(op, try bind(operand), span)
            case .arithmetic(let op, let left, let right, let span):
                return .arithmetic(op, try bind(left), try bind(right), span)
            case .comparison(let op, let left, let right, let span):
                return .comparison(op, try bind(left), try bind(right), span)
            case .not(let operand):
                return .not(try bind(operand))
            case .logical(let op, let left, let right):
                return .logical(op, try bind(left), try bind(right))
            }
        }
        return Expression(source: source, names: names, root: try bind(root), isBound: true)
    }
}

private extension String {
    /// The 1-based character column of `index`.
    func column(of index: Index) -> Int {
        distance(from: startIndex, to: index) + 1
    }
}

// MARK: - Syntax tree

extension Expression {
    /// Where a node or token is in `Expression.source`.
    typealias Span = Range<String.Index>

    /// A node of a parsed condition; spans are kept only for error messages.
    indirect enum Node: Sendable {
        case literal(Value)
        /// A name and its chained properties before ``Expression/bound(_:)``.
        case name(root: String, members: [String], span: Span)
        /// A name after ``Expression/bound(_:)``.
        case path(ValuePath, Span)
        /// Prefix `+` or `-`.
        case unary(ArithmeticOperator, Node, Span)
        case arithmetic(ArithmeticOperator, Node, Node, Span)
        case comparison(ComparisonOperator, Node, Node, Span)
        case not(Node)
        case logical(LogicalOperator, Node, Node)
    }

    enum ArithmeticOperator: String, Sendable {
        case add = "+"
        case subtract = "-"
        case multiply = "*"
        case divide = "/"
        case integerDivide = "\\"
        case remainder = "%"
    }

    enum ComparisonOperator: String, Sendable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case greater = ">"
        case lessOrEqual = "<="
        case greaterOrEqual = ">="
    }

    enum LogicalOperator: Sendable {
        case and, or, xor
    }
}

// MARK: - Lexer and parser

extension Expression {
    /// Keywords, matched case-insensitively.
    enum Keyword: String {
        case and, or, xor, not, `nil`, `true`, `false`
    }

    struct Token {
        enum Kind: Equatable {
            case name(String)
            /// The magnitude, at most 2⁶³ so that `-9223372036854775808` can be written.
            case integer(UInt64)
            case decimal(Double)
            case string(String)
            case keyword(Keyword)
            case arithmetic(ArithmeticOperator)
            case comparison(ComparisonOperator)
            case open, close, dot
            case end
        }

        var kind: Kind
        var span: Span
    }

    /// A recursive-descent parser over a lexer that reads one token ahead, so the
    /// first problem in reading order is the one reported.
    struct Parser {
        private let source: String
        private let scalars: String.UnicodeScalarView
        /// Where the lexer continues.
        private var position: String.Index
        /// The lookahead.
        private var token: Token
        /// The last token consumed, for "after '…'" in messages.
        private var previous: Token?
        private(set) var names: Set<String> = []

        init(_ source: String) throws(ExpressionSyntaxError) {
            self.source = source
            scalars = source.unicodeScalars
            position = scalars.startIndex
            token = Token(kind: .end, span: position..<position)
            token = try lex()
        }

        /// The whole condition: an expression and nothing after it.
        mutating func parseCondition() throws(ExpressionSyntaxError) -> Node {
            let expression = try parseOr()
            switch token.kind {
            case .end:
                return expression.node
            case .close:
                throw error("unmatched ')'", at: token)
            default:
                throw error("expected an operator after \(quoted(previous)), found \(describe(token))", at: token)
            }
        }

        /// A node with the span of its text, parentheses included.
        private struct Parsed {
            var node: Node
            var span: Span
            /// How many levels the node nests, itself included.
            var depth = 1

            /// The span from this node's start to `other`'s end.
            func through(_ other: Parsed) -> Span { span.lowerBound..<other.span.upperBound }
        }

        /// How many parentheses, `not`s and signs enclose the point being parsed.
        private var nesting = 0

        /// Enters a level of recursion at `token`, refusing one beyond ``Expression/maximumDepth``.
        private mutating func enter(_ token: Token) throws(ExpressionSyntaxError) {
            nesting += 1
            if nesting > Expression.maximumDepth { throw tooDeep(at: token) }
        }

        /// `node` over its operands, refused when it nests too deep.
        private func combine(_ node: Node, span: Span, _ operands: Parsed..., at token: Token) throws(ExpressionSyntaxError) -> Parsed {
            let depth = operands.map(\.depth).max()! + 1
            if depth + nesting > Expression.maximumDepth { throw tooDeep(at: token) }
            return Parsed(node: node, span: span, depth: depth)
        }

        private func tooDeep(at token: Token) -> ExpressionSyntaxError {
            error("the condition nests more than \(Expression.maximumDepth) levels deep (each operator, 'not', sign and parenthesis is a level): split it", at: token)
        }

        private mutating func parseOr() throws(ExpressionSyntaxError) -> Parsed {
            var left = try parseXor()
            while token.kind == .keyword(.or) {
                let operatorToken = token
                try advance()
                let right = try parseXor()
                left = try combine(.logical(.or, left.node, right.node), span: left.through(right), left, right, at: operatorToken)
            }
            return left
        }

        private mutating func parseXor() throws(ExpressionSyntaxError) -> Parsed {
            var left = try parseAnd()
            while token.kind == .keyword(.xor) {
                let operatorToken = token
                try advance()
                let right = try parseAnd()
                left = try combine(.logical(.xor, left.node, right.node), span: left.through(right), left, right, at: operatorToken)
            }
            return left
        }

        private mutating func parseAnd() throws(ExpressionSyntaxError) -> Parsed {
            var left = try parseNot()
            while token.kind == .keyword(.and) {
                let operatorToken = token
                try advance()
                let right = try parseNot()
                left = try combine(.logical(.and, left.node, right.node), span: left.through(right), left, right, at: operatorToken)
            }
            return left
        }

        private mutating func parseNot() throws(ExpressionSyntaxError) -> Parsed {
            guard token.kind == .keyword(.not) else { return try parseComparison() }
            let notToken = token
            try enter(notToken)
            defer { nesting -= 1 }
            try advance()
            let operand = try parseNot()
            return try combine(.not(operand.node), span: notToken.span.lowerBound..<operand.span.upperBound, operand, at: notToken)
        }

        private mutating func parseComparison() throws(ExpressionSyntaxError) -> Parsed {
            let left = try parseAdditive()
            guard case .comparison(let op) = token.kind else { return left }
            let operatorToken = token
            try advance()
            let right = try parseAdditive()
            if case .comparison(let second) = token.kind {
                let example = "a \(op.rawValue) b and b \(second.rawValue) c"
                throw error("comparisons cannot be chained: combine them with 'and', as in '\(example)'", at: token)
            }
            let span = left.through(right)
            return try combine(.comparison(op, left.node, right.node, span), span: span, left, right, at: operatorToken)
        }

        private mutating func parseAdditive() throws(ExpressionSyntaxError) -> Parsed {
            var left = try parseMultiplicative()
            while case .arithmetic(let op) = token.kind, op == .add || op == .subtract {
                let operatorToken = token
                try advance()
                let right = try parseMultiplicative()
                let span = left.through(right)
                left = try combine(.arithmetic(op, left.node, right.node, span), span: span, left, right, at: operatorToken)
            }
            return left
        }

        private mutating func parseMultiplicative() throws(ExpressionSyntaxError) -> Parsed {
            var left = try parseUnary()
            while case .arithmetic(let op) = token.kind, op != .add, op != .subtract {
                let operatorToken = token
                try advance()
                let right = try parseUnary()
                let span = left.through(right)
                left = try combine(.arithmetic(op, left.node, right.node, span), span: span, left, right, at: operatorToken)
            }
            return left
        }

        /// Prefix `+` / `-`; a sign directly before a number literal is folded into it.
        private mutating func parseUnary() throws(ExpressionSyntaxError) -> Parsed {
            guard case .arithmetic(let op) = token.kind, op == .add || op == .subtract else {
                return try parsePostfix()
            }
            let signToken = token
            let start = signToken.span.lowerBound
            try enter(signToken)
            defer { nesting -= 1 }
            try advance()
            if op == .subtract, token.kind == .integer(UInt64(Int64.max) + 1) {
                let span = start..<token.span.upperBound
                try advance()
                return Parsed(node: .literal(.integer(.min)), span: span)
            }
            let operand = try parseUnary()
            let span = start..<operand.span.upperBound
            switch operand.node {
            case .literal(.integer(let value)) where value != .min:
                return Parsed(node: .literal(.integer(op == .subtract ? -value : value)), span: span)
            case .literal(.double(let value)):
                return Parsed(node: .literal(.double(op == .subtract ? -value : value)), span: span)
            default:
                return try combine(.unary(op, operand.node, span), span: span, operand, at: signToken)
            }
        }

        /// A primary; after a name, its chained properties.
        private mutating func parsePostfix() throws(ExpressionSyntaxError) -> Parsed {
            guard case .name(let root) = token.kind else {
                let primary = try parsePrimary()
                if token.kind == .dot {
                    throw error("a property can only be read from a name, as in 'model.read'", at: token)
                }
                return primary
            }
            names.insert(root)
            var span = token.span
            var members: [String] = []
            try advance()
            while token.kind == .dot {
                try advance()
                switch token.kind {
                case .name(let member):
                    members.append(member)
                case .keyword:
                    members.append(String(source[token.span]))
                default:
                    throw error("expected a property name after '.', found \(describe(token))", at: token)
                }
                if members.count > ModuleLimits.chainLength {
                    throw error("a chain reads more than \(ModuleLimits.chainLength) properties", at: token)
                }
                span = span.lowerBound..<token.span.upperBound
                try advance()
            }
            return Parsed(node: .name(root: root, members: members, span: span), span: span)
        }

        private mutating func parsePrimary() throws(ExpressionSyntaxError) -> Parsed {
            let current = token
            let node: Node
            switch current.kind {
            case .open:
                try enter(current)
                defer { nesting -= 1 }
                try advance()
                let inner = try parseOr()
                guard token.kind == .close else {
                    let opening = "'(' at column \(source.column(of: current.span.lowerBound))"
                    if token.kind == .end {
                        throw error("expected ')' to close \(opening)", at: token)
                    }
                    throw error(
                        "expected an operator or ')' after \(quoted(previous)), found \(describe(token))", at: token)
                }
                let span = current.span.lowerBound..<token.span.upperBound
                try advance()
                return Parsed(node: inner.node, span: span, depth: inner.depth + 1)
            case .keyword(.nil):
                node = .literal(.null)
            case .keyword(.true):
                node = .literal(.bool(true))
            case .keyword(.false):
                node = .literal(.bool(false))
            case .integer(let magnitude):
                guard let value = Int64(exactly: magnitude) else {
                    throw error("the integer \(source[current.span]) does not fit in 64 bits", at: current)
                }
                node = .literal(.integer(value))
            case .decimal(let value):
                node = .literal(.double(value))
            case .string(let value):
                node = .literal(.string(value))
            case .keyword(.not):
                throw error("'not' needs parentheses here, as in 'a == (not b)'", at: current)
            case .dot where peek.map(Self.isDigit) == true:
                throw error("a decimal needs a digit before the point, as in '0.5'", at: current)
            case .end where previous == nil:
                throw error("the condition is empty", at: current)
            default:
                let after = previous.map { " after \(quoted($0))" } ?? ""
                throw error("expected a value\(after), found \(describe(current))", at: current)
            }
            try advance()
            return Parsed(node: node, span: current.span)
        }

        // MARK: Tokens

        private mutating func advance() throws(ExpressionSyntaxError) {
            previous = token
            token = try lex()
        }

        /// Reads the token at `position`.
        private mutating func lex() throws(ExpressionSyntaxError) -> Token {
            while position < scalars.endIndex, scalars[position].properties.isWhitespace {
                scalars.formIndex(after: &position)
            }
            let start = position
            guard let scalar = next() else { return Token(kind: .end, span: start..<start) }
            let kind: Token.Kind
            switch scalar {
            case "(": kind = .open
            case ")": kind = .close
            case ".": kind = .dot
            case "+": kind = .arithmetic(.add)
            case "-": kind = .arithmetic(.subtract)
            case "*": kind = .arithmetic(.multiply)
            case "/": kind = .arithmetic(.divide)
            case "\\": kind = .arithmetic(.integerDivide)
            case "%": kind = .arithmetic(.remainder)
            case "<":
                if take("=") {
                    kind = .comparison(.lessOrEqual)
                } else if take(">") {
                    throw error("'<>' is not an operator: use '!='", at: start)
                } else {
                    kind = .comparison(.less)
                }
            case ">":
                kind = take("=") ? .comparison(.greaterOrEqual) : .comparison(.greater)
            case "=":
                if take("=") {
                    kind = .comparison(.equal)
                } else if take(">") {
                    throw error("'=>' is not an operator: use '>='", at: start)
                } else if take("<") {
                    throw error("'=<' is not an operator: use '<='", at: start)
                } else {
                    throw error("'=' is not an operator: use '==' to compare", at: start)
                }
            case "!":
                guard take("=") else { throw error("'!' is not an operator: use 'not'", at: start) }
                kind = .comparison(.notEqual)
            case "&", "|":
                let written = take(scalar) ? "\(scalar)\(scalar)" : "\(scalar)"
                throw error("'\(written)' is not an operator: use '\(scalar == "&" ? "and" : "or")'", at: start)
            case "^":
                throw error("'^' is not an operator: use 'xor' for exclusive or", at: start)
            case "'":
                kind = .string(try lexString(from: start))
            case "\"":
                throw error("strings are written in single quotes, as in 'text'", at: start)
            case "#" where peek == "{", "@" where peek == "{", "$" where peek == "{":
                throw error("write argument names without '\(scalar){…}' in a condition", at: start)
            case "0"..."9":
                kind = try lexNumber(from: start)
            case _ where Self.startsName(scalar):
                while let next = peek, Self.continuesName(next) { scalars.formIndex(after: &position) }
                let word = String(source[start..<position])
                kind = Keyword(rawValue: word.lowercased()).map(Token.Kind.keyword) ?? .name(word)
            default:
                throw error("unexpected character '\(scalar)'", at: start)
            }
            return Token(kind: kind, span: start..<position)
        }

        /// A string after its opening quote: `\'` is a quote, every other backslash is itself.
        private mutating func lexString(from start: String.Index) throws(ExpressionSyntaxError) -> String {
            var value = String.UnicodeScalarView()
            while let scalar = next() {
                switch scalar {
                case "'":
                    return String(value)
                case "\\":
                    value.append(take("'") ? "'" : "\\")
                default:
                    value.append(scalar)
                }
            }
            throw error("unterminated string: no closing quote for the string that starts here", at: start)
        }

        /// Digits, then `.digits` for a decimal.
        private mutating func lexNumber(from start: String.Index) throws(ExpressionSyntaxError) -> Token.Kind {
            skipDigits()
            if peek == ".", case let afterPoint = scalars.index(after: position),
                afterPoint < scalars.endIndex, Self.isDigit(scalars[afterPoint])
            {
                position = afterPoint
                skipDigits()
                guard let value = Double(source[start..<position]), value.isFinite else {
                    throw error("the number \(source[start..<position]) is too large", at: start)
                }
                return .decimal(value)
            }
            guard let magnitude = UInt64(source[start..<position]), magnitude <= UInt64(Int64.max) + 1 else {
                throw error("the integer \(source[start..<position]) does not fit in 64 bits", at: start)
            }
            return .integer(magnitude)
        }

        private mutating func skipDigits() {
            while let scalar = peek, Self.isDigit(scalar) { scalars.formIndex(after: &position) }
        }

        private var peek: Unicode.Scalar? {
            position < scalars.endIndex ? scalars[position] : nil
        }

        private mutating func next() -> Unicode.Scalar? {
            guard position < scalars.endIndex else { return nil }
            defer { scalars.formIndex(after: &position) }
            return scalars[position]
        }

        /// Consumes `expected` when it is next.
        private mutating func take(_ expected: Unicode.Scalar) -> Bool {
            guard peek == expected else { return false }
            scalars.formIndex(after: &position)
            return true
        }

        private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

        private static func startsName(_ scalar: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
        }

        private static func continuesName(_ scalar: Unicode.Scalar) -> Bool {
            startsName(scalar) || isDigit(scalar)
        }

        // MARK: Messages

        private func error(_ message: String, at index: String.Index) -> ExpressionSyntaxError {
            ExpressionSyntaxError(message, column: source.column(of: index))
        }

        private func error(_ message: String, at token: Token) -> ExpressionSyntaxError {
            error(message, at: token.span.lowerBound)
        }

        private func quoted(_ token: Token?) -> String {
            guard let token else { return "the start" }
            return "'\(source[token.span])'"
        }

        private func describe(_ token: Token) -> String {
            token.kind == .end ? "the end of the condition" : quoted(token)
        }
    }
}
