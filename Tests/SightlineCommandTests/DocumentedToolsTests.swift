import Foundation
import Testing

/// The scripts the README and docs/ tell a user to run: each one they name is in `tools/`,
/// and each with a `#!` line runs by its path, as they run it (`tools/bench-cameras.py
/// .build/release/sightline`); four of them once answered "Permission denied".
@Suite struct DocumentedToolsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every `tools/…` path written in the README and docs/, without trailing punctuation.
    static func namedTools() throws -> Set<String> {
        let docs = root.appendingPathComponent("docs")
        let pages =
            [root.appendingPathComponent("README.md")]
            + (try FileManager.default.contentsOfDirectory(at: docs, includingPropertiesForKeys: nil))
            .filter { $0.pathExtension == "md" }
        let path = try Regex(#"tools/[A-Za-z0-9_.-]+[A-Za-z0-9_-]"#)
        return try Set(
            pages.flatMap { page in
                try String(contentsOf: page, encoding: .utf8).matches(of: path).map { String($0.output[0].substring!) }
            })
    }

    @Test func everyToolTheDocsNameIsThere() throws {
        let named = try Self.namedTools()
        #expect(named.contains("tools/bench-cameras.py"))
        let missing = named.filter {
            !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent($0).path)
        }
        #expect(missing.isEmpty, "named in the docs but not in the tree: \(missing.sorted())")
    }

    @Test func everyScriptRunsByItsPath() throws {
        let tools = Self.root.appendingPathComponent("tools")
        var scripts: [String] = []
        var notExecutable: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: tools.path).sorted() {
            let file = tools.appendingPathComponent(name)
            // Only files: Python leaves __pycache__ here once a test has imported a helper.
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            guard let handle = FileHandle(forReadingAtPath: file.path) else { continue }
            let start = try handle.read(upToCount: 2)
            try handle.close()
            guard start == Data("#!".utf8) else { continue }
            scripts.append(name)
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int ?? 0
            if mode & 0o100 == 0 { notExecutable.append(name) }
        }
        #expect(scripts.contains("bench-cameras.py") && scripts.contains("test.sh"))
        #expect(notExecutable.isEmpty, "scripts with a #! line that cannot be run by their path: \(notExecutable)")
    }
}
