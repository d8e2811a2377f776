import ASCIIBytes
import CLibXML2

/// A module file's XML as a small tree with line numbers, read through libxml2.
///
/// The parser runs with network access off, no entity substitution and no DTD
/// loading; a document that declares a DOCTYPE or uses an entity other than
/// the five predefined ones is refused, so a module file can neither read
/// other files nor reach the network nor expand itself exponentially.
struct XMLElement: Sendable {
    var name: String
    var line: Int
    /// Attributes in document order.
    var attributes: [(name: String, value: String)]
    var children: [XMLNode]

    func attribute(_ name: String) -> String? {
        attributes.first { $0.name == name }?.value
    }
}

enum XMLNode: Sendable {
    case element(XMLElement)
    /// Character data (CDATA sections included) and the line it starts on.
    case text(String, line: Int)
    case comment(String, line: Int)
}

/// Why a file is not a usable XML document.
struct XMLError: Error, Sendable {
    var line: Int
    var message: String
}

enum XMLTree {
    /// Parses `bytes` into the root element.
    static func parse(_ bytes: [UInt8]) throws(XMLError) -> XMLElement {
        daogate_xml_silence_errors()
        let created = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { xmlCreateMemoryParserCtxt($0.baseAddress, Int32($0.count)) }
        }
        guard let context = created else {
            throw XMLError(line: 1, message: bytes.isEmpty ? "the file is empty" : "the XML parser could not start")
        }
        defer {
            if let document = context.pointee.myDoc { xmlFreeDoc(document) }
            xmlFreeParserCtxt(context)
        }
        _ = xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_BIG_LINES.rawValue | XML_PARSE_NOCDATA.rawValue))
        // Where elements end (libxml2 2.9 records end positions reliably, begin
        // positions not), so that text can be given the line it starts on.
        context.pointee.record_info = 1
        let status = xmlParseDocument(context)
        guard status == 0, context.pointee.wellFormed != 0, let document = context.pointee.myDoc else {
            if let error = xmlCtxtGetLastError(context) {
                throw XMLError(line: Int(error.pointee.line), message: describe(error.pointee))
            }
            throw XMLError(line: 1, message: "malformed XML")
        }
        if let subset = document.pointee.intSubset {
            let line = Int(subset.pointee.children.map { xmlGetLineNo($0) } ?? 1)
            throw XMLError(line: max(line, 1), message: "a DOCTYPE declaration is not allowed in a module file")
        }
        guard let root = xmlDocGetRootElement(document) else {
            throw XMLError(line: 1, message: "the document has no root element")
        }
        // Around the root element, as inside it, only comments may stand.
        var sibling = document.pointee.children
        while let current = sibling {
            if current.pointee.type == XML_PI_NODE {
                throw XMLError(line: max(Int(xmlGetLineNo(current)), 1), message: processingInstruction)
            }
            sibling = current.pointee.next
        }
        var builder = Builder(bytes: bytes, context: context)
        return try builder.element(root, searchingFrom: 0)
    }

    static let processingInstruction = "processing instructions are not allowed in a module file"

    private static func describe(_ error: xmlError) -> String {
        var message = error.message.map { String(cString: $0) } ?? "malformed XML"
        while message.last?.isWhitespace == true { message.removeLast() }
        return "malformed XML: \(message)"
    }

    /// Builds the tree, following byte positions through the source to know
    /// where each text starts.
    private struct Builder {
        let bytes: [UInt8]
        let context: xmlParserCtxtPtr
        /// Offsets of the line feeds in `bytes`.
        let newlines: [Int]

        init(bytes: [UInt8], context: xmlParserCtxtPtr) {
            self.bytes = bytes
            self.context = context
            newlines = bytes.indices.filter { bytes[$0] == UInt8(ascii: "\n") }
        }

        /// The 1-based line of byte `offset`.
        func line(at offset: Int) -> Int {
            var low = 0
            var high = newlines.count
            while low < high {
                let middle = (low + high) / 2
                if newlines[middle] < offset { low = middle + 1 } else { high = middle }
            }
            return low + 1
        }

        /// Where `marker` next occurs from `offset`, or nil.
        func find(_ marker: String, from offset: Int) -> Int? {
            let marker = Array(marker.utf8)
            var index = offset
            while index + marker.count <= bytes.count {
                if bytes[index] == marker[0] && bytes[index..<(index + marker.count)].elementsEqual(marker) { return index }
                index += 1
            }
            return nil
        }

        /// The offset just after the next start tag at or after `offset`: the
        /// first `<` followed by a name (text holds no raw `<`; comments and
        /// CDATA sections have been stepped over by the caller).
        func endOfNextStartTag(from offset: Int) -> Int? {
            var index = offset
            while index + 1 < bytes.count {
                let next = bytes[index + 1]
                if bytes[index] == UInt8(ascii: "<") && (isASCIILetter(next) || next == UInt8(ascii: "_") || next == UInt8(ascii: ":")) {
                    break
                }
                index += 1
            }
            guard index + 1 < bytes.count else { return nil }
            var quote: UInt8?
            while index < bytes.count {
                let byte = bytes[index]
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: ">") {
                    return index + 1
                }
                index += 1
            }
            return nil
        }

        /// The element `node`, whose start tag is the next one from `offset`.
        mutating func element(_ node: xmlNodePtr, searchingFrom offset: Int?) throws(XMLError) -> XMLElement {
            let line = Int(xmlGetLineNo(node))
            var cursor = offset.flatMap(endOfNextStartTag)
            var name = String(cString: node.pointee.name)
            if let namespace = node.pointee.ns, let prefix = namespace.pointee.prefix {
                name = String(cString: prefix) + ":" + name
            }
            var attributes: [(name: String, value: String)] = []
            var attribute = node.pointee.properties
            while let current = attribute {
                let attributeName = String(cString: current.pointee.name)
                var value = ""
                var child = current.pointee.children
                while let part = child {
                    if part.pointee.type == XML_ENTITY_REF_NODE {
                        throw XMLError(line: line, message: "entity references are not allowed in a module file")
                    }
                    if let content = part.pointee.content { value += String(cString: content) }
                    child = part.pointee.next
                }
                attributes.append((attributeName, value))
                attribute = current.pointee.next
            }
            var children: [XMLNode] = []
            var child = node.pointee.children
            while let current = child {
                let fallbackLine = Int(xmlGetLineNo(current))
                switch current.pointee.type {
                case XML_ELEMENT_NODE:
                    children.append(.element(try element(current, searchingFrom: cursor)))
                    cursor = xmlParserFindNodeInfo(context, current).map { Int($0.pointee.end_pos) }
                case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                    let text = current.pointee.content.map { String(cString: $0) } ?? ""
                    let textLine = cursor.map { self.line(at: $0) } ?? fallbackLine
                    // Adjacent character data (text, then CDATA) reads as one text.
                    if case .text(let previous, let previousLine) = children.last {
                        children[children.count - 1] = .text(previous + text, line: previousLine)
                    } else {
                        children.append(.text(text, line: textLine))
                    }
                    if current.pointee.type == XML_CDATA_SECTION_NODE, let start = cursor {
                        cursor = find("]]>", from: start).map { $0 + 3 }
                    }
                case XML_COMMENT_NODE:
                    let text = current.pointee.content.map { String(cString: $0) } ?? ""
                    let start = cursor.flatMap { find("<!--", from: $0) }
                    children.append(.comment(text, line: start.map { self.line(at: $0) } ?? fallbackLine))
                    cursor = start.flatMap { find("-->", from: $0 + 4) }.map { $0 + 3 }
                case XML_ENTITY_REF_NODE:
                    throw XMLError(line: fallbackLine, message: "entity references are not allowed in a module file")
                case XML_PI_NODE:
                    throw XMLError(line: fallbackLine, message: XMLTree.processingInstruction)
                default:
                    throw XMLError(line: fallbackLine, message: "unexpected XML content")
                }
                child = current.pointee.next
            }
            return XMLElement(name: name, line: line, attributes: attributes, children: children)
        }
    }
}
