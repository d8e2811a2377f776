import SQLiteDatabase
import CSQLite
import DAODialect
import DAOValue

/// Reads a select's rows as its `result` type.
///
/// Without brackets one row is read, and no row gives nil; with brackets,
/// every row. Scalars take the first column and convert it only when the
/// conversion is exact (a REAL 3.0 is the integer 3, the TEXT '12' is 12; a
/// REAL 3.5 or the TEXT 'abc' is an error, never a guess). `int` must fit in
/// 32 bits: a larger value is an error rather than the reference's silent
/// overflow. Objects map column names to values by their SQLite storage
/// class, but for columns declared boolean (`declaredTypeIsBoolean`), read
/// as a `bool` result is; `AType` and `:AMap` objects decrypt their class's
/// `crypt` properties.
struct ResultReader {
    let module: Module
    let method: String
    let line: Int
    let cipher: Cipher?

    func read(_ statement: Statement, as type: ResultType) throws(EngineError) -> Value {
        if case .array(let element) = type {
            var rows: [Value] = []
            guard try step(statement) else { return .array(rows) }
            // The keys and boolean columns are the same for every row: found once, after the first step
            // (which recompiles the statement if the schema changed).
            let layout = try layout(statement, for: element)
            repeat { rows.append(try row(statement, as: element, layout)) } while try step(statement)
            return .array(rows)
        }
        guard try step(statement) else { return .null }
        return try row(statement, as: type, layout(statement, for: type))
    }

    private func step(_ statement: Statement) throws(EngineError) -> Bool {
        do {
            return try statement.step()
        } catch {
            throw EngineError(error, method: method, line: line, file: module.file)
        }
    }

    /// The keys of an object row (the column names, renamed by a map) and its boolean columns.
    private struct Layout {
        var keys: [String]
        var booleans: [Bool]
    }

    private func layout(_ statement: Statement, for type: ResultType) throws(EngineError) -> Layout? {
        switch type {
        case .row, .object:
            let columns = statement.columns
            return Layout(keys: columns.names, booleans: columns.booleans)
        case .mapped(let mapID):
            guard let map = module.maps[mapID] else { throw failure("map '\(mapID)' is not defined") }
            let columns = statement.columns
            return Layout(keys: columns.names.map { map.propertyForColumn[$0] ?? $0 }, booleans: columns.booleans)
        case .scalar, .array:
            return nil
        }
    }

    private func row(_ statement: Statement, as type: ResultType, _ layout: Layout?) throws(EngineError) -> Value {
        switch type {
        case .scalar(let scalar):
            guard statement.columnCount > 0 else { throw failure("the statement returns no column") }
            return try value(statement, 0, as: scalar)
        case .row:
            return .object(try columns(statement, layout!))
        case .object(let className):
            return .object(try decrypted(columns(statement, layout!), className: className))
        case .mapped(let mapID):
            guard let map = module.maps[mapID] else { throw failure("map '\(mapID)' is not defined") }
            return .object(try decrypted(columns(statement, layout!), className: map.className, map: map))
        case .array:
            throw failure("a result cannot be an array of arrays")
        }
    }

    /// Key → value; a key repeated in the row keeps the last value.
    private func columns(_ statement: Statement, _ layout: Layout) throws(EngineError) -> OrderedObject {
        var object = OrderedObject()
        object.reserveCapacity(layout.keys.count)
        for index in layout.keys.indices {
            object[layout.keys[index]] = try cell(statement, index, boolean: layout.booleans[index])
        }
        return object
    }

    /// A column of an object row: by its storage class, or in a column
    /// declared boolean as a `bool` result reads it (a BLOB there stays one:
    /// a `crypt` property's ciphertext).
    @inline(__always)
    private func cell(_ statement: Statement, _ index: Int, boolean: Bool) throws(EngineError) -> Value {
        guard boolean, statement.columnType(index) != SQLITE_BLOB else { return statement.value(at: index) }
        return try value(statement, index, as: .bool)
    }

    /// `object` with its class's `crypt` properties decrypted.
    ///
    /// A value is encrypted under the name of the property that wrote it. The
    /// reference's decryption needs only the key, so a value any `crypt`
    /// property of the module wrote reads back into any other: a `<map>` may
    /// rename the column (`<result property="text" column="s"/>`), and the
    /// row may have been written as another class. The property read is
    /// tried first, then the column it comes from, then the module's other
    /// `crypt` properties; a value none of them authenticates is an error.
    private func decrypted(_ object: OrderedObject, className: String, map: ResultMap? = nil) throws(EngineError) -> OrderedObject {
        guard let properties = module.encryptedProperties[className] else { return object }
        var object = object
        for property in properties {
            guard let stored = object[property] else { continue }
            switch stored {
            case .null:
                continue
            case .blob(let bytes):
                guard let cipher else { throw EngineError(.encryption, "no encryption key is configured", method: method, line: line) }
                do {
                    object[property] = try cipher.decrypt(bytes, context: property)
                } catch where error.kind == .keyMissing {
                    throw EngineError(error, "cannot decrypt \(className).\(property)", method: method, line: line)
                } catch where error.kind == .notCiphertext {
                    // Written before the property was declared `crypt`: read as it is until `daogate rekey` encrypts it.
                    continue
                } catch where error.kind == .authenticationFailed {
                    let column = map?.propertyForColumn.first { $0.value == property }?.key
                    let others = ([column].compactMap(\.self) + module.encryptedProperties.values.flatMap(\.self).sorted())
                        .filter { $0 != property }
                    guard let value = others.lazy.compactMap({ try? cipher.decrypt(bytes, context: $0) }).first else {
                        throw EngineError(.encryption, "cannot decrypt \(className).\(property): \(error.message)", method: method, line: line)
                    }
                    object[property] = value
                } catch {
                    throw EngineError(.encryption, "cannot decrypt \(className).\(property): \(error.message)", method: method, line: line)
                }
            default:
                // Plaintext written before the property was declared `crypt`: read as it is until `daogate rekey` encrypts it.
                continue
            }
        }
        return object
    }

    private func value(_ statement: Statement, _ index: Int, as scalar: ScalarType) throws(EngineError) -> Value {
        let storage = statement.columnType(index)
        if storage == SQLITE_NULL { return .null }
        switch scalar {
        case .int, .longLong:
            let integer: Int64
            switch storage {
            case SQLITE_INTEGER:
                integer = statement.int64(at: index)
            case SQLITE_FLOAT:
                let double = statement.double(at: index)
                guard let exact = Int64(exactly: double) else { throw conversion(statement, index, "\(double)", scalar) }
                integer = exact
            case SQLITE_TEXT:
                let text = statement.string(at: index)
                guard let parsed = Int64(text) else { throw conversion(statement, index, "'\(text.prefix(40))'", scalar) }
                integer = parsed
            default:
                throw conversion(statement, index, "binary data", scalar)
            }
            if scalar == .int && !(Int64(Int32.min)...Int64(Int32.max) ~= integer) {
                throw failure("\(integer) in column \(statement.columnName(index)) does not fit the 32-bit int result; declare the result long long")
            }
            return .integer(integer)
        case .bool:
            switch storage {
            case SQLITE_INTEGER: return .bool(statement.int64(at: index) != 0)
            case SQLITE_FLOAT: return .bool(statement.double(at: index) != 0)
            case SQLITE_TEXT:
                switch statement.string(at: index).lowercased() {
                case "1", "true", "yes": return .bool(true)
                case "0", "false", "no": return .bool(false)
                case let text: throw conversion(statement, index, "'\(text.prefix(40))'", scalar)
                }
            default:
                throw conversion(statement, index, "binary data", scalar)
            }
        case .double:
            switch storage {
            case SQLITE_INTEGER: return .double(Double(statement.int64(at: index)))
            case SQLITE_FLOAT: return .double(statement.double(at: index))
            case SQLITE_TEXT:
                let text = statement.string(at: index)
                guard let parsed = Double(text), parsed.isFinite else { throw conversion(statement, index, "'\(text.prefix(40))'", scalar) }
                return .double(parsed)
            default:
                throw conversion(statement, index, "binary data", scalar)
            }
        case .string:
            if storage == SQLITE_BLOB {
                guard let text = String(validating: statement.bytes(at: index), as: UTF8.self) else {
                    throw conversion(statement, index, "binary data that is not UTF-8 text", scalar)
                }
                return .string(text)
            }
            return .string(statement.string(at: index))
        case .binary:
            return .blob(statement.bytes(at: index))
        }
    }

    private func conversion(_ statement: Statement, _ index: Int, _ shown: String, _ scalar: ScalarType) -> EngineError {
        failure("\(shown) in column \(statement.columnName(index)) cannot be read as the method's \(scalar.rawValue) result")
    }

    private func failure(_ message: String) -> EngineError {
        EngineError(.resultConversion, message, method: method, line: line)
    }
}
