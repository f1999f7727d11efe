import Logging
import Metrics
import SightlineBus
import SightlineCore
import SightlineDetection
import SightlineMovie
import Synchronization

/// Objects from detectors in other processes (`objects/<source>/` groups sent to
/// `--metadata-in`), made as good as the built-in detectors' faces: each detector's objects
/// get Sightline's IDs from a tracker of their own (by overlap, or by the detector's own IDs),
/// enter and leave as faces do, and are published again as the source's `objects` message,
/// at the time of the frame the detector analysed.
///
/// Its objects get snapshots as faces do (`ObjectSnapshots`), drawn into the frame they were
/// found in when it is one the `frames` output published and still keeps (`RecentFrames`).
///
/// A detector that goes quiet does not keep its objects: once the source's newest frame is
/// `hold` of media time past its last group, they leave, and groups it sends for that time
/// afterwards are dropped as `late`; what it sends later is taken as before. The source never
/// waits for a detector.
///
/// `take`, `expire` and `finish` are called on the metadata-in thread; `counters` on any.
final class DetectorInputs: Sendable {
    struct Configuration: Sendable {
        /// How long a detector's objects stay after its last group, in the source's media time.
        var hold = MediaTime(value: 1, timescale: 1)
        /// Detectors a source keeps apart; groups from more are dropped as `tooManyDetectors`.
        var maximumDetectors = 16
    }

    private let configuration: Configuration
    private let publisher: Publisher
    private let sourceID: String
    private let recentFrames: RecentFrames?
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var detectors: [String: Detector] = [:]
        /// The ID the next new object of any detector gets: a source's objects have IDs of
        /// their own whichever detector found them, as its events and recordings' players
        /// tell objects apart by ID.
        var nextObjectID = 1
    }

    /// What the input keeps of one detector.
    private struct Detector {
        let tracker = ObjectTracker<DetectedObject>()
        /// swift-metrics (a no-op until a backend is bootstrapped, as `--metrics` does).
        let objectsPublished: Counter
        var counters = DetectorCounters()
        /// The time and wall-clock time of its last group taken.
        var last: (time: MediaTime, wallTimeNs: UInt64)?
        /// Its groups must be later than this: the last group's time, or when its objects were let go.
        var publishedUpTo: MediaTime?
        /// Whether the last message published had objects (one empty message follows).
        var objectsWerePresent = false
        var snapshots: ObjectSnapshots
    }

    init(
        configuration: Configuration, sourceID: String, publisher: Publisher, recentFrames: RecentFrames? = nil,
        logger: Logger
    ) {
        self.configuration = configuration
        self.sourceID = sourceID
        self.publisher = publisher
        self.recentFrames = recentFrames
        self.logger = logger
    }

    /// What each detector sent so far; nil before any did. Any thread.
    var counters: [String: DetectorCounters]? {
        state.withLock { $0.detectors.isEmpty ? nil : $0.detectors.mapValues(\.counters) }
    }

    /// Counts a group of `detector`'s that was dropped for `reason`; false when the detector
    /// cannot be counted apart (its name is not valid, or there are too many), and the caller
    /// counts it with the input's own rejections.
    func countRejected(_ reason: String, detector: String) -> Bool {
        state.withLock { state in
            guard let name = admitted(detector, &state.detectors) else { return false }
            state.detectors[name]!.counters.rejected[reason, default: 0] += 1
            return true
        }
    }

    /// What became of a group.
    enum Outcome {
        case taken
        /// Not after the detector's last group, or after its objects were let go.
        case late
        /// From a detector beyond `maximumDetectors` (for the caller to count).
        case tooManyDetectors
    }

    /// Tracks and publishes one checked group of objects in the frame at `time`.
    func take(_ group: DetectedObjectGroup, time: MediaTime, wallTimeNs: UInt64) -> Outcome {
        state.withLock { state in
            guard let name = admitted(group.detector, &state.detectors) else { return .tooManyDetectors }
            if let publishedUpTo = state.detectors[name]!.publishedUpTo, time <= publishedUpTo { return .late }
            publish(
                group.items, of: name, at: (time, wallTimeNs), &state.detectors[name]!, nextID: &state.nextObjectID)
            return .taken
        }
    }

    /// Lets go of the objects of every detector that has sent nothing for `hold` of media
    /// time before the source's newest frame (`newest`).
    func expire(newest: MediaTime) {
        state.withLock { state in
            for name in state.detectors.keys {
                guard let last = state.detectors[name]!.last, newest >= last.time + configuration.hold else { continue }
                letGo(
                    of: name, at: last.time + configuration.hold, wallTimeNs: last.wallTimeNs, &state.detectors[name]!)
            }
        }
    }

    /// Every object leaves: the input stops. `newest`: the source's newest frame, where their
    /// time ends unless their hold ends sooner.
    func finish(newest: MediaTime?) {
        state.withLock { state in
            for name in state.detectors.keys {
                guard let last = state.detectors[name]!.last else { continue }
                let end = min(last.time + configuration.hold, max(newest ?? last.time, last.time))
                letGo(of: name, at: end, wallTimeNs: last.wallTimeNs, &state.detectors[name]!)
            }
        }
    }

    /// The detector's name as a key, made when it is new and there is room; nil when the
    /// name is not valid or there is none.
    private func admitted(_ name: String, _ detectors: inout [String: Detector]) -> String? {
        guard SourceID.isValid(name) else { return nil }
        if detectors[name] == nil {
            guard detectors.count < configuration.maximumDetectors else { return nil }
            detectors[name] = Detector(
                objectsPublished: Counter(
                    label: "sightline_objects_published_total", dimensions: [("source", sourceID), ("detector", name)]),
                snapshots: ObjectSnapshots(publisher: publisher, sourceID: sourceID, detector: name, logger: logger))
        }
        return name
    }

    private func publish(
        _ items: [DetectedObject], of name: String, at frame: (time: MediaTime, wallTimeNs: UInt64),
        _ detector: inout Detector, nextID: inout Int
    ) {
        detector.tracker.nextID = nextID
        let update = detector.tracker.update(items, time: frame.time)
        nextID = detector.tracker.nextID
        detector.last = frame
        detector.publishedUpTo = frame.time
        detector.counters.groups += 1
        detector.counters.objects += items.count
        for object in update.left { publishEvent(.leave, object, of: name, at: frame) }
        for object in update.entered { publishEvent(.enter, object, of: name, at: frame) }
        // A message for every group with objects, and one empty message when they are gone.
        if !update.objects.isEmpty || detector.objectsWerePresent {
            detector.objectsPublished.increment(by: update.objects.count)
            publishGroup(update.objects, of: name, at: frame)
        }
        detector.objectsWerePresent = !update.objects.isEmpty
        detector.snapshots.frameAnalysed(
            at: frame.time, wallTimeNs: frame.wallTimeNs, picture: { recentFrames?.picture(at: frame.time) },
            objects: update.objects.lazy.map {
                ObjectSnapshots.Sighting(
                    id: $0.objectID, object: $0.type, bounds: $0.bounds, score: $0.confidence,
                    colour: ObjectKind.colour(ofType: $0.type), detector: name)
            }, identified: [], left: update.left.map(\.objectID))
    }

    /// Ends the detector's objects at `time`: an empty message if its last one had objects,
    /// and a leave event for each still tracked.
    private func letGo(of name: String, at time: MediaTime, wallTimeNs: UInt64, _ detector: inout Detector) {
        let remaining = detector.tracker.finish()
        guard detector.objectsWerePresent || !remaining.isEmpty else { return }
        if detector.objectsWerePresent { publishGroup([], of: name, at: (time, wallTimeNs)) }
        for object in remaining { publishEvent(.leave, object, of: name, at: (time, wallTimeNs)) }
        detector.objectsWerePresent = false
        detector.publishedUpTo = max(detector.publishedUpTo ?? time, time)
    }

    private func publishGroup(
        _ objects: [DetectedObject], of name: String, at frame: (time: MediaTime, wallTimeNs: UInt64)
    ) {
        publisher.publish(
            Message(
                kind: .objects, source: sourceID, time: frame.time, wallTimeNs: frame.wallTimeNs,
                objects: DetectedObjectGroup(detector: name, items: objects)))
    }

    private func publishEvent(
        _ change: ObjectEvent.Change, _ object: DetectedObject, of name: String,
        at frame: (time: MediaTime, wallTimeNs: UInt64)
    ) {
        var details: Logger.Metadata = [
            "id": "\(object.objectID)", "detector": "\(name)",
            "time": "\((frame.time.seconds * 1000).rounded() / 1000)s",
        ]
        if let label = object.label { details["label"] = "\(label)" }
        logger.info("\(object.type) \(change.pastTense)", metadata: details)
        publisher.publish(
            Message(
                kind: .events, source: sourceID, time: frame.time, wallTimeNs: frame.wallTimeNs,
                event: ObjectEvent(
                    change: change, object: object.type, id: object.objectID, item: object, detector: name)))
    }
}
