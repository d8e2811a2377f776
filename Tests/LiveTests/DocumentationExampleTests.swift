import Foundation
import Testing

/// The documentation's examples are true: every ```` ```console ```` block of `README.md` and of each page
/// under `docs/` is run, page by page, and must print what the page shows.
///
/// - **What runs.** A block's lines starting with `$ ` are commands (a line ending in ` \` continues on the
///   next; a here-document, `<<'EOF'`, runs to its end marker); the lines up to the next command or the
///   block's end are the output it must print (standard output and error together). Blocks fenced otherwise
///   (```` ```sh ````, ```` ```text ````) are not run: container commands are the container test's.
/// - **Where.** Each page gets a fresh folder holding a copy of `modules/`, `scripts/`, and a `bin/` with
///   `daogate` (the binary under test) first on `PATH`, and a fresh server on it, started as `make serve`
///   starts one (`--key-file daogate.key`, data in `data/`). The page's commands run in that folder, in
///   order, in one `bash`, so a variable or a background job of one command is there for the next; what the
///   page started in the background is stopped when it ends.
/// - **Ports.** Port 8080 in a command (`:8080`, `--port 8080`) is the page's server; any other port from 8081
///   to 8099 a page names is a free port of its own. Printed ports are turned back into the page's numbers.
/// - **Masked**, in what a command prints before it is compared (the page writes `…` there):
///   date-times (`2026-11-25T19:00:53Z`, with or without fractions or an offset), the number of a JSON member
///   `"updated"` or `"sentAt"` (the time a row was written), the change feed's process epochs (`5f3a91c2` in an event id `5f3a91c2-3`), user
///   digests (`user#` and 32 hex digits); and the page's folder is left out of paths (`/tmp/…/modules/x` is
///   `modules/x`; the folder alone is `.`). Standard output is line-buffered, as on a terminal.
///
/// `UPDATE_DOC_EXAMPLES=1 swift test --filter DocumentationExampleTests` writes what each command printed,
/// masked, into the pages in place of the outputs that differ (review the diff: it is the documentation).
@Suite(.serialized) struct DocumentationExampleTests {
    static let pages: [String] = {
        let root = LiveServer.root
        var pages = ["README.md"]
        let docs = root.appendingPathComponent("docs")
        let files = (FileManager.default.enumerator(atPath: docs.path)?.allObjects as? [String]) ?? []
        pages += files.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return pages.filter { page in
            let text = (try? String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)) ?? ""
            return text.contains("```console\n")
        }
    }()

    @Test(arguments: pages) func theExamplesOfThisPagePrintWhatItShows(page: String) throws {
        let file = LiveServer.root.appendingPathComponent(page)
        let text = try String(contentsOf: file, encoding: .utf8)
        var lines = text.components(separatedBy: "\n")
        let examples = Self.examples(in: lines)
        #expect(!examples.isEmpty, "\(page) has a console block without a command")
        let outputs = try Self.execute(examples, page: page, text: text)
        let update = ProcessInfo.processInfo.environment["UPDATE_DOC_EXAMPLES"] == "1"
        var changed = false
        // From the last example to the first, so that each one's line numbers still hold when it is rewritten.
        for (example, output) in zip(examples, outputs).reversed() {
            let expected = example.expected.joined(separator: "\n").trimmingCharacters(in: .newlines)
            guard output != expected else { continue }
            if update {
                lines.replaceSubrange(example.output, with: output.isEmpty ? [] : output.components(separatedBy: "\n"))
                changed = true
            } else {
                Issue.record("\(page):\(example.line): \(example.command)\n--- the page shows:\n\(expected)\n--- it printed:\n\(output)")
            }
        }
        if changed { try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8) }
    }

    /// One command of a page and the output the page shows under it.
    struct Example {
        var line: Int
        var command: String
        var expected: [String]
        /// The lines of the page holding `expected` (empty, at the right place, when it shows none).
        var output: Range<Int>
    }

    /// The commands of every ```` ```console ```` block, in order.
    static func examples(in lines: [String]) -> [Example] {
        var examples: [Example] = []
        var index = 0
        var inBlock = false
        while index < lines.count {
            let line = lines[index]
            if !inBlock {
                inBlock = line == "```console"
                index += 1
                continue
            }
            if line == "```" { inBlock = false; index += 1; continue }
            guard line.hasPrefix("$ ") else { index += 1; continue }
            let start = index
            var command = [String(line.dropFirst(2))]
            index += 1
            if let marker = hereDocument(in: command[0]) {
                while index < lines.count {
                    command.append(lines[index])
                    index += 1
                    if command.last == marker { break }
                }
            } else {
                while command.last!.hasSuffix("\\") && index < lines.count {
                    command.append(lines[index])
                    index += 1
                }
            }
            let first = index
            while index < lines.count && !lines[index].hasPrefix("$ ") && lines[index] != "```" { index += 1 }
            examples.append(Example(line: start + 1, command: command.joined(separator: "\n"),
                                    expected: Array(lines[first..<index]), output: first..<index))
        }
        return examples
    }

    /// The end marker of a here-document the command opens (`<<'EOF'`, `<<EOF`, `<<-EOF`), if any.
    static func hereDocument(in command: String) -> String? {
        guard let match = command.firstMatch(of: /<<-?\s*'?([A-Za-z_]+)'?/) else { return nil }
        return String(match.1)
    }

    /// Runs a page's commands in one shell, in a fresh folder with a fresh server; what each printed, masked.
    static func execute(_ examples: [Example], page: String, text: String) throws -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-docs-\(UUID().uuidString)")
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: folder.appendingPathComponent("bin"), withIntermediateDirectories: true)
        try fileManager.copyItem(at: LiveServer.root.appendingPathComponent("modules"), to: folder.appendingPathComponent("modules"))
        try fileManager.copyItem(at: LiveServer.root.appendingPathComponent("scripts"), to: folder.appendingPathComponent("scripts"))
        try fileManager.createSymbolicLink(atPath: folder.appendingPathComponent("bin/daogate").path,
                                           withDestinationPath: URL(fileURLWithPath: LiveServer.binary).standardizedFileURL.path)
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: folder.appendingPathComponent("daogate.key"))
        let server = try LiveServer(folder: folder, directory: folder)

        // The page's ports: 8080 is its server, each other one from 8081 to 8099 a free port.
        var ports = [8080: server.port]
        for match in text.matches(of: /(?:localhost:|127\.0\.0\.1:|--port[ =]|_PORT=)(80[89]\d)\b/) {
            let port = Int(match.1)!
            if ports[port] == nil { ports[port] = try freePort() }
        }
        func mapped(_ command: String) -> String {
            command.replacing(/(localhost:|127\.0\.0\.1:|--port[ =]|_PORT=)(80[89]\d)\b/) { match in
                "\(match.1)\(ports[Int(match.2)!]!)"
            }
        }
        let marker = "@@daogate-example-\(UUID().uuidString)@@"
        var script = """
            exec > \(folder.path)/.output 2>&1
            cd \(folder.path)
            export PATH=\(folder.path)/bin:$PATH
            # Standard output line-buffered, as on a terminal, so that it interleaves with standard error as a reader sees it.
            for lib in /usr/libexec/coreutils/libstdbuf.so /usr/lib/coreutils/libstdbuf.so; do
              [ -f $lib ] && export LD_PRELOAD=$lib _STDBUF_O=L && break
            done
            unset $(compgen -e | grep '^DAOGATE_')

            """
        for example in examples {
            script += mapped(example.command) + "\nprintf '\\n\(marker)\\n'\n"
        }
        script += "kill $(jobs -p) 2>/dev/null; wait\n"
        try script.write(to: folder.appendingPathComponent(".script"), atomically: true, encoding: .utf8)
        try run("/usr/bin/timeout", ["300", "/bin/bash", folder.appendingPathComponent(".script").path])
        let printed = try String(contentsOf: folder.appendingPathComponent(".output"), encoding: .utf8)
        var outputs = printed.components(separatedBy: "\n\(marker)\n").map { mask($0, folder: folder.path, ports: ports) }
        if outputs.count > examples.count { outputs.removeLast(outputs.count - examples.count) }
        while outputs.count < examples.count { outputs.append("(the page's shell stopped before this command ran)") }
        return outputs
    }

    /// What a command printed, with its volatile parts written as the page writes them.
    static func mask(_ output: String, folder: String, ports: [Int: Int]) -> String {
        var text = output.replacingOccurrences(of: folder + "/", with: "").replacingOccurrences(of: folder, with: ".")
        for (shown, actual) in ports {
            text = text.replacing(try! Regex("\\b\(actual)\\b")) { _ in String(shown) }
        }
        text = text.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?/) { _ in "…" }
        text = text.replacing(/user#[0-9a-f]{32}/) { _ in "user#…" }
        text = text.replacing(/"(updated|sentAt)":[0-9.e+-]+/) { match in "\"\(match.1)\":…" }
        text = text.replacing(/\b[0-9a-f]{8}-(\d+)\b/) { match in "…-\(match.1)" }
        return text.trimmingCharacters(in: .newlines)
    }

    /// A loopback port free at the moment.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, size) == 0 && getsockname(descriptor, $0, &size) == 0 }
        }
        guard bound else { throw LiveError("no free loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
