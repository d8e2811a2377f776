#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation

/// Where Litestream replicates a data folder: `file:///absolute/path`, or
/// `s3://bucket/path?endpoint=URL&region=R&force-path-style=true` (the query as Litestream reads it; without an
/// endpoint, AWS). Each database lands under the replica at its path relative to the data folder
/// (`users/p-ann.db`), as Litestream's directory replication lays it out.
///
/// S3 credentials are Litestream's: `LITESTREAM_ACCESS_KEY_ID` and `LITESTREAM_SECRET_ACCESS_KEY` (or
/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`) in the environment; never on a command line or in the
/// configuration daogate writes.
struct Replica: Sendable {
    enum Kind: Sendable {
        case file(root: String)
        case s3(bucket: String, prefix: String, query: String)
    }

    let kind: Kind
    let text: String

    init(_ text: String) throws(ValidationError) {
        self.text = text
        if text.hasPrefix("file://") {
            let path = String(text.dropFirst(7))
            guard path.hasPrefix("/") else { throw ValidationError("a file replica is file:///absolute/path, not \(text)") }
            kind = .file(root: Self.trimmed(path))
        } else if text.hasPrefix("s3://") {
            let rest = text.dropFirst(5)
            let (location, query) = rest.firstIndex(of: "?").map { (rest[..<$0], String(rest[rest.index(after: $0)...])) } ?? (rest, "")
            let parts = location.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bucket = parts.first, !bucket.isEmpty else { throw ValidationError("an S3 replica is s3://bucket/path, not \(text)") }
            kind = .s3(bucket: bucket, prefix: Self.trimmed(parts.count > 1 ? parts[1] : ""), query: query)
        } else {
            throw ValidationError("the replica is file:///path or s3://bucket/path[?endpoint=…], not \(text)")
        }
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// The replica URL of one database, given its path relative to the data folder (what `litestream restore` takes).
    func url(of relative: String) -> String {
        switch kind {
        case .file(let root): "file://" + (root == "/" ? "" : root) + "/" + relative
        case .s3(let bucket, let prefix, let query):
            "s3://\(bucket)/" + (prefix.isEmpty ? "" : prefix + "/") + relative + (query.isEmpty ? "" : "?" + query)
        }
    }

    /// The replica URL of a subfolder (one `dbs` entry of the configuration).
    func url(ofFolder relative: String) -> String { relative.isEmpty ? text : url(of: relative) }

    /// The databases the replica holds, as paths relative to the data folder (`common.db`, `users/p-ann.db`, …):
    /// each is a folder named `….db` in the replica.
    func databases() throws -> [String] {
        switch kind {
        case .file(let root):
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isFolder), isFolder.boolValue else {
                throw RunFailure("the replica folder \(root) does not exist")
            }
            guard let enumerator = FileManager.default.enumerator(atPath: root) else { throw RunFailure("cannot read the replica folder \(root)") }
            var found: [String] = []
            while let relative = enumerator.nextObject() as? String {
                guard relative.hasSuffix(".db") else { continue }
                enumerator.skipDescendants()
                found.append(relative)
            }
            return found.sorted()
        case .s3(_, let prefix, _):
            var found: [String] = []
            var folders = [prefix.isEmpty ? "" : prefix + "/"]
            while let folder = folders.popLast() {
                for child in try listFolders(under: folder) {
                    let relative = String(child.dropFirst(prefix.isEmpty ? 0 : prefix.count + 1).dropLast())
                    if relative.hasSuffix(".db") { found.append(relative) } else { folders.append(child) }
                }
            }
            return found.sorted()
        }
    }

    /// The environment's S3 credentials, as Litestream reads them.
    static func credentials(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> (key: String, secret: String)? {
        func value(_ names: String...) -> String? { names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty } }
        guard let key = value("LITESTREAM_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
              let secret = value("LITESTREAM_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY") else { return nil }
        return (key, secret)
    }

    /// The query parameters of an S3 replica URL.
    private var parameters: [String: String] {
        guard case .s3(_, _, let query) = kind else { return [:] }
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            result[parts[0]] = parts.count > 1 ? (parts[1].removingPercentEncoding ?? parts[1]) : ""
        }
        return result
    }

    /// The "folders" (common prefixes) right under `folder` in the bucket: S3's ListObjectsV2 with delimiter `/`,
    /// page after page, signed (AWS Signature V4) by curl's `--aws-sigv4`, the credentials passed on its
    /// standard input (never on its command line).
    private func listFolders(under folder: String) throws -> [String] {
        guard case .s3(let bucket, _, _) = kind else { return [] }
        let parameters = self.parameters
        let region = parameters["region"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        let base: String
        if let endpoint = parameters["endpoint"], !endpoint.isEmpty {
            base = (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/" + bucket
        } else {
            base = "https://\(bucket).s3.\(region).amazonaws.com"
        }
        guard let credentials = Self.credentials() else {
            throw RunFailure("no S3 credentials: set LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
        }
        func encoded(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")) ?? text
        }
        func quoted(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        var folders: [String] = []
        var token: String?
        for _ in 0..<100_000 {
            // The query in SigV4's canonical order (sorted names), every value encoded.
            var query = token.map { "continuation-token=\(encoded($0))&" } ?? ""
            query += "delimiter=%2F&list-type=2&prefix=\(encoded(folder))"
            let answer = try Self.run("curl", ["--silent", "--show-error", "--fail-with-body", "--config", "-",
                                               "--aws-sigv4", "aws:amz:\(region):s3", base + "?" + query],
                                      input: "user = \(quoted(credentials.key + ":" + credentials.secret))\n")
            guard answer.status == 0 else {
                throw RunFailure("listing the replica \(text) at \(folder.isEmpty ? "/" : folder) failed: \(answer.output.prefix(300)) \(answer.errors.prefix(300))")
            }
            let xml = answer.output
            folders += Self.elements("Prefix", in: Self.elements("CommonPrefixes", in: xml).joined(separator: "\n")).map(Self.unescaped)
            guard Self.elements("IsTruncated", in: xml).first == "true", let next = Self.elements("NextContinuationToken", in: xml).first else { break }
            token = Self.unescaped(next)
        }
        return folders
    }

    /// The texts of every `<name>…</name>` in an XML answer (S3's listings have no nesting of the same name).
    static func elements(_ name: String, in xml: String) -> [String] {
        var found: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(name)>"), let close = rest[open.upperBound...].range(of: "</\(name)>") {
            found.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return found
    }

    static func unescaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// Runs a program found on PATH (or at a path), with `input` on its standard input; its exit status and outputs.
    static func run(_ program: String, _ arguments: [String], input: String = "") throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        if program.contains("/") {
            process.executableURL = URL(fileURLWithPath: program)
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        }
        process.arguments = program.contains("/") ? arguments : [program] + arguments
        let standardInput = Pipe(), standardOutput = Pipe(), standardError = Pipe()
        process.standardInput = standardInput
        process.standardOutput = standardOutput
        process.standardError = standardError
        do {
            try process.run()
        } catch {
            throw RunFailure("cannot run \(program): \(error.localizedDescription)")
        }
        standardInput.fileHandleForWriting.write(Data(input.utf8))
        try? standardInput.fileHandleForWriting.close()
        // Both outputs are read at once, so that neither pipe fills while the other is read.
        final class Box: @unchecked Sendable { var data = Data() }
        let errors = Box()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { errors.data = standardError.fileHandleForReading.readDataToEndOfFile() }
        let output = standardOutput.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors.data, as: UTF8.self))
    }
}
