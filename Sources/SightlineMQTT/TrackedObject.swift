import Foundation
import SightlineCore
import SightlineMovie

/// One face, code or other detector's object from its enter to its leave, as the MQTT
/// `events` topic carries it: Frigate's fields where Frigate has them (`id`, `camera`,
/// `label`, `sub_label`, `score`, `top_score`, `box`, `start_time`, `end_time`,
/// `frame_time`, `has_snapshot`), and Sightline's beside them (docs/mqtt.md).
struct TrackedObject: Encodable, Equatable {
    /// Unique over restarts and sources: `<start time>-<source>-<kind>-<ID>`.
    var id: String
    var camera: String
    /// `face`, `code`, or what a detector calls its objects (`person`).
    var label: String
    /// The person a gallery named, and how far the face was from them.
    var subLabel: SubLabel?
    var score: Double?
    var topScore: Double?
    /// Left, top, right, bottom, normalised to the frame.
    var box: [Double]
    /// Seconds since 1970: when it entered, when it left (nil while in view), and the time of
    /// the frame this state is from.
    var startTime: Double
    var endTime: Double?
    var frameTime: Double
    /// The frame's media time in the source, seconds.
    var mediaTime: Double?
    var hasSnapshot = false
    /// `face`, `code` or `object`; Sightline's ID of it in the source's messages.
    var kind: String
    var objectID: Int
    /// A code's symbology or a detected object's type (`humanBody`).
    var type: String?
    /// A code's text.
    var text: String?
    /// Which detector in another process found it.
    var detector: String?

    struct SubLabel: Equatable, Encodable {
        var name: String
        var distance: Double

        /// As Frigate sends it: `[name, score]`.
        func encode(to encoder: any Encoder) throws {
            var list = encoder.unkeyedContainer()
            try list.encode(name)
            try list.encode(distance)
        }
    }

    private enum CodingKeys: String, CodingKey {
        case id, camera, label, score, box, kind, type, text, detector
        case subLabel = "sub_label"
        case topScore = "top_score"
        case startTime = "start_time"
        case endTime = "end_time"
        case frameTime = "frame_time"
        case mediaTime = "media_time"
        case hasSnapshot = "has_snapshot"
        case objectID = "object_id"
    }

    /// Every field, `null` where there is no value, as Frigate's payloads have them.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(camera, forKey: .camera)
        try c.encode(label, forKey: .label)
        try c.encode(subLabel, forKey: .subLabel)
        try c.encode(score, forKey: .score)
        try c.encode(topScore, forKey: .topScore)
        try c.encode(box, forKey: .box)
        try c.encode(startTime, forKey: .startTime)
        try c.encode(endTime, forKey: .endTime)
        try c.encode(frameTime, forKey: .frameTime)
        try c.encode(mediaTime, forKey: .mediaTime)
        try c.encode(hasSnapshot, forKey: .hasSnapshot)
        try c.encode(kind, forKey: .kind)
        try c.encode(objectID, forKey: .objectID)
        try c.encode(type, forKey: .type)
        try c.encode(text, forKey: .text)
        try c.encode(detector, forKey: .detector)
    }

    /// What one event says of the object.
    struct Sighting {
        var kind: String
        var label: String
        var subLabel: SubLabel?
        var score: Double?
        var bounds: NormalizedRect
        var frameTime: Double
        var mediaTime: Double?
        var type: String?
        var text: String?
        var detector: String?

        /// Nil for an event that carries no object (malformed).
        init?(_ event: ObjectEvent, in message: Message) {
            frameTime = Double(message.wallTimeNs) / 1e9
            mediaTime = message.time?.seconds
            // Each kind by what one object of it is called (`face`, `code`, `object`).
            if let face = event.face {
                kind = ObjectKind.faces.objectName
                (label, bounds, score) = (kind, face.bounds, face.score)
                subLabel = face.identity.map { SubLabel(name: $0.name, distance: $0.distance) }
            } else if let code = event.code {
                kind = ObjectKind.codes.objectName
                (label, bounds) = (kind, code.bounds)
                (type, text) = (code.type.rawValue, code.stringValue)
            } else if let item = event.item {
                kind = ObjectKind.detectedObjects.objectName
                (bounds, score, type, detector) = (item.bounds, item.confidence, item.type, event.detector)
                label = MQTTTopics.topicLevel(item.eventLabel)
            } else {
                return nil
            }
        }
    }

    init(_ sighting: Sighting, source: String, id objectID: Int) {
        id = "\(String(format: "%.6f", sighting.frameTime))-\(source)-\(sighting.kind)-\(objectID)"
        camera = source
        label = sighting.label
        startTime = sighting.frameTime
        frameTime = sighting.frameTime
        kind = sighting.kind
        self.objectID = objectID
        box = []
        update(with: sighting)
    }

    /// Where and how surely it was seen last, and when.
    mutating func seen(at b: NormalizedRect, score: Double?, frameTime: Double, mediaTime: Double?) {
        box = [b.x, b.y, b.x + b.width, b.y + b.height]
        self.frameTime = frameTime
        self.mediaTime = mediaTime
        self.score = score ?? self.score
        if let score { topScore = max(topScore ?? score, score) }
    }

    /// Takes a later sighting's state; the label stays the one it entered with (the count
    /// topics count by it).
    mutating func update(with sighting: Sighting) {
        seen(at: sighting.bounds, score: sighting.score, frameTime: sighting.frameTime, mediaTime: sighting.mediaTime)
        subLabel = sighting.subLabel ?? subLabel
        type = sighting.type ?? type
        text = sighting.text ?? text
        detector = sighting.detector ?? detector
    }
}
