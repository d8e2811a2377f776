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

    var childElements: [XMLElement] {
        children.compactMap { if case .element(let element) = $0 { element } else { nil } }
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
        guard let context = xmlNewParserCtxt() else {
            throw XMLError(line: 0, message: "the XML parser could not start")
        }
        defer { xmlFreeParserCtxt(context) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_BIG_LINES.rawValue | XML_PARSE_NOCDATA.rawValue)
        let document = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(buffer.count, 1)) {
                xmlCtxtReadMemory(context, $0, Int32(buffer.count), "module.xml", nil, options)
            }
        }
        guard let document else {
            if let error = xmlCtxtGetLastError(context) {
                throw XMLError(line: Int(error.pointee.line), message: describe(error.pointee))
            }
            throw XMLError(line: 0, message: "not a well-formed XML document")
        }
        defer { xmlFreeDoc(document) }
        if let subset = document.pointee.intSubset {
            let line = Int(subset.pointee.children.map { xmlGetLineNo($0) } ?? 1)
            throw XMLError(line: max(line, 1), message: "a DOCTYPE declaration is not allowed in a module file")
        }
        guard let root = xmlDocGetRootElement(document) else {
            throw XMLError(line: 1, message: "the document has no root element")
        }
        return try element(root)
    }

    private static func describe(_ error: xmlError) -> String {
        var message = error.message.map { String(cString: $0) } ?? "malformed XML"
        while message.last?.isWhitespace == true { message.removeLast() }
        return "malformed XML: \(message)"
    }

    private static func element(_ node: xmlNodePtr) throws(XMLError) -> XMLElement {
        let line = Int(xmlGetLineNo(node))
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
            let childLine = Int(xmlGetLineNo(current))
            switch current.pointee.type {
            case XML_ELEMENT_NODE:
                children.append(.element(try element(current)))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                let text = current.pointee.content.map { String(cString: $0) } ?? ""
                // Adjacent character data (text, then CDATA) reads as one text.
                if case .text(let previous, let previousLine) = children.last {
                    children[children.count - 1] = .text(previous + text, line: previousLine)
                } else {
                    children.append(.text(text, line: childLine))
                }
            case XML_COMMENT_NODE:
                let text = current.pointee.content.map { String(cString: $0) } ?? ""
                children.append(.comment(text, line: childLine))
            case XML_ENTITY_REF_NODE:
                throw XMLError(line: childLine, message: "entity references are not allowed in a module file")
            case XML_PI_NODE:
                throw XMLError(line: childLine, message: "processing instructions are not allowed in a module file")
            default:
                throw XMLError(line: childLine, message: "unexpected XML content")
            }
            child = current.pointee.next
        }
        return XMLElement(name: name, line: line, attributes: attributes, children: children)
    }
}
