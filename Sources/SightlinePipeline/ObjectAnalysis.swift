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
/// Everything but `timing` runs on the output's serial queue, which owns the detector, the
/// tracker and the annotator (identities of faces), whose time `timing` includes.
public final class ObjectAnalysis<Detector: MetadataObjectDetector>: FrameDataOutputDelegate, @unchecked Sendable {
    public typealias Object = Detector.Object

    private let detector: Detector
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

    public init(
        detector: Detector, annotator: (any TrackedObjectAnnotator<Object>)? = nil, publisher: Publisher,
        sourceID: String, logger: Logger
    ) {
        self.detector = detector
        self.annotator = annotator
        self.publisher = publisher
        self.sourceID = sourceID
        self.logger = logger
        let dimensions = [("source", sourceID), ("detector", Object.eventObject)]
        detectionTimer = Metrics.Timer(label: "sightline_detection_seconds", dimensions: dimensions)
        objectsPublished = Counter(label: "sightline_objects_published_total", dimensions: dimensions)
        failures = Counter(label: "sightline_detection_failures_total", dimensions: dimensions)
    }

    /// Detection time of every analysed frame. Any thread.
    public var timing: TimingCounters { timingState.withLock { $0 } }

    public func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        let started = ContinuousClock.now
        let detected: [Object]
        do {
            detected = try detector.objects(in: frame)
        } catch {
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
        let elapsed = ContinuousClock.now - started
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

    /// At the end of the run: objects still tracked leave. Call only after the output has
    /// drained, when its queue no longer touches the tracker.
    public func finish() {
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
