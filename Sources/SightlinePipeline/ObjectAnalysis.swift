import Dispatch
import Logging
import Metrics
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import Synchronization

/// A detector output's delegate: finds objects (faces, codes) in each frame it is given,
/// gives them stable IDs and publishes their messages (`faces`, `codes`) and `events`.
///
/// Everything but `timing` runs on the output's serial queue, which owns the tracker and the
/// annotator (identities of faces), and the detector when there is one; their time is in
/// `timing`. With several detectors, successive frames are detected at the same time, each
/// on its detector's own queue (frame-level parallelism, for a file analysed whole), and
/// the output's queue tracks and publishes them in capture order.
public final class ObjectAnalysis<Detector: MetadataObjectDetector>: FrameDataOutputDelegate, @unchecked Sendable {
    public typealias Object = Detector.Object

    private let lanes: [DetectionLane<Detector>]
    /// Frames given to a lane and not yet published, oldest first; at most one per lane.
    private var inFlight: [DetectionJob<Object>] = []
    private var nextLane = 0
    private let tracker = ObjectTracker<Object>()
    private let annotator: (any TrackedObjectAnnotator<Object>)?
    private let publisher: Publisher
    private let sourceID: String
    private let logger: Logger
    private let timingState = Mutex(TimingCounters())
    /// swift-metrics (a no-op until a backend is bootstrapped, as `--metrics` does).
    private let detectionTimer: Metrics.Timer
    private let objectsPublished: Counter
    private let failures: Counter
    private var objectsWerePresent = false
    /// Where the last analysed frame ends: the final empty message, after the last
    /// objects, is timed there.
    private var lastFrame: (time: MediaTime, wallTimeNs: UInt64)?

    /// `detectors`: one, or one per frame to detect at the same time.
    public init(
        detectors: [Detector], annotator: (any TrackedObjectAnnotator<Object>)? = nil, publisher: Publisher,
        sourceID: String, logger: Logger
    ) {
        precondition(!detectors.isEmpty, "an analysis needs a detector")
        lanes = detectors.enumerated().map { DetectionLane(detector: $1, index: $0, of: detectors.count) }
        self.annotator = annotator
        self.publisher = publisher
        self.sourceID = sourceID
        self.logger = logger
        let dimensions = [("source", sourceID), ("detector", Object.eventObject)]
        detectionTimer = Metrics.Timer(label: "sightline_detection_seconds", dimensions: dimensions)
        objectsPublished = Counter(label: "sightline_objects_published_total", dimensions: dimensions)
        failures = Counter(label: "sightline_detection_failures_total", dimensions: dimensions)
    }

    /// How many frames are detected at the same time: the detectors. Any thread.
    public var framesAtOnce: Int { lanes.count }

    /// Detection time of every analysed frame. Any thread.
    public var timing: TimingCounters { timingState.withLock { $0 } }

    public func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        guard lanes.count > 1 else {
            let started = ContinuousClock.now
            publishObjects(lanes[0].detect(frame), in: frame, detectedIn: ContinuousClock.now - started)
            return
        }
        let job = DetectionJob<Object>(frame: frame)
        lanes[nextLane].start(job)
        nextLane = (nextLane + 1) % lanes.count
        inFlight.append(job)
        // Every lane busy: the oldest frame is published before another is taken.
        if inFlight.count == lanes.count { publishWhenDetected(inFlight.removeFirst()) }
    }

    /// Waits for a lane's frame, then publishes it.
    private func publishWhenDetected(_ job: DetectionJob<Object>) {
        let (detected, elapsed) = job.wait()
        publishObjects(detected, in: job.frame, detectedIn: elapsed)
    }

    /// Tracks, annotates and publishes one frame's objects, in capture order.
    private func publishObjects(_ result: Result<[Object], Error>, in frame: VideoFrame, detectedIn: Duration) {
        let started = ContinuousClock.now
        let detected: [Object]
        switch result {
        case .success(let objects): detected = objects
        case .failure(let error):
            failures.increment()
            logger.error("\(Object.eventObject) detection failed; frame skipped", metadata: ["error": "\(error)"])
            return
        }
        var update = tracker.update(detected, time: frame.time)
        var changed: [Object] = []
        if let annotator {
            changed = annotator.annotate(&update.objects, in: frame)
            annotator.objectsLeft(&update.left)
            // An object that enters already annotated says so in its enter event.
            let annotated = Dictionary(update.objects.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
            update.entered = update.entered.map { annotated[$0.objectID] ?? $0 }
            let entered = Set(update.entered.map(\.objectID))
            changed.removeAll { entered.contains($0.objectID) }
        }
        let elapsed = detectedIn + (ContinuousClock.now - started)
        timingState.withLock { $0.record(milliseconds: elapsed.milliseconds) }
        detectionTimer.recordNanoseconds(Int64(elapsed.seconds * 1e9))
        lastFrame = (frame.time + (frame.duration ?? .zero), frame.wallClockNanoseconds)

        for object in update.left { publishEvent(.leave, object, wallTimeNs: frame.wallClockNanoseconds) }
        for object in update.entered { publishEvent(.enter, object, wallTimeNs: frame.wallClockNanoseconds) }
        for object in changed { publishEvent(.identified, object, wallTimeNs: frame.wallClockNanoseconds) }
        // A message for every frame with objects, and one empty message when they are gone.
        if !update.objects.isEmpty || objectsWerePresent {
            objectsPublished.increment(by: update.objects.count)
            publisher.publish(
                Object.message(
                    update.objects, source: sourceID, time: frame.time, wallTimeNs: frame.wallClockNanoseconds))
        }
        objectsWerePresent = !update.objects.isEmpty
    }

    /// At the end of the run: frames still being detected are published, then objects
    /// still tracked leave. Call only after the output has drained, when its queue no
    /// longer touches the tracker.
    public func finish() {
        while !inFlight.isEmpty { publishWhenDetected(inFlight.removeFirst()) }
        let wallTime = lastFrame?.wallTimeNs ?? WallClock.nowNanoseconds()
        if objectsWerePresent, let last = lastFrame {
            publisher.publish(Object.message([], source: sourceID, time: last.time, wallTimeNs: wallTime))
            objectsWerePresent = false
        }
        var remaining = tracker.finish()
        annotator?.objectsLeft(&remaining)
        for object in remaining { publishEvent(.leave, object, wallTimeNs: wallTime) }
    }

    private func publishEvent(_ change: ObjectEvent.Change, _ object: Object, wallTimeNs: UInt64) {
        var details: Logger.Metadata = [
            "id": "\(object.objectID)", "time": "\((object.time.seconds * 1000).rounded() / 1000)s",
        ]
        for (key, value) in object.logDetails { details[key] = "\(value)" }
        logger.info("\(Object.eventObject) \(change.pastTense)", metadata: details)
        publisher.publish(
            Message(
                kind: .events, source: sourceID, time: object.time, wallTimeNs: wallTimeNs,
                event: Object.event(change, object)))
    }
}

/// A detector and the queue it detects on.
final class DetectionLane<Detector: MetadataObjectDetector>: @unchecked Sendable {
    private let detector: Detector
    private let queue: DispatchQueue

    init(detector: Detector, index: Int, of count: Int) {
        self.detector = detector
        queue = DispatchQueue(label: "sightline.detect.\(index + 1)-of-\(count)")
    }

    /// Detects on the caller's thread (the only lane: the output's queue).
    func detect(_ frame: VideoFrame) -> Result<[Detector.Object], Error> {
        Result { try detector.objects(in: frame) }
    }

    /// Detects on the lane's queue; `job` says when it is done.
    func start(_ job: DetectionJob<Detector.Object>) {
        queue.async { [self] in
            let started = ContinuousClock.now
            let result = detect(job.frame)
            job.complete(result, after: ContinuousClock.now - started)
        }
    }
}

/// One frame detected on a lane, waited for on the output's queue.
final class DetectionJob<Object>: @unchecked Sendable {
    let frame: VideoFrame
    private let done = DispatchSemaphore(value: 0)
    /// Written on the lane before `done` is signalled, read after it is waited for.
    private var outcome: (Result<[Object], Error>, Duration)?

    init(frame: VideoFrame) { self.frame = frame }

    func complete(_ result: Result<[Object], Error>, after elapsed: Duration) {
        outcome = (result, elapsed)
        done.signal()
    }

    func wait() -> (Result<[Object], Error>, Duration) {
        done.wait()
        return outcome!
    }
}
