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
    /// With `object`, only the part of the frame around that object's box (its size again
    /// on every side), as the events page shows it.
    static func jpeg(
        path: String, at seconds: Double, metadata: PlayerMetadata, maximumWidth: Int?,
        around object: (kind: ObjectKind, id: Int)? = nil
    ) throws -> [UInt8] {
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
        var shown = picture
        if let object {
            guard
                let box = metadata.groups[object.kind.name]?.active(at: shownAt)?.first(where: { $0.id == object.id })?
                    .rect,
                let crop = picture.cropped(
                    to: NormalizedRect(
                        x: box.x - box.width, y: box.y - box.height, width: box.width * 3, height: box.height * 3))
            else { throw RecordingError.notFound("\(object.kind.objectName) \(object.id) at \(shownAt) s") }
            shown = crop
        }
        let width = min(maximumWidth ?? shown.width, shown.width)
        let snapshotter = try FrameSnapshotter(
            format: .jpeg, maximumWidth: max(16, width), maximumHeight: max(16, shown.height), jpegQuality: 3)
        return try snapshotter.snapshot(shown).bytes
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
