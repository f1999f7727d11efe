import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import Synchronization

/// A detector output's delegate: finds objects (faces, codes) in each frame it is given,
/// gives them stable IDs and publishes their messages (`faces`, `codes`) and `events`.
///
/// Everything but `timing` runs on the output's serial queue, which owns the detector and
/// the tracker.
public final class ObjectAnalysis<Detector: MetadataObjectDetector>: FrameDataOutputDelegate, @unchecked Sendable {
    public typealias Object = Detector.Object

    private let detector: Detector
    private let tracker = ObjectTracker<Object>()
    private let publisher: Publisher
    private let sourceID: String
    private let logger: Logger
    private let timingState = Mutex(TimingCounters())
    private var objectsWerePresent = false
    /// Where the last analysed frame ends: the final empty message, after the last
    /// objects, is timed there.
    private var lastFrame: (time: MediaTime, wallTimeNs: UInt64)?

    public init(detector: Detector, publisher: Publisher, sourceID: String, logger: Logger) {
        self.detector = detector
        self.publisher = publisher
        self.sourceID = sourceID
        self.logger = logger
    }

    /// Detection time of every analysed frame. Any thread.
    public var timing: TimingCounters { timingState.withLock { $0 } }

    public func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        let started = ContinuousClock.now
        let detected: [Object]
        do {
            detected = try detector.objects(in: frame)
        } catch {
            logger.error("\(Object.eventObject) detection failed; frame skipped", metadata: ["error": "\(error)"])
            return
        }
        timingState.withLock { $0.record(milliseconds: (ContinuousClock.now - started).milliseconds) }
        let update = tracker.update(detected, time: frame.time)
        lastFrame = (frame.time + (frame.duration ?? .zero), frame.wallClockNanoseconds)

        for object in update.left { publishEvent(.leave, object, wallTimeNs: frame.wallClockNanoseconds) }
        for object in update.entered { publishEvent(.enter, object, wallTimeNs: frame.wallClockNanoseconds) }
        // A message for every frame with objects, and one empty message when they are gone.
        if !update.objects.isEmpty || objectsWerePresent {
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
        for object in tracker.finish() { publishEvent(.leave, object, wallTimeNs: wallTime) }
    }

    private func publishEvent(_ change: ObjectEvent.Change, _ object: Object, wallTimeNs: UInt64) {
        var details: Logger.Metadata = [
            "id": "\(object.objectID)", "time": "\((object.time.seconds * 1000).rounded() / 1000)s",
        ]
        for (key, value) in object.logDetails { details[key] = "\(value)" }
        logger.info("\(Object.eventObject) \(change == .enter ? "entered" : "left")", metadata: details)
        publisher.publish(
            Message(
                kind: .events, source: sourceID, time: object.time, wallTimeNs: wallTimeNs,
                event: Object.event(change, object)))
    }
}
