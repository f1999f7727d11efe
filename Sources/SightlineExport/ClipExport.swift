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

/// One recording of a clip, placed `offset` seconds into the clip's timeline: a clip that
/// spans a recorder's cut joins the files on either side.
package struct ClipPart {
    package let source: ClipSource
    package let offset: Double

    package init(_ source: ClipSource, offset: Double) {
        self.source = source
        self.offset = offset
    }

    /// A source's recordings one after another, as `AVMutableComposition` inserts time
    /// ranges at its end: each starts where the one before ends, unless its start (from its
    /// file name, to the second) says it began more than two seconds later: a gap in the
    /// recording stays a gap. Offsets are from the first one's start.
    package static func joined(_ recordings: [(source: ClipSource, start: Double)]) -> [ClipPart] {
        var parts: [ClipPart] = []
        for (source, start) in recordings {
            guard let last = parts.last, let first = recordings.first else {
                parts.append(ClipPart(source, offset: 0))
                continue
            }
            let (end, named) = (last.offset + last.source.duration, start - first.start)
            parts.append(ClipPart(source, offset: named > end + 2 ? named : end))
        }
        return parts
    }

    /// Where wall-clock `time` falls on the joined timeline of `parts`, whose files start at
    /// `starts` (their names' times): in the file that holds it, at the same distance from
    /// that file's start as a player of that file shows it.
    package static func joinedTime(of time: Double, in parts: [ClipPart], starts: [Double]) -> Double {
        for (part, start) in zip(parts, starts) where time < start + part.source.duration {
            return part.offset + max(time - start, 0)
        }
        guard let last = parts.last else { return 0 }
        return last.offset + last.source.duration
    }
}

/// Trims a recording without re-encoding: the H.264 samples from the key frame at or before
/// the start to the last frame shown before the end, an edit list so playback starts exactly
/// at the start, and every metadata track cut to the range and re-timed from 0 (a group that
/// straddles a cut is clipped to it). Audio is copied as it is. Written by `MovieWriter`, so
/// the clip is a recording like any other.
///
/// Several recordings of one source (`ClipPart`) are joined the same way: their samples one
/// after another on one timeline, each metadata track continuous across the join (a kind's
/// track in each file is one track in the clip).
package enum ClipTrimmer {
    package static func trim(
        _ source: ClipSource, range: Range<Double>, to output: String, overwrite: Bool,
        progress: ExportProgress? = nil
    ) throws -> ExportSummary {
        try trim([ClipPart(source, offset: 0)], range: range, to: output, overwrite: overwrite, progress: progress)
    }

    package static func trim(
        _ parts: [ClipPart], range: Range<Double>, to output: String, overwrite: Bool,
        progress: ExportProgress? = nil
    ) throws -> ExportSummary {
        let started = ContinuousClock.now
        let join = try Join(parts, range: range)
        let file = try OutputFile(path: output, overwrite: overwrite)
        var groupsWritten: [String: Int] = [:]
        let bytes = try file.produce { path in
            let first = join.first
            let timescale = Int32(clamping: first.video.timescale)
            let writer = try MovieWriter(
                path: path, video: first.format, metadataTracks: join.formats,
                passthroughTracks: join.joinsSound ? first.soundTracks.map(ClipSource.passthroughFormat) : [],
                configuration: .init(
                    fragmentInterval: nil, syncEachFragment: false,
                    presentationRange: MediaTime(
                        seconds: range.lowerBound, timescale: timescale)..<MediaTime(
                            seconds: range.upperBound, timescale: timescale),
                    videoMatrix: first.video.matrix))
            // Metadata goes in first: the writer keeps it until the video reaches it.
            groupsWritten = try join.copyMetadataAndSound(into: writer)
            try join.copyVideo(into: writer) { count in
                guard let progress else { return }
                let elapsed = (ContinuousClock.now - started).milliseconds / 1000
                progress(Double(count) / Double(join.frames), Double(count) / max(elapsed, 1e-3))
            }
            try writer.finish()
        }
        return ExportSummary(
            output: output, mode: .trim, from: range.lowerBound, to: range.upperBound, frames: join.frames,
            metadataGroups: groupsWritten, bytes: bytes, seconds: (ContinuousClock.now - started).milliseconds / 1000,
            sourceIncomplete: parts.contains { $0.source.isIncomplete })
    }

    /// What a trim copies from each of its recordings.
    private struct Join {
        let first: ClipSource
        /// Where each part's share of the range lies in its own file.
        let shares: [(part: ClipPart, range: Range<Double>)]
        /// A kind's track in every file is one track of the clip.
        let formats: [MetadataTrackFormat]
        /// Sound is joined when every file has the same; otherwise the clip is silent.
        let joinsSound: Bool
        let frames: Int

        init(_ parts: [ClipPart], range: Range<Double>) throws {
            guard let first = parts.first?.source else { throw ExportError.badOption("no recording to export") }
            for part in parts.dropFirst() where part.source.format != first.format {
                throw ExportError.badOption(
                    "\(part.source.path) was recorded with other video settings than \(first.path): export them apart")
            }
            self.first = first
            shares = parts.compactMap { part in
                let local =
                    max(range.lowerBound - part.offset, 0)..<min(range.upperBound - part.offset, part.source.duration)
                return local.isEmpty ? nil : (part, local)
            }
            var formats: [MetadataTrackFormat] = []
            for share in shares {
                for format in share.part.source.metadataTracks.compactMap(\.metadataFormat)
                where !formats.contains(format) {
                    formats.append(format)
                }
            }
            self.formats = formats
            let soundEntries = first.soundTracks.map(\.sampleEntry)
            joinsSound = shares.allSatisfy { $0.part.source.soundTracks.map(\.sampleEntry) == soundEntries }
            frames = shares.reduce(0) { $0 + $1.part.source.sampleIndices(for: $1.range).count }
        }

        /// Each share's metadata groups (as they are, same key table, clipped to the range)
        /// and sound (the edit list cuts it where the video starts and ends); how many groups
        /// of each source track were copied.
        func copyMetadataAndSound(into writer: MovieWriter) throws -> [String: Int] {
            var groups: [String: Int] = [:]
            for share in shares {
                let source = share.part.source
                for track in source.metadataTracks {
                    guard let format = track.metadataFormat, let index = formats.firstIndex(of: format) else {
                        continue
                    }
                    groups[String(track.id), default: 0] += try copyMetadata(
                        track, of: source, range: share.range, into: writer, index: index, shift: share.part.offset)
                }
                for (index, track) in source.soundTracks.enumerated() where joinsSound {
                    for sample in try source.passthroughSamples(
                        of: track, during: share.range, shift: -share.part.offset)
                    {
                        try writer.append(sample, toPassthroughTrack: index)
                    }
                }
            }
            return groups
        }

        /// Each share's video samples as they are, on the joined timeline; `copied` hears
        /// the count now and then.
        func copyVideo(into writer: MovieWriter, copied: (Int) -> Void) throws {
            let timescale = Int32(clamping: first.video.timescale)
            var (last, count) = (ContinuousClock.now, 0)
            for share in shares {
                let source = share.part.source
                let offset = MediaTime(seconds: share.part.offset, timescale: timescale).value
                for index in source.sampleIndices(for: share.range) {
                    let sample = source.video.samples[index]
                    try writer.append(
                        VideoAccessUnit(
                            storedSample: try source.movie.readSample(sample), codec: source.format.codec,
                            decodeTime: MediaTime(value: source.decodeTimes[index] + offset, timescale: timescale),
                            presentationTime: MediaTime(
                                value: source.presentationTimes[index] + offset, timescale: timescale),
                            duration: MediaTime(value: Int64(sample.duration), timescale: timescale),
                            isKeyFrame: sample.isSync))
                    count += 1
                    if ContinuousClock.now - last > .milliseconds(200) {
                        last = .now
                        copied(count)
                    }
                }
            }
        }
    }

    /// Copies the samples of a metadata track presented during `range` into metadata track
    /// `index` of `writer`, each clipped to the range and timed `shift` seconds later (its
    /// place in a join); empty samples are left out (the writer fills gaps with them).
    /// Returns how many were copied.
    static func copyMetadata(
        _ track: MovieTrack, of source: ClipSource, range: Range<Double>, into writer: MovieWriter, index: Int,
        shift: Double = 0
    )
        throws -> Int
    {
        let scale = Int32(clamping: track.timescale)
        let (start, end) = (
            MediaTime(seconds: range.lowerBound, timescale: scale),
            MediaTime(seconds: range.upperBound, timescale: scale)
        )
        let offset = MediaTime(seconds: shift, timescale: scale)
        var copied = 0
        for sample in track.samples {
            let time = track.presentationTime(of: sample)
            let stop = time + MediaTime(value: Int64(sample.duration), timescale: scale)
            guard stop > start, time < end else { continue }
            let payload = try source.movie.readSample(sample)
            guard payload != MovieWriter.emptyMetadataSample else { continue }
            let (clippedStart, clippedStop) = (max(time, start), min(stop, end))
            try writer.appendSample(
                payload, time: clippedStart + offset, duration: clippedStop - clippedStart, toMetadataTrack: index)
            copied += 1
        }
        return copied
    }
}
