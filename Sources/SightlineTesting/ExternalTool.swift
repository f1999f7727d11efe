import Foundation
import Synchronization

/// Runs an independent program (ffprobe, exiftool, mediainfo) and collects what it printed.
package enum ExternalTool {
    package struct Output: Sendable {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// The checkout the tests were built from, whose `tools/` and `models/` they use.
    package static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    package static func run(_ name: String, _ arguments: [String]) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [name] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Drain stderr on the side, so neither pipe can fill and stall the tool.
        let errorData = LockedData()
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errorData.set(err.fileHandleForReading.readDataToEndOfFile())
            drained.signal()
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        drained.wait()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: errorData.get(), as: UTF8.self))
    }

    /// Runs the tool and parses its standard output as JSON.
    package static func json(_ name: String, _ arguments: [String]) throws -> Any {
        let output = try run(name, arguments)
        return try JSONSerialization.jsonObject(with: Data(output.stdout.utf8))
    }
}

/// What the side thread read, for the caller once it has signalled.
private final class LockedData: Sendable {
    private let data = Mutex(Data())
    func set(_ value: Data) { data.withLock { $0 = value } }
    func get() -> Data { data.withLock { $0 } }
}

/// A fresh directory under the system's temporary directory, removed when released.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init(_ prefix: String = "sightline") throws {
        path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func file(_ name: String) -> String { "\(path)/\(name)" }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
