import Foundation
import SightlineCore
import SightlineMovie

/// What the MQTT output publishes for a source's bus messages, shaped like Frigate's topics
/// so that automations written for Frigate translate directly (docs/mqtt.md):
///
/// - `<prefix>/events`: `{"type": "new"|"update"|"end", "before", "after"}` for each face,
///   code and other detector's object, from its `enter`, `identified` and `leave` events:
///   an update only when a face is named, never every frame;
/// - `<prefix>/<source>/<label>` and `<prefix>/<source>/all`: how many are in view,
///   retained;
/// - `<prefix>/people/<name>`: a person's last sighting, retained; a face that leaves
///   without being named, on a source with a gallery, under `unknownName`;
/// - `<prefix>/<source>/status`: the source's state and counters, retained.
///
/// Not thread-safe: one per MQTT output, fed by its thread.
package struct MQTTTopics {
    private let prefix: String
    private let unknownName: String
    /// Objects in view, by source, kind and ID.
    private var open: [Key: TrackedObject] = [:]
    /// How many of each label are in view, by source (for the count topics).
    private var inView: [String: [String: Int]] = [:]
    /// Sources whose status says they name faces (`identities`).
    private var naming: Set<String> = []
    /// Home Assistant's discovery messages for what is published; nil: none.
    private var discovery: HomeAssistantDiscovery?

    /// Objects this output keeps apart at once, over every source; beyond, the oldest is let go
    /// (a source that died without its leave events cannot grow it for ever).
    static let maximumOpen = 10_000
    /// Labels a source can have count topics for; a detector's other labels share `other`.
    static let maximumLabels = 64

    private struct Key: Hashable {
        var source: String
        var kind: String
        var id: Int
    }

    /// `discoveryPrefix`: where Home Assistant's discovery messages go (`homeassistant`);
    /// nil: none.
    package init(prefix: String, unknownName: String, discoveryPrefix: String? = nil) {
        self.prefix = prefix
        self.unknownName = unknownName
        discovery = discoveryPrefix.map { HomeAssistantDiscovery(discoveryPrefix: $0, prefix: prefix) }
    }

    /// What to publish for `message`.
    package mutating func publications(for message: Message) -> [MQTTConnection.Publication] {
        switch message.kind {
        case .events: return message.event.map { events(for: $0, in: message) } ?? []
        case .status: return message.status.map { status($0, of: message.source) } ?? []
        default: return []
        }
    }

    // MARK: Events

    private mutating func events(for event: ObjectEvent, in message: Message) -> [MQTTConnection.Publication] {
        guard let sighting = TrackedObject.Sighting(event, in: message) else { return [] }
        let key = Key(source: message.source, kind: sighting.kind, id: event.id)
        var out: [MQTTConnection.Publication] = []
        switch event.change {
        case .enter:
            // An ID entering again (a source's tracker restarted unannounced): the old one ended.
            if open[key] != nil { out += letGo(key, at: sighting.frameTime) }
            if open.count >= Self.maximumOpen, let oldest = open.min(by: { $0.value.startTime < $1.value.startTime }) {
                out += letGo(oldest.key, at: Double(message.wallTimeNs) / 1e9)
            }
            let object = TrackedObject(sighting, source: message.source, id: event.id)
            open[key] = object
            out.append(eventMessage(type: "new", before: object, after: object))
            out += count(object.label, in: message.source, by: 1)
            if let name = object.subLabel?.name { out += person(name, seenBy: object) }
        case .identified:
            guard let before = open[key] else { return [] }
            var after = before
            after.update(with: sighting)
            open[key] = after
            out.append(eventMessage(type: "update", before: before, after: after))
            if let name = after.subLabel?.name { out += person(name, seenBy: after) }
        case .leave:
            guard let before = open.removeValue(forKey: key) else { return [] }
            var after = before
            after.update(with: sighting)
            after.endTime = sighting.frameTime
            out.append(eventMessage(type: "end", before: before, after: after))
            out += count(before.label, in: message.source, by: -1)
            if after.kind == ObjectKind.faces.objectName, after.subLabel == nil, naming.contains(message.source) {
                out += person(unknownName, seenBy: after)
            }
        }
        return out
    }

    /// Ends an object whose leave never came (its source restarted or died).
    private mutating func letGo(_ key: Key, at time: Double) -> [MQTTConnection.Publication] {
        guard let before = open.removeValue(forKey: key) else { return [] }
        var after = before
        after.endTime = time
        return [eventMessage(type: "end", before: before, after: after)] + count(before.label, in: key.source, by: -1)
    }

    private func eventMessage(type: String, before: TrackedObject, after: TrackedObject) -> MQTTConnection.Publication {
        struct Event: Encodable {
            var type: String
            var before: TrackedObject
            var after: TrackedObject
        }
        return MQTTConnection.Publication(
            topic: "\(prefix)/events", payload: Self.json(Event(type: type, before: before, after: after)),
            retain: false)
    }

    private mutating func count(_ label: String, in source: String, by change: Int) -> [MQTTConnection.Publication] {
        var counts = inView[source, default: [:]]
        let label = counts[label] != nil || counts.count < Self.maximumLabels ? label : "other"
        counts[label, default: 0] = max(0, counts[label, default: 0] + change)
        inView[source] = counts
        let announced = (discovery?.source(source) ?? []) + (discovery?.label(label, of: source) ?? [])
        return announced + [
            retained("\(source)/\(label)", "\(counts[label]!)"),
            retained("\(source)/all", "\(counts.values.reduce(0, +))"),
        ]
    }

    private mutating func person(_ name: String, seenBy object: TrackedObject) -> [MQTTConnection.Publication] {
        struct Sighting: Encodable {
            var name: String
            var camera: String
            var time: Double
            /// `time` as ISO 8601, what a Home Assistant timestamp sensor shows.
            var lastSeen: String
            var eventID: String
            var distance: Double?
            enum CodingKeys: String, CodingKey {
                case name, camera, time, distance
                case eventID = "event_id"
                case lastSeen = "last_seen"
            }
        }
        let sighting = Sighting(
            name: name, camera: object.camera, time: object.frameTime,
            lastSeen: Date(timeIntervalSince1970: object.frameTime).formatted(.iso8601), eventID: object.id,
            distance: object.subLabel?.distance)
        let level = Self.topicLevel(name)
        return (discovery?.person(level) ?? []) + [
            MQTTConnection.Publication(topic: "\(prefix)/people/\(level)", payload: Self.json(sighting), retain: true)
        ]
    }

    // MARK: Status

    private mutating func status(_ status: SourceStatus, of source: String) -> [MQTTConnection.Publication] {
        var out: [MQTTConnection.Publication] = []
        out += discovery?.source(source) ?? []
        if let detections = status.detections {
            let names = ObjectKind.faces.extraFields.map { detections.contains($0.detection) } ?? false
            if names { naming.insert(source) } else { naming.remove(source) }
        }
        // A source that starts again has lost what it tracked: those objects end.
        if status.state == .started {
            let now = Double(WallClock.nowNanoseconds()) / 1e9
            for key in open.keys where key.source == source { out += letGo(key, at: now) }
        }
        struct Payload: Encodable {
            var state: String
            var reason: String?
            var counters: PipelineCounters?
        }
        let payload = Payload(state: status.state.rawValue, reason: status.reason, counters: status.counters)
        out.append(
            MQTTConnection.Publication(
                topic: "\(prefix)/\(source)/status", payload: Self.json(payload), retain: true))
        return out
    }

    private func retained(_ path: String, _ text: String) -> MQTTConnection.Publication {
        MQTTConnection.Publication(topic: "\(prefix)/\(path)", json: text, retain: true)
    }

    /// Text from outside (a name, a detector's label) as one topic level: letters, digits,
    /// `-`, `_` and `.` kept, anything else `_`, at most 64 characters.
    static func topicLevel(_ text: String) -> String {
        let kept = text.unicodeScalars.prefix(64).map { c -> Character in
            (c.properties.isAlphabetic || c.properties.numericType != nil || "-_.".unicodeScalars.contains(c))
                && !"+#/".unicodeScalars.contains(c) ? Character(c) : "_"
        }
        let level = String(kept)
        return level.isEmpty || level == "." || level == ".." ? "_" : level
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json(_ value: some Encodable) -> [UInt8] {
        // Our own types: encoding cannot fail.
        (try? Array(encoder.encode(value))) ?? Array("null".utf8)
    }
}
