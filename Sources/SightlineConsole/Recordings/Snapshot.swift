import SightlineCapture
import SightlineCore
import SightlineExport
import SightlineMovie

/// A JPEG of one frame of a recording with its objects (faces, codes) drawn in, as the frame is
/// stored (the player turns it by the orientation track; a snapshot does not):
/// `/api/recordings/<name>/snapshot?t=SECONDS`.
///
/// The frame is decoded from the nearest key frame at or before it (`ClipSource`), the
/// boxes are drawn into the decoded picture, and the result is scaled to `maximumWidth`
/// and encoded with libavcodec's JPEG encoder.
enum Snapshot {
    static func jpeg(path: String, at seconds: Double, metadata: PlayerMetadata, maximumWidth: Int?) throws -> [UInt8] {
        // A snapshot is a one-frame export: the same reading and decoding.
        let source: ClipSource
        do {
            source = try ClipSource(path: path)
        } catch let error as ExportError {
            throw RecordingError.unreadable(name: metadata.name, reason: "\(error)")
        }
        let (shownAt, picture) = try source.picture(at: seconds)
        let thickness = max(2, picture.width / 240)
        for kind in ObjectKind.all {
            for object in metadata.groups[kind.name]?.active(at: shownAt) ?? [] {
                picture.strokeRect(object.rect, colour: kind.colour(of: object).ycbcr, thickness: thickness)
            }
        }
        let width = min(maximumWidth ?? picture.width, picture.width)
        let snapshotter = try FrameSnapshotter(
            format: .jpeg, maximumWidth: max(16, width), maximumHeight: max(16, picture.height), jpegQuality: 3)
        return try snapshotter.snapshot(picture).bytes
    }
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
