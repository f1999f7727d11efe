import Foundation
import SightlineCore
import SightlineMovie

/// One frame of the live view with the objects (faces, codes) of that same frame: what the
/// console pushes to the browser.
package struct LiveFrame: Sendable, Encodable {
    package var source: String
    package var seq: UInt64
    /// The frame's media time, seconds.
    package var time: Double
    /// When the frame was captured, ns since 1970 (the source's clock).
    package var wallTimeNs: UInt64
    package var width: Int
    package var height: Int
    /// Each kind's objects by the kind's name (`faces`, `codes`); a kind the source does not
    /// detect is absent.
    var objects: [String: LiveDetections]
    /// The JPEG, base64, ready for a `data:` URL.
    package var jpeg: String

    /// The objects of a kind; nil when the source does not detect it.
    package subscript(kind: ObjectKind) -> LiveDetections? { objects[kind.name] }

    /// Each kind's objects are a field of the frame named after the kind (docs/console.md).
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FieldName.self)
        try container.encode(source, forKey: FieldName("source"))
        try container.encode(seq, forKey: FieldName("seq"))
        try container.encode(time, forKey: FieldName("time"))
        try container.encode(wallTimeNs, forKey: FieldName("wallTimeNs"))
        try container.encode(width, forKey: FieldName("width"))
        try container.encode(height, forKey: FieldName("height"))
        for kind in ObjectKind.all {
            if let detections = objects[kind.name] {
                try detections.encode(to: container.superEncoder(forKey: FieldName(kind.name)), kind: kind)
            }
        }
        try container.encode(jpeg, forKey: FieldName("jpeg"))
    }
}

/// The objects drawn over a live frame.
package struct LiveDetections: Sendable, Equatable {
    /// Media time of the analysed frame the objects come from: the frame's own time, unless
    /// the detector skipped that frame (late) while objects were in view, in which case the
    /// last analysed frame's objects are held and `held` is true.
    package var time: Double?
    package var held: Bool
    package var objects: [DrawnObject]

    private enum Key: String, CodingKey { case time, held, objects }

    /// Its JSON, the objects labelled as their kind labels them.
    func encode(to encoder: any Encoder, kind: ObjectKind) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(time, forKey: .time)
        try container.encode(held, forKey: .held)
        try container.encode(kind.labelled(objects), forKey: .objects)
    }
}

/// The objects one detector published, newest last, and how late they arrive: enough to
/// say which objects a given frame had.
///
/// A detector publishes a message for every analysed frame with objects and one empty
/// message when they are gone, so a frame with no message of its own had no objects if the
/// last message before it was empty, and was skipped by the detector otherwise.
struct DetectionHistory {
    private var messages: [(time: MediaTime, objects: [DrawnObject])] = []
    private var lags: [Int64] = []
    /// The newest message's time: frames up to here are settled.
    private(set) var newest: MediaTime?

    static let kept = 512

    mutating func add(time: MediaTime, objects: [DrawnObject], lagNs: Int64) {
        if let newest, time < newest { messages.removeAll() }  // the source started again
        messages.append((time, objects))
        if messages.count > Self.kept { messages.removeFirst(messages.count - Self.kept) }
        newest = time
        lags.append(lagNs)
        if lags.count > 32 { lags.removeFirst() }
    }

    mutating func reset() {
        messages.removeAll()
        newest = nil
    }

    /// How long after capture this detector's results arrive, at worst of late: the largest
    /// of the last 32, or a quarter second before any is known.
    var lagNs: Int64 { min(max(lags.max() ?? 250_000_000, 10_000_000), 2_000_000_000) }

    /// Whether every message up to `time` has arrived.
    func isSettled(_ time: MediaTime) -> Bool { newest.map { $0 >= time } ?? false }

    /// What the frame at `time` had.
    func detections(at time: MediaTime) -> LiveDetections {
        guard let index = messages.lastIndex(where: { $0.time <= time }) else {
            return LiveDetections(time: time.seconds, held: false, objects: [])
        }
        let (found, objects) = messages[index]
        if found == time || objects.isEmpty { return LiveDetections(time: time.seconds, held: false, objects: objects) }
        return LiveDetections(time: found.seconds, held: true, objects: objects)
    }
}

/// Pairs a source's live frames with the faces and codes of the same frame. Frames wait
/// until each detector has published past their time, or until its usual delay (plus a
/// margin) has passed since capture: with nothing in view a detector publishes nothing, so
/// silence for that long means the frame had nothing. Lags are measured as arrival time
/// less capture time, so a clock offset between hosts cancels out.
struct LiveFrameMatcher {
    struct Pending {
        var message: Message
        var jpeg: [UInt8]
    }

    /// Each kind's history, by the kind's name; a detector in another process's by the
    /// kind's name and its own (`detectedObjects/people`), as each publishes on its own.
    private(set) var histories: [String: DetectionHistory] = [:]
    /// What the source detects, from its status (`faces`, `barcodes`).
    var detections: Set<String> = [ObjectKind.faces.detection] {
        didSet { watched = ObjectKind.listed(in: Array(detections)) }
    }
    /// The kinds whose objects each frame waits for: those `detections` lists, found when
    /// a status sets it rather than for every frame.
    private var watched: [ObjectKind] = [.faces]
    private var pending: [Pending] = []

    static let margin: Int64 = 50_000_000
    static let maximumPending = 16

    mutating func reset() {
        for name in histories.keys { histories[name]?.reset() }
        pending.removeAll()
    }

    mutating func addObjects(_ message: Message, receivedNs: UInt64) -> [LiveFrame] {
        guard let time = message.time else { return [] }
        let lag = Int64(bitPattern: receivedNs &- message.wallTimeNs)
        if let kind = ObjectKind.carried(by: message.kind), let objects = kind.drawn(message) {
            let key = message.objects.map { "\(kind.name)/\($0.detector)" } ?? kind.name
            histories[key, default: DetectionHistory()].add(time: time, objects: objects, lagNs: lag)
        }
        return release(nowNs: receivedNs)
    }

    mutating func addFrame(_ message: Message, jpeg: [UInt8], receivedNs: UInt64) -> [LiveFrame] {
        guard message.time != nil, message.frame?.format == .jpeg else { return [] }
        pending.append(Pending(message: message, jpeg: jpeg))
        return release(nowNs: receivedNs)
    }

    /// Frames that are ready: settled by every detector, past their deadline, or pushed
    /// out by newer frames.
    mutating func release(nowNs: UInt64) -> [LiveFrame] {
        var ready: [LiveFrame] = []
        while let first = pending.first,
            pending.count > Self.maximumPending || isReady(first.message, nowNs: nowNs)
        {
            ready.append(frame(pending.removeFirst()))
        }
        return ready
    }

    private func history(_ kind: ObjectKind) -> DetectionHistory { histories[kind.name] ?? DetectionHistory() }

    private func isReady(_ message: Message, nowNs: UInt64) -> Bool {
        guard let time = message.time else { return true }
        func ready(_ history: DetectionHistory) -> Bool {
            history.isSettled(time)
                || Int64(bitPattern: nowNs &- message.wallTimeNs) > history.lagNs + Self.margin
        }
        return watched.allSatisfy { ready(history($0)) }
    }

    /// What detectors in other processes had at `time`, all together: a frame does not wait
    /// for them (they answer when they can), so each shows its latest objects up to then.
    private func otherDetectors(at time: MediaTime) -> [String: LiveDetections] {
        let kind = ObjectKind.detectedObjects
        let detectors = histories.filter { $0.key.hasPrefix(kind.name + "/") }.sorted { $0.key < $1.key }
        guard !detectors.isEmpty else { return [:] }
        let each = detectors.map { $0.value.detections(at: time) }
        return [
            kind.name: LiveDetections(
                time: time.seconds, held: each.contains(where: \.held), objects: each.flatMap(\.objects))
        ]
    }

    private func frame(_ item: Pending) -> LiveFrame {
        let message = item.message
        let time = message.time ?? .zero
        let info = message.frame
        return LiveFrame(
            source: message.source, seq: message.seq, time: time.seconds, wallTimeNs: message.wallTimeNs,
            width: info?.width ?? 0, height: info?.height ?? 0,
            objects: Dictionary(uniqueKeysWithValues: watched.map { ($0.name, history($0).detections(at: time)) })
                .merging(otherDetectors(at: time)) { watched, _ in watched },
            jpeg: Data(item.jpeg).base64EncodedString())
    }
}
