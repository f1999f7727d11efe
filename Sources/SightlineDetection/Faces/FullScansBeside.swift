import Foundation
import SightlineCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Full scans beside a live source's tracking. A full scan of a 1280x720 frame takes longer
/// than a frame's time once the cores are shared (several cameras, or `--upsample 1`), and
/// a frame that waits for one makes the next frames late, which a live source drops. So a
/// detector of its own scans the frame due a full scan on a thread of its own, at a lower
/// priority, while the tracking detector scans that frame and the next ones where faces can
/// be and publishes them on time. When the full scan is done, the faces it found that
/// tracking does not follow yet are followed from the next frame (`RegionTracking.add`):
/// a face that appeared away from the edges is found a few frames later than a full scan in
/// line would find it, and never a frame is late for it. A frame where the view changed (a
/// cut, a preset) has its full scan started at once, ahead of any under way. Every box
/// published is still a scan's own.
///
/// `start(_:)`, `restart(_:)`, `finished()` and `waitUntilIdle()` are called on the tracking detector's
/// queue; the scan runs on the `full-scans` thread.
package final class FullScansBeside: Sendable {
    private let scout: Scout
    /// The scan under way or done and not taken yet; only the tracking detector's queue
    /// touches it (the lock is never contended).
    private let current = Mutex<PendingResult<Result<[FaceDetection], Error>>?>(nil)

    /// For a tracking detector with these settings: the full scans are theirs, on one thread.
    package init(for configuration: FaceDetector.Configuration) throws {
        var wholeFrames = configuration
        wholeFrames.threads = 1
        wholeFrames.fullScanInterval = 1
        scout = try Scout(configuration: wholeFrames)
        Thread.start(named: "full-scans") { [scout] in scout.run() }
    }

    deinit { scout.stop() }

    /// Scans `blank` as a first frame of its size would be (buffers sized before the first
    /// real frame). On the thread that builds the pipeline, before any frame.
    func prepare(_ blank: PixelBuffer) throws {
        _ = try scout.detector.withLock { try $0.detect(in: blank) }
    }

    /// Starts a full scan of `pixels`, unless one is under way or its faces have not been
    /// taken: whether it started.
    func start(_ pixels: PixelBuffer) -> Bool {
        current.withLock { current in
            guard current == nil else { return false }
            let scan = PendingResult<Result<[FaceDetection], Error>>()
            current = scan
            scout.scan(pixels, into: scan)
            return true
        }
    }

    /// Starts a full scan of `pixels` whatever is under way (the view changed: what a scan of
    /// an earlier frame finds is of no use now). A scan under way finishes first, unheard.
    func restart(_ pixels: PixelBuffer) {
        let scan = PendingResult<Result<[FaceDetection], Error>>()
        current.withLock { $0 = scan }
        scout.scan(pixels, into: scan)
    }

    /// The faces of the full scan started last, once it is done; nil while it is under way
    /// or when none was started since they were last taken.
    func finished() throws -> [FaceDetection]? {
        let scan = current.withLock { current -> PendingResult<Result<[FaceDetection], Error>>? in
            guard let scan = current, scan.isComplete else { return nil }
            current = nil
            return scan
        }
        return try scan?.wait().get()
    }

    /// Waits until the full scan under way, if any, is done (for tests that want the same
    /// answers on any machine: its faces are then taken at the next frame).
    package func waitUntilIdle() {
        current.withLock { current in _ = current?.wait() }
    }
}

/// The full-scan detector and the one frame it is asked to scan, shared with its thread
/// (which never holds the `FullScansBeside`, so the thread ends when that goes).
private final class Scout: Sendable {
    /// Used on the `full-scans` thread only, and before it by `prepare`.
    let detector: Mutex<FaceDetector>
    private let job = Mutex<(next: (PixelBuffer, PendingResult<Result<[FaceDetection], Error>>)?, stopping: Bool)>(
        (nil, false))
    /// Signalled once for each scan asked for and once for `stop()`.
    private let ready = DispatchSemaphore(value: 0)

    init(configuration: FaceDetector.Configuration) throws {
        detector = Mutex(try FaceDetector(configuration: configuration))
    }

    func scan(_ pixels: PixelBuffer, into result: PendingResult<Result<[FaceDetection], Error>>) {
        job.withLock { $0.next = (pixels, result) }
        ready.signal()
    }

    func stop() {
        job.withLock { $0.stopping = true }
        ready.signal()
    }

    /// The thread: at nice 10, so the cores go to the region scans that publish each frame
    /// first and the full scan takes what they leave (Linux keeps a nice value per thread).
    func run() {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        while true {
            ready.wait()
            let (next, stopping) = job.withLock { job in
                defer { job.next = nil }
                return (job.next, job.stopping)
            }
            if let (pixels, result) = next {
                result.complete(Result { try detector.withLock { try $0.detect(in: pixels) } })
            } else if stopping {
                return
            }
        }
    }
}
