import DAODialect
import DAOValue
import Testing

// MARK: - Helpers

/// A parsed, bound expression with the frame it runs in: `arguments` become
/// locals in name order, `globals` are globals; other names are unknown.
private func prepare(
    _ source: String, _ arguments: [String: Value] = [:], globals: [String: Value] = [:]
) throws -> (Expression, Frame) {
    let names = arguments.keys.sorted()
    let expression = try Expression.parse(source).bound { name in
        if let index = names.firstIndex(of: name) { return .local(index) }
        return globals.keys.contains(name) ? .global(name) : nil
    }
    return (expression, Frame(locals: names.map { arguments[$0]! }, globals: globals))
}

private func evaluate(_ source: String, _ arguments: [String: Value] = [:]) throws -> Value {
    let (expression, frame) = try prepare(source, arguments)
    return try expression.evaluate(in: frame)
}

private func holds(_ source: String, _ arguments: [String: Value] = [:]) throws -> Bool {
    let (expression, frame) = try prepare(source, arguments)
    return try expression.holds(in: frame)
}

private func syntaxError(_ source: String) -> ExpressionSyntaxError? {
    #expect(throws: ExpressionSyntaxError.self) { try Expression.parse(source) }
}

private func evaluationError(_ source: String, _ arguments: [String: Value] = [:]) -> EvaluationError? {
    #expect(throws: EvaluationError.self) { try evaluate(source, arguments) }
}

// MARK: - Precedence and associativity

@Test(arguments: [
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("10 - 4 - 3", 3),
    ("100 / 10 / 5", 2),
    (#"7 \ 2 * 2"#, 6),
    (#"2 * 3 \ 4"#, 1),
    ("2 * 7 % 4", 2),
    ("-2 * 3", -6),
    ("- 2 + 3", 1),
    ("-(2 + 3)", -5),
    ("--2", 2),
    ("2 - -2", 4),
    ("2 * -3", -6),
    ("+2 - +3", -1),
] as [(String, Value)])
func arithmeticPrecedenceAndLeftAssociativity(source: String, expected: Value) throws {
    #expect(try evaluate(source) == expected)
}

@Test(arguments: [
    ("true or false and false", true),  // and binds tighter than or
    ("false and true or true", true),
    ("true xor true or true", true),  // xor binds tighter than or
    ("true or true xor true", true),
    ("true xor true and false", true),  // and binds tighter than xor
    ("false and true xor true", true),
    ("not false and false", false),  // not binds tighter than and
    ("not 1 == 2", true),  // not binds looser than comparisons
    ("not 1 + 1 == 3", true),
    ("not not true", true),
    ("not true or true", true),
    ("true xor true xor true", true),  // left-associative, same either way
    ("1 + 2 == 3", true),  // arithmetic binds tighter than comparisons
    ("1 + 2 < 2 * 2", true),
    ("1 == 1 and 2 == 2", true),
    ("(1)or(0)", true),
    ("1>=2", false),
    ("1+2*3==7", true),
    ("not(1>2)and(2>1)", true),
] as [(String, Bool)])
func logicalPrecedence(source: String, expected: Bool) throws {
    #expect(try evaluate(source) == .bool(expected))
}

// MARK: - Arithmetic

@Test(arguments: [
    ("2 + 3", 5),
    ("2 + 1.5", 3.5),
    ("1.5 + 2", 3.5),
    ("1.5 + 1.5", .double(3)),
    ("'ab' + 'cd'", "abcd"),
    ("7 - 10", -3),
    ("2.5 - 1", 1.5),
    ("6 * 7", 42),
    ("1.5 * 2", .double(3)),
    ("7 / 2", 3.5),
    ("-7 / 2", -3.5),
    ("6 / 2", .integer(3)),
    ("6.0 / 2", .double(3)),
    ("1 / 4", 0.25),
    (#"7 \ 2"#, 3),
    (#"-7 \ 2"#, -3),
    (#"7 \ -2"#, -3),
    (#"7.5 \ 2"#, .integer(3)),
    (#"-7.5 \ 2"#, .integer(-3)),
    ("7 % 3", 1),
    ("-7 % 3", -1),
    ("7 % -3", 1),
    ("7.5 % 2", 1.5),
    ("-7.5 % 2", -1.5),
    ("-9223372036854775808", .integer(.min)),
    ("-9223372036854775808 % -1", 0),
    ("9223372036854775807", .integer(.max)),
    ("007", 7),
] as [(String, Value)])
func arithmeticOnNumbersAndStrings(source: String, expected: Value) throws {
    #expect(try evaluate(source) == expected)
}

@Test(arguments: [
    (5, "-x", -5),
    (5, "+x", 5),
    (1.5, "-x", -1.5),
    (1.5, "+x", 1.5),
    (4, "x * x - x", 12),
    ([1, 2], "-x.count", -2),
] as [(Value, String, Value)])
func arithmeticOnArguments(x: Value, source: String, expected: Value) throws {
    #expect(try evaluate(source, ["x": x]) == expected)
}

@Test(arguments: [
    ("x - 1", nil, "cannot apply '-' to nil and integer in 'x - 1'", "x"),
    ("x + 1", "a", "cannot apply '+' to string and integer in 'x + 1'", "x"),
    ("x * 2", [1], "cannot apply '*' to array and integer in 'x * 2'", "x"),
    ("x / 2", ["a": 1], "cannot apply '/' to object and integer in 'x / 2'", "x"),
    ("x - 'a'", "b", "cannot apply '-' to string and string in 'x - 'a''", "x"),
    ("x + 1", true, "cannot apply '+' to boolean and integer in 'x + 1'", "x"),
    ("1 + x", .blob([1]), "cannot apply '+' to integer and binary in '1 + x'", "x"),
    ("-x", "a", "cannot apply '-' to string in '-x'", "x"),
    ("+x", true, "cannot apply '+' to boolean in '+x'", "x"),
    ("x + 'a'", 1, "cannot apply '+' to integer and string in 'x + 'a''", "x"),
    ("2 * (x + 1)", nil, "cannot apply '+' to nil and integer in 'x + 1'", "x"),
] as [(String, Value, String, String)])
func arithmeticOnOtherKindsIsAnErrorNamingTheOperandKinds(
    source: String, x: Value, message: String, name: String
) {
    let error = evaluationError(source, ["x": x])
    #expect(error?.message == message)
    #expect(error?.name == name)
}

@Test func arithmeticErrorsBlameTheNameHoldingTheWrongKind() {
    #expect(evaluationError("x + y", ["x": 1, "y": nil])?.name == "y")
    #expect(evaluationError("true - 1")?.name == nil)
}

@Test(arguments: [
    ("9223372036854775807 + 1", [:], "integer overflow in '9223372036854775807 + 1'"),
    ("-9223372036854775808 - 1", [:], "integer overflow in '-9223372036854775808 - 1'"),
    ("x * 2", ["x": .integer(.max)], "integer overflow in 'x * 2'"),
    ("-x", ["x": .integer(.min)], "integer overflow in '-x'"),
    ("x / -1", ["x": .integer(.min)], "integer overflow in 'x / -1'"),
    (#"x \ -1"#, ["x": .integer(.min)], #"integer overflow in 'x \ -1'"#),
    ("1 / 0", [:], "division by zero in '1 / 0'"),
    (#"1 \ 0"#, [:], #"division by zero in '1 \ 0'"#),
    ("1 % 0", [:], "division by zero in '1 % 0'"),
    ("1.5 / 0", [:], "division by zero in '1.5 / 0'"),
    ("1 / 0.0", [:], "division by zero in '1 / 0.0'"),
    ("1 % x", ["x": -0.0], "division by zero in '1 % x'"),
    ("x * x", ["x": 1e300], "the result of '*' is out of range in 'x * x'"),
    (#"x \ 0.5"#, ["x": 1e300], #"the result of '\' is out of range in 'x \ 0.5'"#),
] as [(String, [String: Value], String)])
func overflowAndDivisionByZeroAreErrors(source: String, arguments: [String: Value], message: String) {
    #expect(evaluationError(source, arguments)?.message == message)
}

// MARK: - Equality

@Test(arguments: [
    (nil, nil, true),
    (nil, 0, false),
    (nil, false, false),
    (nil, "", false),
    (nil, [], false),
    (1, 1, true),
    (1, 2, false),
    (1, 1.0, true),
    (1, 1.5, false),
    (0.5, 0.5, true),
    (9_007_199_254_740_993, 9_007_199_254_740_992.0, false),
    (9_007_199_254_740_992, 9_007_199_254_740_992.0, true),
    (.integer(.max), 9_223_372_036_854_775_808.0, false),
    (.integer(.min), -9_223_372_036_854_775_808.0, true),
    (true, true, true),
    (true, false, false),
    (true, 1, true),
    (true, 2, false),
    (false, 0, true),
    (false, 0.0, true),
    (true, 1.0, true),
    (true, "true", false),
    ("a", "a", true),
    ("a", "A", false),
    ("\u{E9}", "e\u{301}", false),  // é precomposed and decomposed: different scalars
    ("1", 1, false),
    ([1, 2], [1, 2], true),
    ([1], [1.0], true),
    ([1, 2], [2, 1], false),
    ([1, 2], [1], false),
    (["a": 1, "b": 2], ["b": 2, "a": 1], true),
    (["a": 1], ["a": 1, "b": nil], false),
    (["a": [1]], ["a": [1.0]], true),
    (.blob([1, 2]), .blob([1, 2]), true),
    (.blob([1, 2]), .blob([1]), false),
    (.blob([97]), "a", false),
    ([], [:], false),
] as [(Value, Value, Bool)])
func equalityNeverFailsAndComparesNumbersExactly(a: Value, b: Value, equal: Bool) throws {
    #expect(try evaluate("a == b", ["a": a, "b": b]) == .bool(equal))
    #expect(try evaluate("b == a", ["a": a, "b": b]) == .bool(equal))
    #expect(try evaluate("a != b", ["a": a, "b": b]) == .bool(!equal))
}

// MARK: - Ordering

@Test(arguments: [
    (1, "<", 2, true),
    (2, "<=", 2, true),
    (3, ">", 2, true),
    (2, ">=", 3, false),
    (1, "<", 1.5, true),
    (2, ">", 1.5, true),
    (1.5, "<", 2, true),
    (-3, ">", -3.5, true),
    (-3.5, "<", -3, true),
    (2, ">=", 2.0, true),
    (2, "<", 2.0, false),
    (9_007_199_254_740_993, ">", 9_007_199_254_740_992.0, true),
    (9_007_199_254_740_992.0, "<", 9_007_199_254_740_993, true),
    (.integer(.max), "<", 9_223_372_036_854_775_808.0, true),
    (.integer(.min), ">=", -9_223_372_036_854_775_808.0, true),
    (.integer(.min), ">", -1e300, true),
    ("a", "<", "b", true),
    ("B", "<", "a", true),
    ("ab", ">", "a", true),
    ("", "<", "a", true),
    ("a", "<=", "a", true),
    ("\u{E9}", ">", "z", true),
    ("\u{FFFF}", "<", "\u{10000}", true),  // scalar order, not UTF-16 order
    (nil, "<", 1, false),
    (nil, ">=", 1, false),
    (1, ">", nil, false),
    (nil, "<=", nil, false),
    (nil, "<", "a", false),
    (nil, ">", [1], false),
] as [(Value, String, Value, Bool)])
func orderingComparesNumbersAndStringsAndIsFalseWithNil(a: Value, op: String, b: Value, expected: Bool) throws {
    #expect(try evaluate("a \(op) b", ["a": a, "b": b]) == .bool(expected))
}

@Test(arguments: [
    ("a > 3", "x", "cannot compare string with integer in 'a > 3'", "a"),
    ("3 <= a", "x", "cannot compare integer with string in '3 <= a'", "a"),
    ("a < 1.5", true, "cannot compare boolean with number in 'a < 1.5'", "a"),
    ("a >= a", [1], "cannot compare array with array in 'a >= a'", "a"),
    ("a < 'x'", ["b": 1], "cannot compare object with string in 'a < 'x''", "a"),
    ("a > 'x'", 1, "cannot compare integer with string in 'a > 'x''", "a"),
] as [(String, Value, String, String)])
func orderingOtherKindsIsAnError(source: String, a: Value, message: String, name: String) {
    let error = evaluationError(source, ["a": a])
    #expect(error?.message == message)
    #expect(error?.name == name)
}

// MARK: - Truth and logic

@Test(arguments: [
    (nil, false),
    (true, true),
    (false, false),
    (0, false),
    (5, true),
    (-1, true),
    (0.0, false),
    (-0.0, false),
    (0.5, true),
] as [(Value, Bool)])
func truthOfNilBooleansAndNumbers(x: Value, expected: Bool) throws {
    #expect(try holds("x", ["x": x]) == expected)
    #expect(try evaluate("not x", ["x": x]) == .bool(!expected))
}

@Test(arguments: [
    ("s", "expected a condition, got a string ('x'): compare it, as in 'x != nil'"),
    ([1], "expected a condition, got an array ('x'): compare it, as in 'x.count > 0'"),
    (["a": 1], "expected a condition, got an object ('x'): compare it, as in 'x.count > 0'"),
    (.blob([1]), "expected a condition, got binary data ('x'): compare it, as in 'x != nil'"),
] as [(Value, String)])
func otherValuesAreNotConditions(x: Value, message: String) {
    for source in ["x", "not x", "x and true", "true and x", "false or x", "x xor true"] {
        let error = #expect(throws: EvaluationError.self) { try holds(source, ["x": x]) }
        #expect(error?.message == message)
        #expect(error?.name == "x")
    }
}

@Test func anUnnamedNonConditionNamesTheWholeExpression() {
    let error = evaluationError("'a' + 'b' or true")
    #expect(error?.message == "expected a condition, got a string in ''a' + 'b' or true'")
    #expect(error?.name == nil)
}

@Test(arguments: [
    ("1 and 2", true),
    ("0 or nil", false),
    ("2 xor 0", true),
    ("2 xor 1", false),
    ("not 0", true),
    ("not nil", true),
    ("1.5 and -1", true),
] as [(String, Bool)])
func logicalOperatorsGiveBooleans(source: String, expected: Bool) throws {
    #expect(try evaluate(source) == .bool(expected))
}

@Test(arguments: [
    ("false and x > 1", false),
    ("true or x > 1", true),
    ("nil and x", false),
    ("1 or x", true),
] as [(String, Bool)])
func andOrShortCircuit(source: String, expected: Bool) throws {
    #expect(try holds(source, ["x": "not a number"]) == expected)
}

@Test(arguments: ["x > 1 and false", "false or x > 1", "true xor x > 1", "x > 1 xor true"])
func xorAndTheEvaluatedSideStillFail(source: String) {
    #expect(evaluationError(source, ["x": "not a number"])?.message == "cannot compare string with integer in 'x > 1'")
}

// MARK: - The reference's examples

@Test(arguments: [
    (["read": true], true, true),
    (["read": false], true, false),
    (["read": false], false, true),
    (["read": 1], true, true),
    (["read": 0], true, false),
    ([:], true, false),
    (nil, true, false),
] as [(Value, Value, Bool)])
func modelReadOrNotOnlyRead(model: Value, onlyRead: Value, expected: Bool) throws {
    #expect(try holds("model.read or (not onlyRead)", ["model": model, "onlyRead": onlyRead]) == expected)
}

@Test(arguments: [
    ("Swift", 2011, [], true),
    ("Swift", 2010, [], false),
    (nil, 2011, ["Ann"], false),
    (nil, 2000, ["Ann", "Bob"], true),
    ("Swift", nil, ["Ann"], false),
    (nil, nil, nil, false),
    ("Swift", 2010.5, nil, true),
] as [(Value, Value, Value, Bool)])
func titleYearAuthors(title: Value, year: Value, authors: Value, expected: Bool) throws {
    let source = "(title != nil and year > 2010) or authors.count >= 2"
    #expect(try holds(source, ["title": title, "year": year, "authors": authors]) == expected)
}

@Test(arguments: [
    (nil, false),
    ([:], false),
    (["name": nil], false),
    (["name": "Ann"], true),
] as [(Value, Bool)])
func authorAndAuthorName(author: Value, expected: Bool) throws {
    #expect(try holds("author != nil and author.name != nil", ["author": author]) == expected)
}

/// The examples table of docs/expressions.md.
@Test(arguments: [
    ("price * quantity >= 100", ["price": 12.5, "quantity": 8], true),
    ("page % 2 == 0 xor reverse", ["page": 3, "reverse": true], true),
    ("state == 'open'", ["state": nil], false),
    ("year > 2010 or year <= 2010", ["year": nil], false),
] as [(String, [String: Value], Bool)])
func documentedExamples(source: String, arguments: [String: Value], expected: Bool) throws {
    #expect(try holds(source, arguments) == expected)
}

// MARK: - Names and chained access

@Test func namesAreTheRootNamesRead() throws {
    #expect(try Expression.parse("(title != nil and year > 2010) or authors.count >= 2").names
        == ["title", "year", "authors"])
    #expect(try Expression.parse("model.read or (not onlyRead)").names == ["model", "onlyRead"])
    #expect(try Expression.parse("NIL == x and TRUE").names == ["x"])
    #expect(try Expression.parse("1 + 2").names == [])
}

@Test func bindingAnUnknownNameIsASyntaxErrorAtItsColumn() throws {
    let expression = try Expression.parse("a and (b.c or a)")
    let error = #expect(throws: ExpressionSyntaxError.self) {
        try expression.bound { $0 == "a" ? .local(0) : nil }
    }
    #expect(error == ExpressionSyntaxError("unknown name 'b'", column: 8))
}

@Test func namesAreCaseSensitive() throws {
    let expression = try Expression.parse("Title != nil")
    #expect(throws: ExpressionSyntaxError("unknown name 'Title'", column: 1)) {
        try expression.bound { $0 == "title" ? .local(0) : nil }
    }
}

@Test func globalsAreReadByNameAndAbsentOnesAreNil() throws {
    let (expression, frame) = try prepare("g.n == 2 and h == nil", ["x": 1], globals: ["g": ["n": 2], "h": nil])
    #expect(try expression.holds(in: frame))
    let missing = Frame(locals: [1], globals: ["g": ["n": 2]])
    #expect(try expression.holds(in: missing))
}

@Test func rebindingMovesNamesToNewSlots() throws {
    let first = try Expression.parse("a - b").bound { $0 == "a" ? .local(0) : .local(1) }
    let second = try first.bound { $0 == "a" ? .local(1) : .local(0) }
    let frame = Frame(locals: [10, 3])
    #expect(try first.evaluate(in: frame) == 7)
    #expect(try second.evaluate(in: frame) == -7)
}

@Test func anExpressionWithoutNamesEvaluatesUnbound() throws {
    #expect(try Expression.parse("1 + 1 == 2").holds(in: Frame(locals: [])))
}

@Test(arguments: [
    ("a.count", [1, 2, 3], 3),
    ("a.count", ["x": 1, "y": 2], 2),
    ("a.count", ["count": "own"], "own"),
    ("a.b.c", ["b": ["c": 7]], 7),
    ("a.b.c", ["b": nil], nil),
    ("a.missing.deeper", [:], nil),
    ("a.x", nil, nil),
    ("a.and", ["and": 1], 1),
    ("a.NIL", ["NIL": 2], 2),
] as [(String, Value, Value)])
func chainedAccessFollowsMemberRules(source: String, a: Value, expected: Value) throws {
    #expect(try evaluate(source, ["a": a]) == expected)
}

@Test(arguments: [
    ("a.name == 1", "s", "a: a string has no property 'name' in 'a.name == 1'", "a.name"),
    ("a.first", [1], "a: an array has no property 'first' (only 'count') in 'a.first'", "a.first"),
    ("a.b.c != nil", ["b": true], "a.b: a boolean has no property 'c' in 'a.b.c != nil'", "a.b.c"),
] as [(String, Value, String, String)])
func propertiesOfScalarsAreErrorsNamingThePath(source: String, a: Value, message: String, name: String) {
    let error = evaluationError(source, ["a": a])
    #expect(error?.message == message)
    #expect(error?.name == name)
}

// MARK: - Lexing

@Test(arguments: [
    ("TRUE AND Not FALSE", true),
    ("nil == NIL", true),
    ("1 Or 0", true),
    ("true XoR true", false),
    ("False oR tRUE", true),
] as [(String, Bool)])
func keywordsAreCaseInsensitive(source: String, expected: Bool) throws {
    #expect(try evaluate(source) == .bool(expected))
}

@Test(arguments: [
    (#"'it\'s'"#, "it's"),
    (#"'a\b'"#, #"a\b"#),
    (#"'a\\b'"#, #"a\\b"#),
    (#"'\n'"#, #"\n"#),
    (#"''"#, ""),
    (#"'say "hi"'"#, #"say "hi""#),
    (#"'  spaced  '"#, "  spaced  "),
    ("'\u{E9}t\u{E9}'", "\u{E9}t\u{E9}"),
    (#"'\'\''"#, "''"),
] as [(String, String)])
func stringsEscapeOnlyTheQuote(source: String, expected: String) throws {
    #expect(try evaluate(source) == .string(expected))
}

@Test func whitespaceOfAnyKindSeparatesTokens() throws {
    #expect(try evaluate("\t1\n+\r\n2 ") == 3)
}

// MARK: - Syntax errors

@Test(arguments: [
    ("", 1, "the condition is empty"),
    ("   ", 4, "the condition is empty"),
    ("a = 1", 3, "'=' is not an operator: use '==' to compare"),
    ("a => 1", 3, "'=>' is not an operator: use '>='"),
    ("a =< 1", 3, "'=<' is not an operator: use '<='"),
    ("a <> 1", 3, "'<>' is not an operator: use '!='"),
    ("a && b", 3, "'&&' is not an operator: use 'and'"),
    ("a & b", 3, "'&' is not an operator: use 'and'"),
    ("a || b", 3, "'||' is not an operator: use 'or'"),
    ("!a", 1, "'!' is not an operator: use 'not'"),
    ("a ^ b", 3, "'^' is not an operator: use 'xor' for exclusive or"),
    ("a # b", 3, "unexpected character '#'"),
    ("\u{E9} == 1", 1, "unexpected character '\u{E9}'"),
    ("\"a\" == a", 1, "strings are written in single quotes, as in 'text'"),
    ("#{a} == 1", 1, "write argument names without '#{…}' in a condition"),
    ("@{a} == 1", 1, "write argument names without '@{…}' in a condition"),
    ("a == 'abc", 6, "unterminated string: no closing quote for the string that starts here"),
    (#"a == 'abc\'"#, 6, "unterminated string: no closing quote for the string that starts here"),
    ("9223372036854775808", 1, "the integer 9223372036854775808 does not fit in 64 bits"),
    ("a + 99999999999999999999", 5, "the integer 99999999999999999999 does not fit in 64 bits"),
    ("-9223372036854775809", 2, "the integer 9223372036854775809 does not fit in 64 bits"),
    ("a..b", 3, "expected a property name after '.', found '.'"),
    ("a.1", 3, "expected a property name after '.', found '1'"),
    ("a.", 3, "expected a property name after '.', found the end of the condition"),
    ("(a).b", 4, "a property can only be read from a name, as in 'model.read'"),
    ("1.x", 2, "a property can only be read from a name, as in 'model.read'"),
    (".5", 1, "a decimal needs a digit before the point, as in '0.5'"),
    ("a +", 4, "expected a value after '+', found the end of the condition"),
    ("a and", 6, "expected a value after 'and', found the end of the condition"),
    ("not", 4, "expected a value after 'not', found the end of the condition"),
    ("1 + * 2", 5, "expected a value after '+', found '*'"),
    ("and a", 1, "expected a value, found 'and'"),
    ("== 1", 1, "expected a value, found '=='"),
    ("()", 2, "expected a value after '(', found ')'"),
    ("(a", 3, "expected ')' to close '(' at column 1"),
    ("x and ((a or b)", 16, "expected ')' to close '(' at column 7"),
    ("(a b)", 4, "expected an operator or ')' after 'a', found 'b'"),
    ("a)", 2, "unmatched ')'"),
    ("a b", 3, "expected an operator after 'a', found 'b'"),
    ("(x)ory", 4, "expected an operator after ')', found 'ory'"),
    ("1e5", 2, "expected an operator after '1', found 'e5'"),
    ("a < b < c", 7, "comparisons cannot be chained: combine them with 'and', as in 'a < b and b < c'"),
    ("a == b != c", 8, "comparisons cannot be chained: combine them with 'and', as in 'a == b and b != c'"),
    ("a == not b", 6, "'not' needs parentheses here, as in 'a == (not b)'"),
    ("1 + not b", 5, "'not' needs parentheses here, as in 'a == (not b)'"),
] as [(String, Int, String)])
func syntaxErrorsSayWhatAndWhere(source: String, column: Int, message: String) {
    #expect(syntaxError(source) == ExpressionSyntaxError(message, column: column))
}

@Test func columnsCountCharactersNotScalars() {
    #expect(syntaxError("'e\u{301}' = 1")?.column == 5)
    #expect(syntaxError("'\u{1F600}' = 1")?.column == 5)
}

@Test func aBackslashBeforeTheClosingQuoteEscapesIt() {
    #expect(syntaxError(#"'C:\'"#)?.message.hasPrefix("unterminated string") == true)
}

@Test func errorDescriptionsCarryTheirContext() {
    #expect(ExpressionSyntaxError("unmatched ')'", column: 2).description == "column 2: unmatched ')'")
    #expect(EvaluationError("division by zero in '1 / 0'").description == "division by zero in '1 / 0'")
}
