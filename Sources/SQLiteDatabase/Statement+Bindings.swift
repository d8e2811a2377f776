import ASCIIBytes
import CSQLite
import DAOValue

extension Statement {
    /// Binds `values` to the statement's parameters, in order.
    ///
    /// `.null` → NULL, `.integer` → int64, `.double` → double, `.bool` → 1/0,
    /// `.string` → text, `.blob` → blob (an empty blob stays a blob, never
    /// NULL), `.array`/`.object` → their JSON text. SQLite copies text and
    /// blobs, so `values` need not outlive the call. A statement left mid-run
    /// is rewound first. Throws `SQLITE_RANGE` when the number of values is
    /// not the number of parameters.
    public func bind(_ values: [Value]) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(
                extendedCode: SQLITE_RANGE,
                message: "wrong number of bindings: the statement has \(expected) parameter\(expected == 1 ? "" : "s"), \(values.count) value\(values.count == 1 ? "" : "s") given",
                sql: sql)
        }
        rewindIfBusy()
        hasBindings = expected > 0
        var index: Int32 = 1
        for value in values {
            let code = bind(value, at: index)
            if code != SQLITE_OK {
                throw SQLiteError(resultCode: code, connection: sqlite3_db_handle(handle), sql: sql)
            }
            index += 1
        }
    }

    @inline(__always)
    private func bind(_ value: Value, at index: Int32) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(handle, index)
        case .integer(let integer):
            return sqlite3_bind_int64(handle, index, integer)
        case .double(let double):
            return sqlite3_bind_double(handle, index, double)
        case .bool(let bool):
            return sqlite3_bind_int64(handle, index, bool ? 1 : 0)
        case .string(let string):
            return withUTF8Bytes(of: string) { bindText($0, at: index) }
        case .blob(let bytes):
            if bytes.isEmpty { return sqlite3_bind_zeroblob(handle, index, 0) }
            return bytes.withUnsafeBytes { buffer in
                sqlite3_bind_blob64(handle, index, buffer.baseAddress, UInt64(buffer.count), daogate_sqlite_transient())
            }
        case .array, .object:
            return value.jsonBytes().withUnsafeBufferPointer { bindText($0, at: index) }
        }
    }

    /// Binds UTF-8 bytes as text; empty text stays text, never NULL.
    @inline(__always)
    private func bindText(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            return sqlite3_bind_text(handle, index, "", 0, daogate_sqlite_transient())
        }
        return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { text in
            sqlite3_bind_text64(handle, index, text, UInt64(bytes.count), daogate_sqlite_transient(), UInt8(SQLITE_UTF8))
        }
    }
}
