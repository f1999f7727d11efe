import CDlib
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
/// cut, a preset, a zoom) has a whole scan started as soon as the one under way is done, and
/// that one's faces are still followed (in a view that keeps changing, a scan's faces are
/// the latest there are). Every box published is still a scan's own.
///
/// A scan beside looks only where the frame shows what the one scanned before it did not
/// (`ScannedView`: what a pan uncovered, what changed), and every few scans at the whole
/// frame: a full scan's faces anywhere else are followed already.
///
/// The scans give way to the frames of every live source in the process: while the frames
/// being analysed fill every core (`frameAnalysed(started:)`, from each analysis output), a scan
/// beside waits before each of its jobs (`FramePath.h`), so that several cameras' full scans
/// take only what their frames leave and do not make one of them drop a frame as late. A
/// whole scan after a cut does not give way: until it is done nothing is followed, and every
/// frame's faces are missed.
///
/// `start(_:)`, `restart(_:)`, `finished()` and `waitUntilIdle()` are called on the tracking detector's
/// queue; the scan runs on the `full-scans` thread.
package final class FullScansBeside: Sendable {
    private let scout: Scout
    /// The scans asked for and not taken yet, oldest first: at most the one under way, one
    /// waiting for it, and those done. Only the tracking detector's queue touches it (the
    /// lock is never contended).
    private let pending = Mutex<[PendingResult<Result<[FaceDetection], Error>>]>([])

    /// For a tracking detector with these settings: the full scans are theirs, on one thread.
    package init(for configuration: FaceDetector.Configuration) throws {
        var wholeFrames = configuration
        wholeFrames.threads = 1
        wholeFrames.fullScanInterval = 1
        scout = try Scout(configuration: wholeFrames)
        Thread.start(named: "full-scans") { [scout] in scout.run() }
    }

    deinit { scout.stop() }

    /// A live source's frame started (true) or stopped (false) being analysed. Any thread.
    package static func frameAnalysed(started: Bool) { sl_frames_analysing(started ? 1 : -1) }

    /// How many of the scans' jobs waited for live frames being analysed so far.
    package var waitsForFramePath: Int { scout.detector.withLock { $0.waitsForFramePath } }

    /// Scans `blank` as a first frame of its size would be (buffers sized before the first
    /// real frame). On the thread that builds the pipeline, before any frame.
    func prepare(_ blank: PixelBuffer) throws {
        _ = try scout.detector.withLock { try $0.detect(in: blank) }
    }

    /// Starts a full scan of `pixels`, unless one is under way or its faces have not been
    /// taken: whether it started.
    func start(_ pixels: PixelBuffer) -> Bool {
        pending.withLock { pending in
            guard pending.isEmpty else { return false }
            let scan = PendingResult<Result<[FaceDetection], Error>>()
            pending.append(scan)
            scout.scan(pixels, whole: false, into: scan)
            return true
        }
    }

    /// Scans `pixels` whole next, whatever is under way (the view changed), in place of a
    /// scan still waiting to start.
    func restart(_ pixels: PixelBuffer) {
        let scan = PendingResult<Result<[FaceDetection], Error>>()
        pending.withLock { $0.append(scan) }
        scout.scan(pixels, whole: true, into: scan)
    }

    /// How many scans beside looked at the whole frame, and how many only at what it showed
    /// new (`ScannedView`).
    package var counts: (whole: Int, partial: Int) { scout.counts.withLock { $0 } }

    /// The faces of the latest scan done since they were last taken that found any (of
    /// those asked for before any still under way; one never started finds none); nil when
    /// none is done.
    func finished() throws -> [FaceDetection]? {
        let done = pending.withLock { pending in
            let count = pending.prefix { $0.isComplete }.count
            defer { pending.removeFirst(count) }
            return Array(pending.prefix(count))
        }
        guard !done.isEmpty else { return nil }
        return try done.map { try $0.wait().get() }.last { !$0.isEmpty } ?? []
    }

    /// Waits until every scan asked for is done (for tests that want the same answers on
    /// any machine: the faces are then taken at the next frame).
    package func waitUntilIdle() {
        pending.withLock { pending in
            for scan in pending { _ = scan.wait() }
        }
    }
}

/// The full-scan detector and the one frame it is asked to scan, shared with its thread
/// (which never holds the `FullScansBeside`, so the thread ends when that goes).
private final class Scout: Sendable {
    /// Used on the `full-scans` thread only, and before it by `prepare`.
    let detector: Mutex<FaceDetector>
    /// The frame scanned last; on the `full-scans` thread only.
    private let view = Mutex(ScannedView())
    let counts = Mutex((whole: 0, partial: 0))
    private let job = Mutex<(next: Job?, stopping: Bool)>((nil, false))

    /// A frame to scan, whole whatever it shows when `whole`, and where its faces go.
    private struct Job {
        let pixels: PixelBuffer
        let whole: Bool
        let result: PendingResult<Result<[FaceDetection], Error>>
    }
    /// Signalled once for each scan asked for and once for `stop()`.
    private let ready = DispatchSemaphore(value: 0)

    init(configuration: FaceDetector.Configuration) throws {
        self.detector = Mutex(try FaceDetector(configuration: configuration))
    }

    /// Asks for a scan; one asked for before that has not started is not made, and finds
    /// nothing.
    func scan(_ pixels: PixelBuffer, whole: Bool, into result: PendingResult<Result<[FaceDetection], Error>>) {
        let replaced = job.withLock { job in
            defer { job.next = Job(pixels: pixels, whole: whole, result: result) }
            return job.next
        }
        replaced?.result.complete(.success([]))
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
            if let next {
                next.result.complete(Result { try scan(next) })
            } else if stopping {
                return
            }
        }
    }

    /// The whole frame, or what it shows new.
    private func scan(_ job: Job) throws -> [FaceDetection] {
        let unscanned = try view.withLock { view in
            if job.whole {
                try view.scannedWhole(job.pixels)
                return ScannedView.Unscanned.whole
            }
            return try view.unscanned(in: job.pixels)
        }
        return try detector.withLock { detector in
            detector.yieldToFramePath(!job.whole)
            switch unscanned {
            case .whole:
                counts.withLock { $0.whole += 1 }
                return try detector.detect(in: job.pixels)
            case .areas(let areas):
                counts.withLock { $0.partial += 1 }
                return try detector.detect(in: job.pixels, reaching: areas)
            }
        }
    }
}

extension FaceDetector {
    /// How far beyond a box a change alters the features of its filter window, in box
    /// widths: HOG's cells, and the blocks of cells each is normalised over, reach two cells
    /// of the window's ten.
    static let featureReach = 0.25

    /// The faces `detect(in:)` finds with a box near enough to one of `areas` (pixels of the
    /// frame) that what the area shows counts in its score: each area is looked at, at each
    /// pyramid level, grown by that level's box and its features' reach.
    func detect(in pixels: PixelBuffer, reaching areas: [RegionTracking.Box]) throws -> [FaceDetection] {
        guard !areas.isEmpty else { return [] }
        let sizes = boxSizes(width: pixels.width, height: pixels.height)
        return try detect(
            in: pixels,
            regions: sizes.flatMap { size in
                areas.map {
                    Region(
                        area: $0.grown(by: size * (1 + Self.featureReach)), sizes: size...size, neighbourLevels: false)
                }
            })
    }
}
