import Dispatch
import Logging
import Metrics
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineMovie
import Synchronization

/// A detector output's delegate: finds objects (faces, codes) in each frame it is given,
/// gives them stable IDs and publishes their messages (`faces`, `codes`), `events` and
/// `snapshots`.
///
/// Everything but `timing` runs on the output's serial queue, which owns the tracker and the
/// annotator (identities of faces) through `tracking`, a lock nobody else takes, and the
/// detector when there is one; their time is in `timing`. With several detectors, successive frames are detected at the same time, each
/// by whichever detector is free first, on its own queue (frame-level parallelism, for a
/// file analysed whole), and the output's queue tracks and publishes them in capture order.
package final class ObjectAnalysis<Detector: MetadataObjectDetector>: FrameDataOutputDelegate, Sendable {
    package typealias Object = Detector.Object

    private let lanes: DetectionLanes<Detector>
    /// Two per lane, so that a lane that finishes before the oldest frame has the next one
    /// waiting; twice as many as a detector wants told of ahead, and the one it detects (a
    /// full scan made ahead then has time to spare when another takes longer). 1: each frame
    /// is detected on the output's queue as it comes.
    private let framesInFlight: Int
    private let tracking: Mutex<Tracking>
    private let publisher: Publisher
    private let sourceID: String
    private let logger: Logger
    private let timingState = Mutex(TimingCounters())
    /// swift-metrics (a no-op until a backend is bootstrapped, as `--metrics` does).
    private let detectionTimer: Metrics.Timer
    private let objectsPublished: Counter
    private let failures: Counter
    /// Its kind's, for snapshots' boxes.
    private let colour: RGBColour
    /// Pictures of the running source, taken on request; nil when nobody can ask (a file).
    private let stills: StillImageOutput?

    /// What the output's queue keeps from frame to frame.
    private struct Tracking {
        let tracker = ObjectTracker<Object>()
        let annotator: (any TrackedObjectAnnotator<Object>)?
        /// Frames given to the lanes and not yet published, oldest first, at most
        /// `framesInFlight`.
        var inFlight: [DetectionJob<Object>] = []
        var objectsWerePresent = false
        /// Where the last analysed frame ends: the final empty message, after the last
        /// objects, is timed there.
        var lastFrame: (time: MediaTime, wallTimeNs: UInt64)?
        var snapshots: ObjectSnapshots
    }

    /// `detectors`: one, or one per frame to detect at the same time.
    package init(
        detectors: [Detector], annotator: (any TrackedObjectAnnotator<Object>)? = nil, publisher: Publisher,
        sourceID: String, stills: StillImageOutput? = nil, logger: Logger
    ) {
        precondition(!detectors.isEmpty, "an analysis needs a detector")
        self.stills = stills
        lanes = DetectionLanes(detectors: detectors)
        framesAhead = detectors.map(\.framesAhead).max() ?? 0
        framesInFlight =
            detectors.count > 1 || framesAhead > 0 ? max(2 * detectors.count, 2 * framesAhead + 1) : 1
        tracking = Mutex(
            Tracking(
                annotator: annotator,
                snapshots: ObjectSnapshots(
                    publisher: publisher, sourceID: sourceID, detector: Object.eventObject, logger: logger)))
        colour = ObjectKind.all.first { $0.messageKind == Object.messageKind }?.colour ?? .green
        self.publisher = publisher
        self.sourceID = sourceID
        self.logger = logger
        let dimensions = [("source", sourceID), ("detector", Object.eventObject)]
        detectionTimer = Metrics.Timer(label: "sightline_detection_seconds", dimensions: dimensions)
        objectsPublished = Counter(label: "sightline_objects_published_total", dimensions: dimensions)
        failures = Counter(label: "sightline_detection_failures_total", dimensions: dimensions)
    }

    /// How many frames are detected at the same time: the detectors. Any thread.
    package var framesAtOnce: Int { lanes.detectors.count }

    /// How many frames the detector is told of before it detects them (full scans made ahead). Any thread.
    package let framesAhead: Int

    /// Detection time of every analysed frame. Any thread.
    package var timing: TimingCounters { timingState.withLock { $0 } }

    package func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        stills?.frameArrived(frame)
        tracking.withLock { tracking in
            guard framesInFlight > 1 else {
                let started = ContinuousClock.now
                let detected = Result { try lanes.detectors[0].objects(in: frame) }
                publishObjects(detected, in: frame, detectedIn: ContinuousClock.now - started, &tracking)
                return
            }
            for detector in lanes.detectors where detector.framesAhead > 0 { detector.frameArrived(frame) }
            let job = DetectionJob<Object>(frame: frame)
            lanes.start(job)
            tracking.inFlight.append(job)
            // As many frames in flight as there may be: the oldest is published before another is taken.
            if tracking.inFlight.count == framesInFlight {
                publishWhenDetected(tracking.inFlight.removeFirst(), &tracking)
            }
        }
    }

    /// Waits for a lane's frame, then publishes it.
    private func publishWhenDetected(_ job: DetectionJob<Object>, _ tracking: inout Tracking) {
        let (detected, elapsed) = job.wait()
        publishObjects(detected, in: job.frame, detectedIn: elapsed, &tracking)
    }

    /// Tracks, annotates and publishes one frame's objects, in capture order.
    private func publishObjects(
        _ result: Result<[Object], Error>, in frame: VideoFrame, detectedIn: Duration, _ tracking: inout Tracking
    ) {
        let started = ContinuousClock.now
        let detected: [Object]
        switch result {
        case .success(let objects): detected = objects
        case .failure(let error):
            failures.increment()
            logger.error("\(Object.eventObject) detection failed; frame skipped", metadata: ["error": "\(error)"])
            return
        }
        var update = tracking.tracker.update(detected, time: frame.time)
        var changed: [Object] = []
        if let annotator = tracking.annotator {
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
        tracking.lastFrame = (frame.time + (frame.duration ?? .zero), frame.wallClockNanoseconds)

        for object in update.left { publishEvent(.leave, object, wallTimeNs: frame.wallClockNanoseconds) }
        for object in update.entered { publishEvent(.enter, object, wallTimeNs: frame.wallClockNanoseconds) }
        for object in changed { publishEvent(.identified, object, wallTimeNs: frame.wallClockNanoseconds) }
        // A message for every frame with objects, and one empty message when they are gone.
        if !update.objects.isEmpty || tracking.objectsWerePresent {
            objectsPublished.increment(by: update.objects.count)
            publisher.publish(
                Object.message(
                    update.objects, source: sourceID, time: frame.time, wallTimeNs: frame.wallClockNanoseconds))
        }
        tracking.objectsWerePresent = !update.objects.isEmpty
        // Last: a JPEG now and then, after what subscribers wait for.
        let colour = colour
        let sightings = update.objects.lazy.map {
            ObjectSnapshots.Sighting(
                id: $0.objectID, object: Object.eventObject, bounds: $0.bounds, score: $0.detectionScore,
                colour: colour)
        }
        if let stills { stills.frameAnalysed(frame, object: Object.eventObject, sightings: Array(sightings)) }
        tracking.snapshots.frameAnalysed(
            at: frame.time, wallTimeNs: frame.wallClockNanoseconds, picture: { frame.pixels },
            objects: sightings, identified: changed.map(\.objectID), left: update.left.map(\.objectID))
    }

    /// At the end of the run: frames still being detected are published, then objects
    /// still tracked leave. Call only after the output has drained, when its queue no
    /// longer touches the tracker.
    package func finish() {
        tracking.withLock { tracking in
            while !tracking.inFlight.isEmpty { publishWhenDetected(tracking.inFlight.removeFirst(), &tracking) }
            let wallTime = tracking.lastFrame?.wallTimeNs ?? WallClock.nowNanoseconds()
            if tracking.objectsWerePresent, let last = tracking.lastFrame {
                publisher.publish(Object.message([], source: sourceID, time: last.time, wallTimeNs: wallTime))
                tracking.objectsWerePresent = false
            }
            var remaining = tracking.tracker.finish()
            tracking.annotator?.objectsLeft(&remaining)
            for object in remaining { publishEvent(.leave, object, wallTimeNs: wallTime) }
        }
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

/// Detectors, each with a queue of its own, and the frames waiting for one: a frame goes to
/// whichever detector is free first, so a frame that takes longer holds up only its lane.
/// A detector told of frames ahead (tracking) finishes each frame's objects on a queue of
/// their own, while it goes on to the next frame.
final class DetectionLanes<Detector: MetadataObjectDetector>: @unchecked Sendable {
    let detectors: [Detector]
    private let queues: [DispatchQueue]
    private let finishing: DispatchQueue?
    /// Frames no lane has taken yet, oldest first, and the lanes with nothing to do.
    private let waiting: Mutex<(jobs: [DetectionJob<Detector.Object>], idleLanes: [Int])>

    init(detectors: [Detector]) {
        self.detectors = detectors
        queues = detectors.indices.map { DispatchQueue(label: "sightline.detect.\($0 + 1)-of-\(detectors.count)") }
        finishing =
            detectors.contains { $0.framesAhead > 0 } ? DispatchQueue(label: "sightline.detect.finishing") : nil
        waiting = Mutex(([], Array(detectors.indices.reversed())))
    }

    /// Gives `job` to an idle lane, or leaves it for the first lane that comes free. Any thread.
    func start(_ job: DetectionJob<Detector.Object>) {
        let idleLane = waiting.withLock { waiting -> Int? in
            if let lane = waiting.idleLanes.popLast() { return lane }
            waiting.jobs.append(job)
            return nil
        }
        if let idleLane { run(job, on: idleLane) }
    }

    /// Detects `job` on the lane's queue, then the frames left waiting, until there are none.
    private func run(_ job: DetectionJob<Detector.Object>, on lane: Int) {
        queues[lane].async { [self] in
            var next: DetectionJob<Detector.Object>? = job
            while let job = next {
                detect(job, on: lane)
                next = waiting.withLock { waiting in
                    if waiting.jobs.isEmpty {
                        waiting.idleLanes.append(lane)
                        return nil
                    }
                    return waiting.jobs.removeFirst()
                }
            }
        }
    }

    /// Detects `job`'s frame on the lane's queue; completes it there or on `finishing`.
    private func detect(_ job: DetectionJob<Detector.Object>, on lane: Int) {
        let started = ContinuousClock.now
        guard let finishing, detectors[lane].framesAhead > 0 else {
            job.complete(Result { try detectors[lane].objects(in: job.frame) }, after: ContinuousClock.now - started)
            return
        }
        do {
            nonisolated(unsafe) let rest = try detectors[lane].objectsInTwoSteps(in: job.frame)
            finishing.async { job.complete(Result { try rest() }, after: ContinuousClock.now - started) }
        } catch {
            job.complete(.failure(error), after: ContinuousClock.now - started)
        }
    }
}

/// One frame detected on a lane, waited for on the output's queue.
final class DetectionJob<Object: Sendable>: Sendable {
    let frame: VideoFrame
    private let outcome = PendingResult<(Result<[Object], Error>, Duration)>()

    init(frame: VideoFrame) { self.frame = frame }

    func complete(_ result: Result<[Object], Error>, after elapsed: Duration) { outcome.complete((result, elapsed)) }

    func wait() -> (Result<[Object], Error>, Duration) { outcome.wait() }
}
