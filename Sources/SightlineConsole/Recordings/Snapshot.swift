import SightlineCapture
import SightlineCore
import SightlineMovie

/// A JPEG of one frame of a recording with its faces and codes drawn in, as the frame is
/// stored (the player turns it by the orientation track; a snapshot does not):
/// `/api/recordings/<name>/snapshot?t=SECONDS`.
///
/// The frame is decoded from the nearest key frame at or before it with libavcodec, the
/// boxes are drawn into the decoded picture, and the result is scaled to `maximumWidth`
/// and encoded with libavcodec's JPEG encoder.
enum Snapshot {
    static func jpeg(path: String, at seconds: Double, metadata: PlayerMetadata, maximumWidth: Int?) throws -> [UInt8] {
        let movie = try MovieReader(path: path)
        guard let track = movie.tracks.first(where: { $0.mediaType == "vide" && $0.format == "avc1" }),
            !track.samples.isEmpty, let avcC = track.avcConfiguration
        else {
            throw RecordingError.unreadable(name: metadata.name, reason: "it has no H.264 video to take a frame from")
        }

        // The frame shown at `seconds`: the last one presented at or before it.
        let times = track.samples.map { track.presentationTime(of: $0).value }
        let wanted = MediaTime(seconds: max(0, seconds), timescale: Int32(clamping: track.timescale)).value
        let target =
            times.indices.filter { times[$0] <= wanted }.max { times[$0] < times[$1] }
            ?? times.indices.min { times[$0] < times[$1] }!
        let first = track.samples[...target].lastIndex(where: \.isSync) ?? 0
        // Frames shown before the target may be decoded after it (B-frames): decode on to
        // the next key frame.
        let last = track.samples[(target + 1)...].firstIndex(where: \.isSync).map { $0 - 1 } ?? track.samples.count - 1
        let decoder = try H264SampleDecoder(avcConfiguration: avcC)
        let picture = try decoder.decode(
            samples: try track.samples[first...last].map(movie.readSample),
            presentationTimes: Array(times[first...last]), wanted: times[target])

        let shownAt = Double(times[target]) / Double(track.timescale)
        let thickness = max(2, picture.width / 240)
        for face in metadata.faces.active(at: shownAt) ?? [] {
            picture.strokeRect(face.rect, colour: .face, thickness: thickness)
        }
        for code in metadata.codes.active(at: shownAt) ?? [] {
            picture.strokeRect(code.rect, colour: .code, thickness: thickness)
        }
        let width = min(maximumWidth ?? picture.width, picture.width)
        let snapshotter = try FrameSnapshotter(
            format: .jpeg, maximumWidth: max(16, width), maximumHeight: max(16, picture.height), jpegQuality: 3)
        return try snapshotter.snapshot(picture).bytes
    }
}

extension LiveObject {
    var rect: NormalizedRect { NormalizedRect(x: bounds[0], y: bounds[1], width: bounds[2], height: bounds[3]) }
}

extension Array {
    /// The value of the group shown at `seconds` in a list of timed groups, as the player
    /// finds it: the last group starting at or before then, unless its duration has run out.
    func active<Value>(at seconds: Double) -> Value? where Element == PlayerMetadata.Group<Value> {
        guard let group = last(startingAtOrBefore: seconds, start: \.t) else { return nil }
        if let duration = group.d, seconds >= group.t + duration - 1e-6 { return nil }
        return group.v
    }
}
