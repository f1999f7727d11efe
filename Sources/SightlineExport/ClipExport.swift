import Foundation
import SightlineCore
import SightlineMovie

/// What `sightline export` does with a clip.
package enum ExportMode: String, Sendable, Codable {
    /// The H.264 samples copied as they are, with every metadata track cut to the range.
    case trim
    /// Decoded, boxes and captions drawn in, turned upright, encoded again.
    case burnIn = "burn-in"
}

/// What an export wrote: the `--json` line.
package struct ExportSummary: Sendable, Codable, Equatable {
    package var output: String
    package var mode: ExportMode
    /// The range shown, movie seconds of the source.
    package var from: Double
    package var to: Double
    /// Video samples written (a trim starts at the key frame before `from`).
    package var frames: Int
    /// Metadata groups written, by the source's track ID.
    package var metadataGroups: [String: Int]
    package var bytes: UInt64
    package var seconds: Double
    /// The source was still being written or cut off: what was complete was exported.
    package var sourceIncomplete: Bool
}

/// Progress of a long export: fraction done and frames a second, for the terminal.
package typealias ExportProgress = @Sendable (_ fraction: Double, _ framesPerSecond: Double) -> Void

/// Writes an export to a temporary file beside `output` and moves it into place only when
/// it is complete, so a failed export (a full disk, an error) leaves nothing behind and a
/// replaced file is never half-written.
struct OutputFile {
    let path: String
    let temporary: String

    init(path: String, overwrite: Bool) throws {
        if FileManager.default.fileExists(atPath: path), !overwrite { throw ExportError.outputExists(path) }
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw ExportError.cannotWrite(path: path, reason: "\(directory) is not a writable directory")
        }
        self.path = path
        temporary = directory + "/.\(url.lastPathComponent).partial-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Runs `write` on the temporary path, then moves the result into place; on any error
    /// the partial file is removed and the error says why in one line.
    func produce(_ write: (String) throws -> Void) throws -> UInt64 {
        do {
            try write(temporary)
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            if let error = error as? ExportError { throw error }
            throw ExportError.cannotWrite(path: path, reason: Self.reason(error))
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value
        return size ?? 0
    }

    private static func reason(_ error: Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        return underlying?.localizedDescription ?? "\(error)"
    }
}

/// Trims a recording without re-encoding: the H.264 samples from the key frame at or before
/// the start to the last frame shown before the end, an edit list so playback starts exactly
/// at the start, and every metadata track cut to the range and re-timed from 0 (a group that
/// straddles a cut is clipped to it). Audio is copied as it is. Written by `MovieWriter`, so
/// the clip is a recording like any other.
package enum ClipTrimmer {
    package static func trim(
        _ source: ClipSource, range: Range<Double>, to output: String, overwrite: Bool,
        progress: ExportProgress? = nil
    ) throws -> ExportSummary {
        let started = ContinuousClock.now
        let file = try OutputFile(path: output, overwrite: overwrite)
        let indices = source.sampleIndices(for: range)
        let timescale = Int32(clamping: source.video.timescale)
        let shown =
            MediaTime(
                seconds: range.lowerBound, timescale: timescale)..<MediaTime(
                seconds: range.upperBound, timescale: timescale)
        let tracks = source.metadataTracks
        var groupsWritten: [String: Int] = [:]
        let bytes = try file.produce { path in
            let sounds = source.soundTracks
            let writer = try MovieWriter(
                path: path, video: source.format, metadataTracks: tracks.compactMap(\.metadataFormat),
                passthroughTracks: sounds.map(ClipSource.passthroughFormat),
                configuration: .init(
                    fragmentInterval: nil, syncEachFragment: false, presentationRange: shown,
                    videoMatrix: source.video.matrix))
            // Metadata goes in first: the writer keeps it until the video reaches it. Samples
            // are copied as they are (same key table), clipped to the range.
            for (index, track) in tracks.enumerated() {
                groupsWritten[String(track.id)] = try copyMetadata(
                    track, of: source, range: range, into: writer, index: index)
            }
            // Audio is copied as it is; the edit list cuts it where the video starts and ends.
            for (index, track) in sounds.enumerated() {
                for sample in try source.passthroughSamples(of: track, during: range) {
                    try writer.append(sample, toPassthroughTrack: index)
                }
            }
            var last = ContinuousClock.now
            for (count, index) in indices.enumerated() {
                let sample = source.video.samples[index]
                try writer.append(
                    VideoAccessUnit(
                        storedSample: try source.movie.readSample(sample),
                        decodeTime: MediaTime(value: source.decodeTimes[index], timescale: timescale),
                        presentationTime: MediaTime(value: source.presentationTimes[index], timescale: timescale),
                        duration: MediaTime(value: Int64(sample.duration), timescale: timescale),
                        isKeyFrame: sample.isSync)
                )
                if let progress, ContinuousClock.now - last > .milliseconds(200) {
                    last = .now
                    let elapsed = (ContinuousClock.now - started).milliseconds / 1000
                    progress(Double(count + 1) / Double(indices.count), Double(count + 1) / max(elapsed, 1e-3))
                }
            }
            try writer.finish()
        }
        return ExportSummary(
            output: output, mode: .trim, from: range.lowerBound, to: range.upperBound, frames: indices.count,
            metadataGroups: groupsWritten, bytes: bytes, seconds: (ContinuousClock.now - started).milliseconds / 1000,
            sourceIncomplete: source.isIncomplete)
    }

    /// Copies the samples of a metadata track presented during `range` into metadata track
    /// `index` of `writer`, each clipped to the range; empty samples are left out (the
    /// writer fills gaps with them). Returns how many were copied.
    static func copyMetadata(
        _ track: MovieTrack, of source: ClipSource, range: Range<Double>, into writer: MovieWriter, index: Int
    )
        throws -> Int
    {
        let scale = Int32(clamping: track.timescale)
        let (start, end) = (
            MediaTime(seconds: range.lowerBound, timescale: scale),
            MediaTime(seconds: range.upperBound, timescale: scale)
        )
        var copied = 0
        for sample in track.samples {
            let time = track.presentationTime(of: sample)
            let stop = time + MediaTime(value: Int64(sample.duration), timescale: scale)
            guard stop > start, time < end else { continue }
            let payload = try source.movie.readSample(sample)
            guard payload != MovieWriter.emptyMetadataSample else { continue }
            let (clippedStart, clippedStop) = (max(time, start), min(stop, end))
            try writer.appendSample(
                payload, time: clippedStart, duration: clippedStop - clippedStart, toMetadataTrack: index)
            copied += 1
        }
        return copied
    }
}
