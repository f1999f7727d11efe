import Logging
import Metrics
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineMovie

/// An analysis's `snapshots` (`snapshots/<source>/`): a JPEG of one of its objects at its
/// best so far, its box drawn in its kind's colour, for the MQTT output's snapshot topics
/// (Frigate's `<camera>/<label>/snapshot`) and any other subscriber.
///
/// An object is taken as it enters, again when it is identified (a gallery names a face),
/// and again when its detection score beats its last snapshot's by a tenth, a second later at
/// least. At most one object a frame and four a second of media time: a crowd costs a
/// bounded amount (each JPEG is a scale and an encode), and nobody subscribing costs nothing.
///
/// Not thread-safe: owned by its analysis's output queue.
struct ObjectSnapshots<Object: MetadataObject> {
    private let publisher: Publisher
    private let sourceID: String
    private let topic: String
    private let colour: RGBColour
    private let published: Counter
    private var failures: RateLimitedLog
    /// Made on the first snapshot: most runs have nobody subscribing.
    private var snapshotter: FrameSnapshotter?
    /// The score and time of each object's last snapshot, by ID, while it is in view.
    private var taken: [Int: (score: Double?, time: MediaTime)] = [:]
    /// Objects identified since their last snapshot: taken again first.
    private var renamed: Set<Int> = []
    private var lastTaken: MediaTime?

    /// Snapshots are at most this big (a 1080p camera's are 1280x720).
    static var maximumSize: Int { 1280 }
    /// Seconds of media time between two snapshots of an analysis, and of one object.
    static var interval: Double { 0.25 }
    static var objectInterval: Double { 1 }

    init(publisher: Publisher, sourceID: String, logger: Logger) {
        self.publisher = publisher
        self.sourceID = sourceID
        topic = Topic.make(kind: .snapshots, source: sourceID)
        colour = ObjectKind.all.first { $0.messageKind == Object.messageKind }?.colour ?? .green
        published = Counter(
            label: "sightline_snapshots_published_total",
            dimensions: [("source", sourceID), ("detector", Object.eventObject)])
        failures = RateLimitedLog(logger: logger)
    }

    /// After a frame's objects and events are published: takes the object most in need of a
    /// snapshot, if any is and the rate allows.
    mutating func frameAnalysed(_ frame: VideoFrame, objects: [Object], identified: [Object], left: [Object]) {
        for object in left {
            taken[object.objectID] = nil
            renamed.remove(object.objectID)
        }
        for object in identified where taken[object.objectID] != nil { renamed.insert(object.objectID) }
        guard !objects.isEmpty else { return }
        if let last = lastTaken, (frame.time - last).seconds < Self.interval { return }
        guard let object = mostInNeed(objects, at: frame.time), publisher.hasSubscriber(for: topic) else { return }
        do {
            if snapshotter == nil {
                snapshotter = try FrameSnapshotter(
                    format: .jpeg, maximumWidth: Self.maximumSize, maximumHeight: Self.maximumSize)
            }
            let drawn = colour.fullRangeYCbCr
            let (info, jpeg) = try snapshotter!.snapshot(frame.pixels) { picture in
                picture.strokeRect(object.bounds, colour: drawn, thickness: max(2, picture.width / 240))
            }
            publisher.publish(
                Message(
                    kind: .snapshots, source: sourceID, time: frame.time, wallTimeNs: frame.wallClockNanoseconds,
                    frame: info,
                    snapshot: ObjectSnapshot(
                        object: Object.eventObject, id: object.objectID, score: object.detectionScore,
                        bounds: object.bounds)),
                payload: jpeg)
            published.increment()
        } catch {
            failures.warning("a snapshot could not be made: \(error)", reason: "snapshot")
        }
        // Taken, or failed: either way not again at once.
        taken[object.objectID] = (object.detectionScore, frame.time)
        renamed.remove(object.objectID)
        lastTaken = frame.time
    }

    /// One never taken, else one identified since, else the one whose score has improved
    /// most since its last (a second ago at least).
    private func mostInNeed(_ objects: [Object], at time: MediaTime) -> Object? {
        if let new = objects.first(where: { taken[$0.objectID] == nil }) { return new }
        if let named = objects.first(where: { renamed.contains($0.objectID) }) { return named }
        var best: (object: Object, gain: Double)?
        for object in objects {
            guard let last = taken[object.objectID], let lastScore = last.score, let score = object.detectionScore,
                (time - last.time).seconds >= Self.objectInterval
            else { continue }
            let gain = score - lastScore
            if gain > 0.1 * max(abs(lastScore), 0.1), gain > best?.gain ?? 0 { best = (object, gain) }
        }
        return best?.object
    }
}
