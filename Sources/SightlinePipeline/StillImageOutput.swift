import SightlineCapture
import SightlineCore
import Synchronization

/// A picture of a live source taken while it runs, as `AVCapturePhotoOutput` takes one from
/// a running session: the newest frame the detectors took, as a JPEG, or with `boxes` the
/// newest frame they have analysed with its faces and codes drawn in. It holds references to
/// frames the pipeline made anyway, so taking no picture costs nothing, and a picture is
/// encoded on the asking thread, never on the pipeline's.
///
/// The analyses call `frameArrived` and `frameAnalysed` on their output queues; `jpeg` is
/// called from any thread (the operations server's).
package final class StillImageOutput: Sendable {
    private let state = Mutex(State())

    private struct State {
        var newest: VideoFrame?
        /// The newest analysed frame of each detector, by the object it finds, with what it found.
        var analysed: [String: (frame: VideoFrame, sightings: [ObjectSnapshots.Sighting])] = [:]
    }

    init() {}

    func frameArrived(_ frame: VideoFrame) {
        state.withLock { state in
            if state.newest.map({ $0.time < frame.time }) ?? true { state.newest = frame }
        }
    }

    func frameAnalysed(_ frame: VideoFrame, object: String, sightings: [ObjectSnapshots.Sighting]) {
        state.withLock { $0.analysed[object] = (frame, sightings) }
    }

    /// The picture as a JPEG no taller than `height` (never enlarged); nil before the first
    /// frame. With `boxes`, every detector's objects in that frame are drawn in.
    package func jpeg(boxes: Bool, height: Int?) throws -> [UInt8]? {
        let (frame, sightings) = state.withLock { state -> (VideoFrame?, [ObjectSnapshots.Sighting]) in
            guard boxes else { return (state.newest, []) }
            guard let newest = state.analysed.values.max(by: { $0.frame.time < $1.frame.time })?.frame else {
                return (nil, [])
            }
            return (newest, state.analysed.values.filter { $0.frame.time == newest.time }.flatMap(\.sightings))
        }
        guard let frame else { return nil }
        let pixels = frame.pixels
        let snapshotter = try FrameSnapshotter(
            format: .jpeg, maximumWidth: max(16, pixels.width),
            maximumHeight: max(16, min(height ?? .max, pixels.height)),
            jpegQuality: 3)
        return try snapshotter.snapshot(pixels) { picture in
            for sighting in sightings {
                picture.strokeRect(
                    sighting.bounds, colour: sighting.colour.fullRangeYCbCr, thickness: max(2, picture.width / 240))
            }
        }.bytes
    }
}
