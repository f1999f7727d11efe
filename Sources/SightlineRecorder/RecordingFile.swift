import Foundation
import SightlineCore
import SightlineMovie

/// One recording being written: the file's `MovieWriter` and what it declared when it
/// started (its metadata tracks, its sound track, its first frame). The recorder decides;
/// this carries the decisions out on the file.
final class RecordingFile {
    /// What a new file needs from its first key frame (besides its time, whose scale the
    /// video track takes), once that frame leaves the metadata delay: by then the metadata
    /// already flowing has said which tracks the file needs.
    struct Start {
        var codec: VideoCodec
        var parameterSets: [ArraySlice<UInt8>]
        var width, height: Int
        var wallTimeNs: UInt64
    }

    let path: String
    let writer: MovieWriter
    /// The sound track (its passthrough index) and format, when the file has one.
    let audio: (track: Int, format: AudioFormat)?
    /// The first video decode time: the file's audio starts there at the earliest.
    let videoStart: MediaTime
    /// Frames handed to the writer; those of a fragment the disk refused are not written.
    private(set) var framesAppended = 0
    /// Each identifier's track index and format. A kind's track declares its extra fields
    /// only in files started after the source announced them.
    private let tracks: [String: (index: Int, format: MetadataTrackFormat)]

    /// Starts `<directory>/<source>-<UTC start time>.mov` with `tracks` (turned as they say)
    /// and, from its first frame at `time`, the groups of `current` that still hold then.
    init(
        _ start: Start, at time: MediaTime, decodeTime: MediaTime, tracks declared: RecordedTracks,
        current: [String: TimedMetadataGroup], audio: AudioFormat?, configuration: RecorderConfiguration
    ) throws {
        let format = try VideoTrackFormat(
            annexBParameterSets: H264.annexB(start.parameterSets), codec: start.codec, width: start.width,
            height: start.height,
            timescale: time.timescale)
        let sound = try audio.map { try MovieWriter.PassthroughTrackFormat.aac($0) }
        path = Self.uniquePath(in: configuration, wallTimeNs: start.wallTimeNs)
        do {
            writer = try MovieWriter(
                path: path, video: format, metadataTracks: declared.tracks.map(\.format),
                passthroughTracks: sound.map { [$0] } ?? [],
                configuration: .init(
                    fragmentInterval: configuration.fragmentInterval,
                    videoMatrix: declared.orientation.map {
                        DisplayMatrix.matrix(exifOrientation: $0, width: start.width, height: start.height)
                    }))
        } catch {
            unlink(path)  // a file that could not start holds nothing
            throw error
        }
        tracks = Dictionary(
            uniqueKeysWithValues: declared.tracks.enumerated().map { ($1.identifier, ($0, $1.format)) })
        self.audio = audio.map { (0, $0) }
        videoStart = decodeTime
        // What holds when the file starts (faces on screen, the position) is in it from its
        // first frame.
        for track in declared.tracks {
            guard let group = current[track.identifier], !group.items.isEmpty else { continue }
            if let duration = group.duration, group.time + duration <= time { continue }
            _ = try append(TimedMetadataGroup(time: time, items: group.items), for: track.identifier)
        }
    }

    /// Appends a frame; true when that synced a fragment (what a crash can no longer take).
    func append(_ sample: VideoAccessUnit) throws -> Bool {
        let synced = writer.videoSamplesWritten
        try writer.append(sample)
        framesAppended += 1
        return writer.videoSamplesWritten != synced
    }

    /// Appends `group` to `identifier`'s track; nil when the file has none (the next file
    /// starts with it, if it still holds then). A kind's track declared without its extra
    /// fields gets its objects without them.
    func append(_ group: TimedMetadataGroup, for identifier: String) throws -> MovieWriter.MetadataAppendResult? {
        guard let (index, format) = tracks[identifier] else { return nil }
        var group = group
        if ObjectKind.tracked(by: identifier) != nil { group.items = group.items.map(format.fitting) }
        return try writer.append(group, toMetadataTrack: index)
    }

    /// `<source>-<UTC start time>.mov`, with a counter if that name is taken.
    private static func uniquePath(in configuration: RecorderConfiguration, wallTimeNs: UInt64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let stamp = formatter.string(from: Date(timeIntervalSince1970: Double(wallTimeNs) / 1e9))
        let base = "\(configuration.directory)/\(configuration.sourceID)-\(stamp)"
        var path = base + ".mov"
        var counter = 1
        while FileManager.default.fileExists(atPath: path) {
            path = "\(base)-\(counter).mov"
            counter += 1
        }
        return path
    }
}
