import DAOValue

extension Expression {
    /// Evaluates a bound expression with the values of one call.
    ///
    /// Comparisons and `and` / `or` / `xor` / `not` give booleans; arithmetic gives
    /// numbers or strings; names give what the arguments hold.
    public func evaluate(in frame: Frame) throws(EvaluationError) -> Value {
        precondition(isBound, "evaluating '\(source)' before bound(_:)")
        return try value(of: root, in: frame)
    }

    /// Whether the condition holds: `nil` and `false` and zero do not, `true` and
    /// other numbers do; a string, array, object or binary value is an error.
    public func holds(in frame: Frame) throws(EvaluationError) -> Bool {
        precondition(isBound, "evaluating '\(source)' before bound(_:)")
        return try condition(root, in: frame)
    }

    private func value(of node: Node, in frame: Frame) throws(EvaluationError) -> Value {
        switch node {
        case .literal(let value):
            return value
        case .path(let path, _):
            do {
                return try path.resolve(in: frame)
            } catch {
                throw EvaluationError("\(error.message) in '\(source)'", name: path.description)
            }
        case .name:
            preconditionFailure("unbound name in '\(source)'")
        case .unary(let op, let operand, let span):
            let value = try value(of: operand, in: frame)
            do {
                return try Self.apply(op, value)
            } catch {
                throw EvaluationError(
                    "\(error.message(op, value.kindName)) in '\(source[span])'", name: Self.blame((operand, value)))
            }
        case .arithmetic(let op, let leftNode, let rightNode, let span):
            let left = try value(of: leftNode, in: frame)
            let right = try value(of: rightNode, in: frame)
            do {
                return try Self.apply(op, left, right)
            } catch {
                throw EvaluationError(
                    "\(error.message(op, "\(left.kindName) and \(right.kindName)")) in '\(source[span])'",
                    name: Self.blame((leftNode, left), (rightNode, right)))
            }
        case .comparison, .not, .logical:
            return .bool(try condition(node, in: frame))
        }
    }

    /// The truth of `node`, computed without boxing for comparisons and logic.
    private func condition(_ node: Node, in frame: Frame) throws(EvaluationError) -> Bool {
        switch node {
        case .logical(.and, let left, let right):
            guard try condition(left, in: frame) else { return false }
            return try condition(right, in: frame)
        case .logical(.or, let left, let right):
            if try condition(left, in: frame) { return true }
            return try condition(right, in: frame)
        case .logical(.xor, let left, let right):
            let left = try condition(left, in: frame)
            return try left != condition(right, in: frame)
        case .not(let operand):
            return try !condition(operand, in: frame)
        case .comparison(let op, let leftNode, let rightNode, let span):
            let left = try value(of: leftNode, in: frame)
            let right = try value(of: rightNode, in: frame)
            switch op {
            case .equal: return Self.equal(left, right)
            case .notEqual: return !Self.equal(left, right)
            case .less, .greater, .lessOrEqual, .greaterOrEqual:
                if left.isNull || right.isNull { return false }
                guard let order = Self.order(left, right) else {
                    throw EvaluationError(
                        "cannot compare \(left.kindName) with \(right.kindName) in '\(source[span])'",
                        name: Self.blame((leftNode, left), (rightNode, right)))
                }
                switch op {
                case .less: return order == .less
                case .greater: return order == .greater
                case .lessOrEqual: return order == .less || order == .equal
                default: return order == .greater || order == .equal
                }
            }
        default:
            let value = try value(of: node, in: frame)
            switch value {
            case .null: return false
            case .bool(let truth): return truth
            case .integer(let integer): return integer != 0
            case .double(let double): return double != 0
            case .string, .array, .object, .blob:
                throw truthError(value, node)
            }
        }
    }

    private func truthError(_ value: Value, _ node: Node) -> EvaluationError {
        let got = value.kindPhrase
        guard case .path(let path, _) = node else {
            return EvaluationError("expected a condition, got \(got) in '\(source)'")
        }
        let example = switch value {
        case .array, .object: "\(path).count > 0"
        default: "\(path) != nil"
        }
        return EvaluationError(
            "expected a condition, got \(got) ('\(path)'): compare it, as in '\(example)'", name: path.description)
    }

    /// The argument a failed operation is blamed on: an operand that is a name
    /// holding a non-number, else any operand that is a name.
    private static func blame(_ operands: (node: Node, value: Value)...) -> String? {
        let names = operands.compactMap { node, value -> (path: ValuePath, isNumber: Bool)? in
            guard case .path(let path, _) = node else { return nil }
            switch value {
            case .integer, .double: return (path, true)
            default: return (path, false)
            }
        }
        return (names.first { !$0.isNumber } ?? names.first)?.path.description
    }
}

// MARK: - Arithmetic

extension Expression {
    /// Why arithmetic failed, before the message names the sub-expression.
    enum ArithmeticFailure: Error {
        case types, overflow, divisionByZero, outOfRange

        /// The message for `op` applied to operands of `kinds` ("nil and integer").
        func message(_ op: ArithmeticOperator, _ kinds: String) -> String {
            switch self {
            case .types: "cannot apply '\(op.rawValue)' to \(kinds)"
            case .overflow: "integer overflow"
            case .divisionByZero: "division by zero"
            case .outOfRange: "the result of '\(op.rawValue)' is out of range"
            }
        }
    }

    /// Prefix `+` / `-` on a number.
    static func apply(_ op: ArithmeticOperator, _ operand: Value) throws(ArithmeticFailure) -> Value {
        switch operand {
        case .integer(let value) where op == .subtract:
            guard value != .min else { throw .overflow }
            return .integer(-value)
        case .double(let value) where op == .subtract:
            return .double(-value)
        case .integer, .double:
            return operand
        default:
            throw .types
        }
    }

    /// A binary arithmetic operator: integers stay integers, a double makes a double,
    /// `+` also joins two strings.
    static func apply(_ op: ArithmeticOperator, _ left: Value, _ right: Value) throws(ArithmeticFailure) -> Value {
        switch (left, right) {
        case (.integer(let a), .integer(let b)): try apply(op, a, b)
        case (.integer(let a), .double(let b)): try apply(op, Double(a), b)
        case (.double(let a), .integer(let b)): try apply(op, a, Double(b))
        case (.double(let a), .double(let b)): try apply(op, a, b)
        case (.string(let a), .string(let b)) where op == .add: .string(a + b)
        default: throw .types
        }
    }

    private static func apply(_ op: ArithmeticOperator, _ a: Int64, _ b: Int64) throws(ArithmeticFailure) -> Value {
        let (result, overflow): (Int64, Bool)
        switch op {
        case .add: (result, overflow) = a.addingReportingOverflow(b)
        case .subtract: (result, overflow) = a.subtractingReportingOverflow(b)
        case .multiply: (result, overflow) = a.multipliedReportingOverflow(by: b)
        case .divide, .integerDivide:
            guard b != 0 else { throw .divisionByZero }
            (result, overflow) = a.dividedReportingOverflow(by: b)
            if op == .divide, !overflow, result &* b != a {
                return .double(Double(a) / Double(b))
            }
        case .remainder:
            guard b != 0 else { throw .divisionByZero }
            (result, overflow) = (b == -1 ? 0 : a % b, false)
        }
        guard !overflow else { throw .overflow }
        return .integer(result)
    }

    private static func apply(_ op: ArithmeticOperator, _ a: Double, _ b: Double) throws(ArithmeticFailure) -> Value {
        let result: Double
        switch op {
        case .add: result = a + b
        case .subtract: result = a - b
        case .multiply: result = a * b
        case .divide, .integerDivide, .remainder:
            guard b != 0 else { throw .divisionByZero }
            if op == .integerDivide {
                guard let quotient = Int64(exactly: (a / b).rounded(.towardZero)) else { throw .outOfRange }
                return .integer(quotient)
            }
            result = op == .divide ? a / b : a.truncatingRemainder(dividingBy: b)
        }
        guard result.isFinite else { throw .outOfRange }
        return .double(result)
    }
}

// MARK: - Comparison

extension Expression {
    /// How two comparable values are ordered; `unordered` only involves NaN.
    enum Order {
        case less, equal, greater, unordered
    }

    /// `==`: never fails; numbers compare exactly across integer and double, a
    /// boolean equals 1 or 0, strings compare by Unicode scalars, containers by
    /// structure with these same rules.
    static func equal(_ left: Value, _ right: Value) -> Bool {
        switch (left, right) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.integer(let a), .double(let b)): order(a, b) == .equal
        case (.double(let a), .integer(let b)): order(b, a) == .equal
        case (.bool(let a), .integer(let b)), (.integer(let b), .bool(let a)): b == (a ? 1 : 0)
        case (.bool(let a), .double(let b)), (.double(let b), .bool(let a)): b == (a ? 1 : 0)
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.blob(let a), .blob(let b)): a == b
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { equal($0, $1) }
        case (.object(let a), .object(let b)):
            a.count == b.count && a.allSatisfy { key, value in b[key].map { equal(value, $0) } ?? false }
        default: false
        }
    }

    /// The order of two numbers or two strings, `nil` for anything else.
    static func order(_ left: Value, _ right: Value) -> Order? {
        switch (left, right) {
        case (.integer(let a), .integer(let b)): a < b ? .less : a > b ? .greater : .equal
        case (.integer(let a), .double(let b)): order(a, b)
        case (.double(let a), .integer(let b)): reversed(order(b, a))
        case (.double(let a), .double(let b)): a < b ? .less : a > b ? .greater : a == b ? .equal : .unordered
        case (.string(let a), .string(let b)): order(a, b)
        default: nil
        }
    }

    /// An integer against a double, exactly: no rounding of either side.
    static func order(_ integer: Int64, _ double: Double) -> Order {
        if double.isNaN { return .unordered }
        if double >= 0x1p63 { return .less }
        if double < -0x1p63 { return .greater }
        let whole = double.rounded(.towardZero)
        let truncated = Int64(whole)
        if integer != truncated { return integer < truncated ? .less : .greater }
        return double > whole ? .less : double < whole ? .greater : .equal
    }

    /// Strings by Unicode scalar values, which UTF-8 byte order preserves.
    static func order(_ left: String, _ right: String) -> Order {
        var rightBytes = right.utf8.makeIterator()
        for byte in left.utf8 {
            guard let other = rightBytes.next() else { return .greater }
            if byte != other { return byte < other ? .less : .greater }
        }
        return rightBytes.next() == nil ? .equal : .less
    }

    private static func reversed(_ order: Order) -> Order {
        switch order {
        case .less: .greater
        case .greater: .less
        case .equal, .unordered: order
        }
    }
}
