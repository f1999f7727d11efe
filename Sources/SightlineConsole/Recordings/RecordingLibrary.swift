import Foundation
import SightlineCore
import SightlineMovie
import Synchronization

/// Why a recording cannot be served.
package enum RecordingError: Error, Equatable, CustomStringConvertible {
    /// The name is not a plain file name of a movie (empty, `..`, a slash, a NUL …).
    case badName(String)
    /// No such recording, or it leads out of the recordings directories (a symlink).
    case notFound(String)
    /// The file is there but cannot be read as a movie.
    case unreadable(name: String, reason: String)

    package var description: String {
        switch self {
        case .badName(let name): "'\(name.prefix(200))' is not a recording name"
        case .notFound(let name): "no recording named '\(name.prefix(200))'"
        case .unreadable(let name, let reason): "\(name) cannot be read: \(reason)"
        }
    }
}

/// One recording as `/recordings` lists it.
package struct RecordingSummary: Sendable, Encodable, Equatable {
    package var name: String
    package var directory: String
    /// UTC start, from the recorder's file name (`<source>-<yyyyMMdd'T'HHmmss'Z'>.mov`), else
    /// the file's modification time less its duration; seconds since 1970.
    package var start: Double
    package var duration: Double
    package var size: UInt64
    /// Tracks by what they hold: `video`, `faces`, `codes`, `location`, `orientation`, or a
    /// client's identifier.
    package var tracks: [String]
    /// Distinct IDs of each object kind, by the kind's name (`faces`, `codes`).
    package var objects: [String: Int] = [:]
    /// Still being written (fragmented and changed in the last 30 s), or cut off by a crash
    /// (fragmented, older): it plays up to its last complete fragment.
    package var inProgress: Bool
    package var fragmented: Bool
    /// Why the file cannot be read, when it cannot; the other fields are then empty.
    package var error: String?

    private enum CodingKeys: String, CodingKey {
        case name, directory, start, duration, size, tracks, inProgress, fragmented, error
    }

    /// Its JSON: its fields, and each kind's count as a field named after the kind
    /// (docs/console.md).
    var json: WithKindFields<Self> {
        WithKindFields(value: self, fields: ObjectKind.all.map { ($0.name, objects[$0.name] ?? 0) })
    }
}

/// The recordings the console serves: the `.mov` and `.mp4` files directly inside its
/// directories. A name is a plain file name; the first directory holding it wins. Nothing
/// outside the directories is ever opened: names with a path in them are refused, and a
/// symlink that leads out is treated as missing.
package final class RecordingLibrary: Sendable {
    package let directories: [String]
    private let cache = Mutex<[String: (stamp: FileStamp, summary: RecordingSummary)]>([:])
    private let metadataCache = Mutex<[String: (stamp: FileStamp, metadata: RecordingMetadata)]>([:])

    struct FileStamp: Equatable {
        var size: UInt64
        var modified: Double
    }

    /// A directory that does not exist yet is listed once it does (a recorder started after
    /// the console creates it); `missing` says which are absent now, for a warning.
    package init(directories: [String]) {
        self.directories = directories
    }

    /// The directories that do not exist (now).
    package var missing: [String] {
        directories.filter { directory in
            var isDirectory: ObjCBool = false
            return !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory)
                || !isDirectory.boolValue
        }
    }

    /// Each directory as it really is, symlinks resolved: where its files must stay.
    private var resolvedDirectories: [String] {
        directories.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
    }

    static let movieExtensions: Set<String> = ["mov", "mp4", "m4v"]

    /// The file `name` stands for, checked to lie inside a recordings directory.
    package func path(of name: String) throws -> String {
        guard Self.isPlainName(name) else { throw RecordingError.badName(name) }
        for directory in resolvedDirectories {
            let candidate = directory + "/" + name
            guard FileManager.default.fileExists(atPath: candidate) else { continue }
            // A symlink may point anywhere: follow it and check where it lands.
            let real = URL(fileURLWithPath: candidate).resolvingSymlinksInPath().path
            guard real.hasPrefix(directory + "/") else { throw RecordingError.notFound(name) }
            return real
        }
        throw RecordingError.notFound(name)
    }

    static func isPlainName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 255, !name.hasPrefix("."), name != "..",
            !name.contains("/"), !name.contains("\\"), !name.unicodeScalars.contains(where: { $0.value < 0x20 })
        else { return false }
        return movieExtensions.contains((name as NSString).pathExtension.lowercased())
    }

    /// Every recording, newest first.
    package func list() -> [RecordingSummary] {
        files().compactMap { summary(name: $0.name, path: $0.path, directory: $0.directory) }
            .sorted { ($0.start, $0.name) > ($1.start, $1.name) }
    }

    /// Every recording's size, from the directories alone (no file is opened): what the
    /// event index compares with the sizes it read the files at.
    package func sizes() -> [String: UInt64] {
        var sizes: [String: UInt64] = [:]
        for file in files() { sizes[file.name] = Self.stamp(file.path)?.size }
        return sizes
    }

    /// The recordings in the directories, the first directory holding a name winning.
    private func files() -> [(name: String, path: String, directory: String)] {
        var seen = Set<String>()
        var files: [(name: String, path: String, directory: String)] = []
        for directory in resolvedDirectories {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names where Self.isPlainName(name) && seen.insert(name).inserted {
                if let path = try? path(of: name) { files.append((name, path, directory)) }
            }
        }
        return files
    }

    /// The summary of one recording.
    package func summary(of name: String) throws -> RecordingSummary {
        let path = try path(of: name)
        guard let summary = summary(name: name, path: path, directory: (path as NSString).deletingLastPathComponent)
        else { throw RecordingError.notFound(name) }
        return summary
    }

    /// The player's metadata for `name` (see `PlayerMetadata`), read once per version of
    /// the file.
    package func metadata(of name: String) throws -> RecordingMetadata {
        let path = try path(of: name)
        guard let stamp = Self.stamp(path) else { throw RecordingError.notFound(name) }
        return try metadata(path: path, name: name, stamp: stamp)
    }

    private func metadata(path: String, name: String, stamp: FileStamp) throws -> RecordingMetadata {
        if let cached = metadataCache.withLock({ $0[path] }), cached.stamp == stamp { return cached.metadata }
        let metadata: RecordingMetadata
        do {
            let movie = try MovieReader(path: path)
            let player = try PlayerMetadata(movie: movie, name: name)
            metadata = RecordingMetadata(player: player, json: try Array(JSONEncoder().encode(player)))
        } catch {
            throw RecordingError.unreadable(name: name, reason: "\(error)")
        }
        metadataCache.withLock { cache in
            // Long recordings hold megabytes: keep a few.
            if cache.count >= 8 { cache.removeAll() }
            cache[path] = (stamp, metadata)
        }
        return metadata
    }

    private static func stamp(_ path: String) -> FileStamp? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = attributes[.size] as? NSNumber, let modified = attributes[.modificationDate] as? Date
        else { return nil }
        return FileStamp(size: size.uint64Value, modified: modified.timeIntervalSince1970)
    }

    private func summary(name: String, path: String, directory: String) -> RecordingSummary? {
        guard let stamp = Self.stamp(path) else { return nil }
        if let cached = cache.withLock({ $0[path] }), cached.stamp == stamp { return cached.summary }
        var summary = RecordingSummary(
            name: name, directory: directory, start: stamp.modified, duration: 0, size: stamp.size, tracks: [],
            inProgress: false, fragmented: false)
        do {
            let metadata = try metadata(path: path, name: name, stamp: stamp).player
            summary.duration = metadata.duration
            summary.tracks = metadata.tracks.map(\.kind)
            for kind in ObjectKind.all {
                summary.objects[kind.name] = Set(metadata.objects.filter { $0.kind == kind.objectName }.map(\.id)).count
            }
            summary.fragmented = metadata.fragmented
            summary.inProgress = metadata.fragmented && Date().timeIntervalSince1970 - stamp.modified < 30
            summary.start = RecordingName.startTime(of: name) ?? stamp.modified - metadata.duration
        } catch let error as RecordingError {
            if case .unreadable(_, let reason) = error { summary.error = reason } else { summary.error = "\(error)" }
        } catch {
            summary.error = "\(error)"
        }
        cache.withLock { cache in
            if cache.count > 4096 { cache.removeAll() }
            cache[path] = (stamp, summary)
        }
        return summary
    }
}

/// A recording's metadata as the player reads it, and the same as JSON.
package struct RecordingMetadata: Sendable {
    let player: PlayerMetadata
    package let json: [UInt8]
}
