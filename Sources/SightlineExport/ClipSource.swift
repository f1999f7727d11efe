import Foundation
import SightlineCapture
import SightlineCore
import SightlineMovie

/// Why a clip cannot be exported. Each is one line for the user; the source is never
/// touched.
package enum ExportError: Error, Equatable, CustomStringConvertible {
    case notAMovie(path: String, reason: String)
    case noVideo(path: String)
    case rangeOutside(from: Double, to: Double, duration: Double)
    case emptyRange(from: Double, to: Double)
    case unknownFace(Int, known: [Int])
    case outputExists(String)
    case cannotWrite(path: String, reason: String)
    /// An option that does not make sense, said in one line.
    case badOption(String)

    package var description: String {
        switch self {
        case .notAMovie(let path, let reason): reason.contains(path) ? reason : "\(path): \(reason)"
        case .noVideo(let path): "\(path) has no H.264 video track to export"
        case .rangeOutside(let from, let to, let duration):
            "the range \(Self.seconds(from))–\(Self.seconds(to)) is outside the movie (0–\(Self.seconds(duration)))"
        case .emptyRange(let from, let to): "--to (\(Self.seconds(to))) must come after --from (\(Self.seconds(from)))"
        case .unknownFace(let id, let known):
            "no face \(id) in this movie; its faces are \(known.isEmpty ? "none" : known.map(String.init).joined(separator: ", "))"
        case .outputExists(let path): "\(path) exists; pass --overwrite to replace it"
        case .cannotWrite(let path, let reason): "cannot write \(path): \(reason)"
        case .badOption(let text): text
        }
    }

    static func seconds(_ value: Double) -> String { String(format: "%.3f s", value) }
}

/// A movie opened for export: its H.264 video in presentation terms, its metadata tracks,
/// and where each face is. Times are movie times in seconds.
package struct ClipSource {
    package let path: String
    package let movie: MovieReader
    package let video: MovieTrack
    package let format: VideoTrackFormat
    /// Each video sample's presentation and decode time in movie ticks (the track's
    /// timescale, edit list applied), in decode order.
    let presentationTimes: [Int64]
    let decodeTimes: [Int64]
    /// The movie's length: the end of its last shown frame.
    package let duration: Double

    package init(path: String) throws {
        let movie: MovieReader
        do {
            movie = try MovieReader(path: path)
        } catch {
            throw ExportError.notAMovie(path: path, reason: "\(error)")
        }
        guard let video = movie.tracks.first(where: { $0.mediaType == "vide" && $0.videoCodec != nil }),
            !video.samples.isEmpty, let codec = video.videoCodec, let configuration = video.codecConfiguration
        else { throw ExportError.noVideo(path: path) }
        self.path = path
        self.movie = movie
        self.video = video
        format = try VideoTrackFormat(
            codec: codec, configuration: configuration, width: Int(video.width), height: Int(video.height),
            timescale: Int32(clamping: video.timescale))
        presentationTimes = video.samples.map { video.presentationTime(of: $0).value }
        decodeTimes = video.samples.map { $0.decodeTime &- video.editMediaTime }
        let ends = zip(presentationTimes, video.samples).map { $0 + Int64($1.duration) }
        duration = Double(ends.max() ?? 0) / Double(video.timescale)
    }

    /// Still being written, or cut off by a crash: only its complete fragments are read.
    package var isIncomplete: Bool { movie.isFragmented }

    /// The metadata tracks, with their groups in movie time.
    package var metadataTracks: [MovieTrack] { movie.tracks.filter { $0.metadataFormat != nil } }

    /// Audio tracks, copied into a clip as they are.
    package var soundTracks: [MovieTrack] { movie.tracks.filter { $0.mediaType == "soun" && !$0.samples.isEmpty } }

    /// How a sound track is written again: its handler, timescale and sample entry.
    static func passthroughFormat(_ track: MovieTrack) -> MovieWriter.PassthroughTrackFormat {
        MovieWriter.PassthroughTrackFormat(
            handler: track.mediaType, timescale: track.timescale, sampleEntry: track.sampleEntry)
    }

    /// The samples of `track` heard during `range`, timed `shift` seconds earlier (a clip
    /// whose video starts at 0 rather than at the range's start).
    func passthroughSamples(of track: MovieTrack, during range: Range<Double>, shift: Double = 0) throws
        -> [MovieWriter.PassthroughSample]
    {
        let scale = Double(track.timescale)
        let (start, end) = (Int64((range.lowerBound * scale).rounded()), Int64((range.upperBound * scale).rounded()))
        let offset = Int64((shift * scale).rounded())
        return try track.samples.compactMap { sample in
            let time = track.presentationTime(of: sample).value
            guard time + Int64(sample.duration) > start, time < end else { return nil }
            return MovieWriter.PassthroughSample(
                data: try movie.readSample(sample),
                time: MediaTime(value: time - offset, timescale: Int32(clamping: track.timescale)),
                duration: sample.duration)
        }
    }

    /// The picture shown at `seconds` (the last frame presented at or before it, or the
    /// first frame), as stored, decoded from the key frame before it; and when it is shown.
    package func picture(at seconds: Double) throws -> (time: Double, image: PixelBuffer) {
        let times = presentationTimes
        let wanted = MediaTime(seconds: max(0, seconds), timescale: Int32(clamping: video.timescale)).value
        let target =
            times.indices.filter { times[$0] <= wanted }.max { times[$0] < times[$1] }
            ?? times.indices.min { times[$0] < times[$1] }!
        let first = video.samples[...target].lastIndex(where: \.isSync) ?? 0
        // Frames shown before the target may be decoded after it (B-frames): decode on to
        // the next key frame.
        let last = video.samples[(target + 1)...].firstIndex(where: \.isSync).map { $0 - 1 } ?? video.samples.count - 1
        let decoder = try VideoSampleDecoder(codec: format.codec, configuration: format.configuration)
        let image = try decoder.decode(
            samples: try video.samples[first...last].map(movie.readSample),
            presentationTimes: Array(times[first...last]), wanted: times[target])
        return (Double(times[target]) / Double(video.timescale), image)
    }

    /// From the first to the last moment face `id` is in the faces track.
    package func presence(ofFace id: Int) throws -> Range<Double> {
        var known = Set<Int>()
        var span: Range<Double>?
        for track in metadataTracks {
            let groups = try movie.metadataGroups(track: track.id)
            for (index, group) in groups.enumerated() {
                let faces = group.items.compactMap(\.detectedFaceBounds).joined()
                known.formUnion(faces.map(\.faceID))
                guard faces.contains(where: { $0.faceID == id }) else { continue }
                let start = group.time.seconds
                let end =
                    group.duration.map { start + $0.seconds }
                    ?? (groups.dropFirst(index + 1).first?.time.seconds ?? duration)
                span = min(span?.lowerBound ?? start, start)..<max(span?.upperBound ?? end, end)
            }
        }
        guard let span else { throw ExportError.unknownFace(id, known: known.sorted()) }
        return span
    }

    /// Checks a requested range against the movie: `to` defaults to the end.
    package func checkedRange(from: Double?, to: Double?) throws -> Range<Double> {
        let start = from ?? 0
        let end = to ?? duration
        guard start >= 0, start < duration, end > 0 else {
            throw ExportError.rangeOutside(from: start, to: end, duration: duration)
        }
        guard end > start else { throw ExportError.emptyRange(from: start, to: end) }
        return start..<min(end, duration)
    }

    /// The samples a clip of `range` needs, in decode order: from the key frame at or before
    /// its start to the last frame shown before its end (and frames between needed to
    /// decode it).
    func sampleIndices(for range: Range<Double>) -> ClosedRange<Int> {
        let scale = Double(video.timescale)
        let (start, end) = (Int64((range.lowerBound * scale).rounded()), Int64((range.upperBound * scale).rounded()))
        let keyFrames = video.samples.indices.filter { video.samples[$0].isSync }
        let first = keyFrames.last { presentationTimes[$0] <= start } ?? keyFrames.first ?? 0
        let last = video.samples.indices.last { presentationTimes[$0] < end } ?? first
        return first...max(first, last)
    }
}
