import Foundation
import SightlineCore

/// A tmpfs of a given size, to fill up on purpose. Needs root (CI and these machines run
/// as root); elsewhere the test reports itself skipped.
package final class SmallFileSystem {
    package let path: String

    package static let canMount: Bool = {
        guard let probe = try? SmallFileSystem(kilobytes: 64) else { return false }
        _ = probe
        return true
    }()

    package init(kilobytes: Int) throws {
        path = NSTemporaryDirectory() + "sightline-disk-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = try ExternalTool.run("mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path])
        guard mounted.status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw SightlineError.invalidArgument("cannot mount a tmpfs: \(mounted.stderr)")
        }
    }

    deinit {
        _ = try? ExternalTool.run("umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }
}
