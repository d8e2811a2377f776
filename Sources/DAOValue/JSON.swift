/// Why JSON text was rejected, and where.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. `unexpected character 'x'` or `duplicate key "a"`.
    public var message: String
    /// The byte offset in the input where the problem is.
    public var offset: Int

    public init(_ message: String, at offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "\(message) at byte \(offset)" }
}

/// How `Value(parsingJSON:)` reads JSON.
public struct JSONParseOptions: Sendable {
    /// The deepest nesting of arrays and objects accepted; deeper input is an error.
    ///
    /// The parser recurses once per level, so this also bounds its stack use:
    /// hostile input such as 100,000 `[` is rejected rather than overflowing.
    public var maxDepth: Int = 256
    /// Whether an object that is exactly `{"$base64": "<standard padded base64>"}`
    /// becomes a `.blob`. Such an object whose value is not valid base64 is then an error.
    public var binaryMarkers: Bool = false

    public init(maxDepth: Int = 256, binaryMarkers: Bool = false) {
        self.maxDepth = maxDepth
        self.binaryMarkers = binaryMarkers
    }
}

/// How `Value.writeJSON(to:options:)` writes JSON.
public struct JSONWriteOptions: Sendable {
    /// Whether integers beyond ±(2^53 − 1), which a JavaScript number cannot hold
    /// exactly, are written as JSON strings of their digits.
    public var int64AsString: Bool = false

    public init(int64AsString: Bool = false) {
        self.int64AsString = int64AsString
    }
}
