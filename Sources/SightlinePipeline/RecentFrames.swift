import SightlineBus
import SightlineCapture
import SightlineCore
import Synchronization

/// Copies of the frames the `frames` output published lately, for snapshots of what
/// detectors in other processes find in them: their groups come back, timed by the frame
/// they analysed, after the pipeline has gone on. Kept only while someone subscribes to
/// `snapshots/<source>/`; each is scaled to fit the snapshots' size.
///
/// `keep` is called on the frames output's queue, `picture(at:)` on the metadata input's
/// thread.
final class RecentFrames: Sendable {
    private let publisher: Publisher
    private let topic: String
    private let state: Mutex<State>

    private struct State {
        /// Made on the first frame kept.
        var copier: FrameSnapshotter?
        /// Oldest first, at most `capacity`.
        var frames: [(time: MediaTime, picture: PixelBuffer)] = []
    }

    /// Frames kept: over 3 s at the frames output's 5 a second, longer than a detector's
    /// objects are held for (`--objects-hold`, 1 s).
    static var capacity: Int { 16 }

    init(publisher: Publisher, sourceID: String) {
        self.publisher = publisher
        topic = Topic.make(kind: .snapshots, source: sourceID)
        state = Mutex(State())
    }

    /// Keeps a copy of a frame the frames output published.
    func keep(_ frame: VideoFrame) throws {
        guard publisher.hasSubscriber(for: topic) else {
            state.withLock { $0.frames.removeAll() }
            return
        }
        try state.withLock { state in
            if state.copier == nil {
                state.copier = try FrameSnapshotter(
                    format: .jpeg, maximumWidth: ObjectSnapshots.maximumSize, maximumHeight: ObjectSnapshots.maximumSize
                )
            }
            let picture = try state.copier!.copy(frame.pixels)
            if state.frames.count == Self.capacity { state.frames.removeFirst() }
            state.frames.append((frame.time, picture))
        }
    }

    /// The frame published at `time`, if it is still kept.
    func picture(at time: MediaTime) -> PixelBuffer? {
        state.withLock { state in state.frames.last { $0.time == time }?.picture }
    }
}
