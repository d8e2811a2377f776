import DAOValue
import Foundation

/// Loads module files: XML → a validated `Module`, or every problem found.
public enum ModuleLoader {
    /// Loads every `*.xml` file under `directory` (recursively, in path order).
    ///
    /// Returns the modules that loaded and the problems of those that did not,
    /// plus a problem for each module name declared twice.
    public static func loadDirectory(_ directory: String) -> (modules: [Module], errors: [LoadError]) {
        var modules: [Module] = []
        var errors: [LoadError] = []
        let files: [String]
        do {
            files = try moduleFiles(in: directory)
        } catch {
            return ([], [LoadError(file: directory, line: 0, message: "cannot read the folder: \(error.localizedDescription)")])
        }
        var firstFileOfName: [String: (String, Int)] = [:]
        for file in files {
            do {
                let module = try load(file: file)
                if let (otherFile, otherLine) = firstFileOfName[module.name] {
                    errors.append(LoadError(file: file, line: module.line, message:
                        "module name '\(module.name)' is already used by \(otherFile):\(otherLine)"))
                    continue
                }
                firstFileOfName[module.name] = (file, module.line)
                modules.append(module)
            } catch {
                errors += error.errors
            }
        }
        return (modules, errors)
    }

    /// The `*.xml` files under `directory`, sorted, as paths that start with `directory`.
    public static func moduleFiles(in directory: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: directory])
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        let paths = try FileManager.default.subpathsOfDirectory(atPath: directory)
        return paths.filter { $0.hasSuffix(".xml") }.sorted().map { base + $0 }
    }

    /// Loads one module file.
    public static func load(file: String) throws(LoadFailure) -> Module {
        // Reads one byte past the limit at most, so neither a huge file nor an
        // endless one (a link to /dev/zero) is read whole.
        guard let handle = FileHandle(forReadingAtPath: file),
              let data = try? handle.read(upToCount: ModuleLimits.fileSize + 1) ?? Data()
        else {
            throw LoadFailure(errors: [LoadError(file: file, line: 0, message: "cannot read the file")])
        }
        try? handle.close()
        guard data.count <= ModuleLimits.fileSize else {
            throw LoadFailure(errors: [LoadError(file: file, line: 0, message:
                "the file is larger than \(ModuleLimits.fileSize >> 20) MiB, the most a module file may be")])
        }
        return try load(bytes: [UInt8](data), file: file)
    }

    /// Loads a module from the bytes of its XML; `file` names it in messages.
    public static func load(bytes: [UInt8], file: String) throws(LoadFailure) -> Module {
        let root: XMLElement
        do {
            root = try XMLTree.parse(bytes)
        } catch {
            throw LoadFailure(errors: [LoadError(file: file, line: error.line, message: error.message)])
        }
        var parser = ModuleParser(file: file)
        let module = parser.parse(root)
        if let module, parser.errors.isEmpty { return module }
        // A problem in a fragment is found again by each method that includes it: report it once.
        var seen: Set<LoadError> = []
        let reported = parser.errors.filter { seen.insert($0).inserted }
        throw LoadFailure(errors: reported.isEmpty
            ? [LoadError(file: file, line: root.line, message: "the module could not be loaded")]
            : reported.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(\.element))
    }
}
