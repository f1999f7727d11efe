import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import Synchronization

/// What the `frames` output publishes (`run --frames`).
package struct FramesConfiguration: Sendable {
    package var format: FrameInfo.Format
    /// Frames are scaled to fit this box, keeping their shape.
    package var maximumWidth = 320
    package var maximumHeight = 240
    /// At most this many frames a second of media time.
    package var rate = 5.0
    /// libavcodec's JPEG quantiser scale, 2 (best) to 31.
    package var jpegQuality = 5

    package init(format: FrameInfo.Format) { self.format = format }
}

/// The `frames` output's delegate: publishes downscaled frames so that detectors in other
/// services, in any language, can subscribe to them. Its output keeps only the newest
/// frame waiting; frames within `1/rate` of the last one published, or while nobody
/// subscribes to `frames/<source>/`, are passed over without work.
///
/// Everything but the counters runs on the output's serial queue, which owns the snapshotter.
final class FramesPublishing: FrameDataOutputDelegate, Sendable {
    private let configuration: FramesConfiguration
    private let publisher: Publisher
    private let sourceID: String
    private let topic: String
    private let timingState = Mutex(TimingCounters())
    /// The output queue's: it holds the lock while it takes a frame (never contended; the
    /// compiler checks that the snapshotter is used under it).
    private let snapshotting: Mutex<Snapshotting>

    private struct Snapshotting {
        let snapshotter: FrameSnapshotter
        var failures: RateLimitedLog
        var lastPublished: MediaTime?
    }

    /// Copies of the frames published, for other detectors' snapshots.
    let recent: RecentFrames

    init(configuration: FramesConfiguration, publisher: Publisher, sourceID: String, logger: Logger) throws {
        guard configuration.rate > 0 else { throw SightlineError.invalidArgument("the frames rate must be positive") }
        let snapshotter = try FrameSnapshotter(
            format: configuration.format, maximumWidth: configuration.maximumWidth,
            maximumHeight: configuration.maximumHeight, jpegQuality: configuration.jpegQuality)
        self.configuration = configuration
        self.publisher = publisher
        self.sourceID = sourceID
        self.topic = Topic.make(kind: .frames, source: sourceID)
        recent = RecentFrames(publisher: publisher, sourceID: sourceID)
        snapshotting = Mutex(Snapshotting(snapshotter: snapshotter, failures: RateLimitedLog(logger: logger)))
    }

    /// Time to scale (and encode) each published frame; `count` is frames published.
    var timing: TimingCounters { timingState.withLock { $0 } }

    func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        snapshotting.withLock { publish(frame, &$0) }
    }

    private func publish(_ frame: VideoFrame, _ snapshotting: inout Snapshotting) {
        // Half a frame of slack, so 5 a second from 30 fps is every 6th frame, not every 7th.
        let interval = 1 / configuration.rate - 0.5 * (frame.duration?.seconds ?? 0)
        if let last = snapshotting.lastPublished, (frame.time - last).seconds < interval { return }
        guard publisher.hasSubscriber(for: topic) else { return }
        let started = ContinuousClock.now
        do {
            let (info, bytes) = try snapshotting.snapshotter.snapshot(frame.pixels)
            timingState.withLock { $0.record(milliseconds: (ContinuousClock.now - started).milliseconds) }
            snapshotting.lastPublished = frame.time
            publisher.publish(
                Message(
                    kind: .frames, source: sourceID, time: frame.time, wallTimeNs: frame.wallClockNanoseconds,
                    frame: info),
                payload: bytes)
            try recent.keep(frame)
        } catch {
            snapshotting.failures.warning(
                "a frame could not be published (or kept for snapshots): \(error)", reason: "snapshot")
        }
    }
}
