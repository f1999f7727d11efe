import Dispatch
import SightlineCore
import Synchronization

/// Full scans made ahead, for a tracking detector analysing a file whole: a full scan does
/// not depend on the frames before it (the region scans between do), so a detector of its
/// own scans every `fullScanInterval`-th frame whole on its own queue as soon as the frame
/// arrives, while the tracking detector is still scanning the frames before it around the
/// faces it tracks. The answers are the tracking detector's own: a full scan finds the same
/// faces on any detector with the same settings.
///
/// `frameArrived(_:)` is called on one queue, in capture order, and `fullScan(of:)` on
/// another (the tracking detector's), in the same order.
package final class FullScansAhead: Sendable {
    /// The whole-frame detector, used on `queue` only (the lock is never contended).
    private let scout: Mutex<FaceDetector>
    private let queue = DispatchQueue(label: "sightline.detect.full-scans-ahead")
    private let interval: Int
    /// Frames that have arrived; counted only by `frameArrived(_:)`, on its one queue.
    private let arrived = Atomic(0)
    private typealias Scan = PendingResult<Result<[FaceDetection], Error>>
    /// Full scans started and not yet taken, oldest first.
    private let started = Mutex<[(time: MediaTime, scan: Scan)]>([])

    /// For a tracking detector with these settings (`fullScanInterval` > 1, no motion gate:
    /// which frames are scanned whole then depends only on their number).
    package init(for configuration: FaceDetector.Configuration) throws {
        precondition(configuration.fullScanInterval > 1 && !configuration.motionGate)
        var wholeFrames = configuration
        wholeFrames.threads = Self.threads(of: configuration)
        wholeFrames.fullScanInterval = 1
        scout = Mutex(try FaceDetector(configuration: wholeFrames))
        interval = configuration.fullScanInterval
    }

    /// How many frames the tracking detector should be told of ahead of the one it detects,
    /// for a full scan to be under way by the time it is needed: the interval, at most 8
    /// (frames in flight cost memory; with more frames between full scans, a full scan
    /// has more time to be made in).
    package var framesAhead: Int { min(interval, 8) }

    /// The threads of `configuration` that make the full scans, about half of the work: the
    /// tracking detector spreads its region scans over the others.
    package static func threads(of configuration: FaceDetector.Configuration) -> Int {
        max(1, configuration.threads / 2)
    }

    /// A frame that will be detected: when it is due a full scan, the scan starts.
    package func frameArrived(_ frame: VideoFrame) {
        let number = arrived.add(1, ordering: .relaxed).oldValue
        guard number % interval == 0 else { return }
        let scan = Scan()
        started.withLock { $0.append((frame.time, scan)) }
        queue.async { [self] in scan.complete(Result { try scout.withLock { try $0.detect(in: frame.pixels) } }) }
    }

    /// The full scan of `frame`, waited for, when one was started for it; nil when not. Scans
    /// of earlier frames left untaken (a frame that failed) are dropped.
    func fullScan(of frame: VideoFrame) throws -> [FaceDetection]? {
        let scan = started.withLock { started -> Scan? in
            started.removeAll { $0.time < frame.time }
            guard started.first?.time == frame.time else { return nil }
            return started.removeFirst().scan
        }
        return try scan?.wait().get()
    }
}
