import Logging
import Metrics
import SightlineBus
import SightlineCapture
import SightlineCore

/// One detector's `snapshots` (`snapshots/<source>/`): a JPEG of one of its objects at its
/// best so far, its box drawn in its colour, for the MQTT output's snapshot topics (Frigate's
/// `<camera>/<label>/snapshot`) and any other subscriber.
///
/// An object is taken as it enters, again when it is identified (a gallery names a face),
/// and again when its detection score beats its last snapshot's by a tenth, a second later at
/// least. At most one object a frame and four a second of media time: a crowd costs a
/// bounded amount (each JPEG is a scale and an encode), and nobody subscribing costs nothing.
///
/// Not thread-safe: owned by its detector's thread (an analysis's output queue, the
/// metadata input's thread).
struct ObjectSnapshots {
    /// What a snapshot needs of an object in a frame.
    struct Sighting: Sendable {
        var id: Int
        /// As its events name it: `face`, `code`, a detected object's type.
        var object: String
        var bounds: NormalizedRect
        var score: Double?
        var colour: RGBColour
        /// Which detector in another process found it; nil: a built-in one.
        var detector: String? = nil
    }

    private let publisher: Publisher
    private let sourceID: String
    private let topic: String
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
    /// Seconds of media time between two snapshots of a detector, and of one object.
    static var interval: Double { 0.25 }
    static var objectInterval: Double { 1 }

    /// `detector`: how `/metrics` names it (`face`, a detector's name).
    init(publisher: Publisher, sourceID: String, detector: String, logger: Logger) {
        self.publisher = publisher
        self.sourceID = sourceID
        topic = Topic.make(kind: .snapshots, source: sourceID)
        published = Counter(
            label: "sightline_snapshots_published_total", dimensions: [("source", sourceID), ("detector", detector)])
        failures = RateLimitedLog(logger: logger)
    }

    /// After a frame's objects and events are published: takes the object most in need of a
    /// snapshot, if any is and the rate allows. `picture`: the frame, or nil when it has gone.
    /// `objects`: a lazy view of the frame's objects, so that a frame none of them is taken
    /// from (nearly all, and every one while nobody subscribes) makes no array.
    mutating func frameAnalysed(
        at time: MediaTime, wallTimeNs: UInt64, picture: () -> PixelBuffer?, objects: some Collection<Sighting>,
        identified: [Int], left: [Int]
    ) {
        for id in left {
            taken[id] = nil
            renamed.remove(id)
        }
        for id in identified where taken[id] != nil { renamed.insert(id) }
        guard !objects.isEmpty else { return }
        if let last = lastTaken, (time - last).seconds < Self.interval { return }
        guard let object = mostInNeed(objects, at: time), publisher.hasSubscriber(for: topic),
            let picture = picture()
        else { return }
        do {
            if snapshotter == nil {
                snapshotter = try FrameSnapshotter(
                    format: .jpeg, maximumWidth: Self.maximumSize, maximumHeight: Self.maximumSize)
            }
            let drawn = object.colour.fullRangeYCbCr
            let (info, jpeg) = try snapshotter!.snapshot(picture) { picture in
                picture.strokeRect(object.bounds, colour: drawn, thickness: max(2, picture.width / 240))
            }
            publisher.publish(
                Message(
                    kind: .snapshots, source: sourceID, time: time, wallTimeNs: wallTimeNs, frame: info,
                    snapshot: ObjectSnapshot(
                        object: object.object, id: object.id, score: object.score, bounds: object.bounds,
                        detector: object.detector)),
                payload: jpeg)
            published.increment()
        } catch {
            failures.warning("a snapshot could not be made: \(error)", reason: "snapshot")
        }
        // Taken, or failed: either way not again at once.
        taken[object.id] = (object.score, time)
        renamed.remove(object.id)
        lastTaken = time
    }

    /// One never taken, else one identified since, else the one whose score has improved
    /// most since its last (a second ago at least).
    private func mostInNeed(_ objects: some Collection<Sighting>, at time: MediaTime) -> Sighting? {
        if let new = objects.first(where: { taken[$0.id] == nil }) { return new }
        if let named = objects.first(where: { renamed.contains($0.id) }) { return named }
        var best: (object: Sighting, gain: Double)?
        for object in objects {
            guard let last = taken[object.id], let lastScore = last.score, let score = object.score,
                (time - last.time).seconds >= Self.objectInterval
            else { continue }
            let gain = score - lastScore
            if gain > 0.1 * max(abs(lastScore), 0.1), gain > best?.gain ?? 0 { best = (object, gain) }
        }
        return best?.object
    }
}
