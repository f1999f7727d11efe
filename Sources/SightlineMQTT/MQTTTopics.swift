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
/// - `<prefix>/<source>/<label>/snapshot`: a JPEG of the newest such object at its best so
///   far, retained, from the source's `snapshots`;
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
    /// The people level of everyone the sources' galleries know, and of `unknownName`; nil:
    /// no source has a gallery.
    private let enrolled: Set<String>?

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
    /// nil: none. `enrolled`: the names in the sources' galleries; nil: no source has one.
    package init(prefix: String, unknownName: String, discoveryPrefix: String? = nil, enrolled: [String]? = nil) {
        self.prefix = prefix
        self.unknownName = unknownName
        discovery = discoveryPrefix.map { HomeAssistantDiscovery(discoveryPrefix: $0, prefix: prefix) }
        self.enrolled = enrolled.map { Set(($0 + [unknownName]).map(Self.topicLevel)) }
    }

    /// What to publish before any message: a sensor for everyone enrolled, so that an
    /// automation can name a person before they are first seen.
    package mutating func atStart() -> [MQTTConnection.Publication] {
        guard let enrolled, discovery != nil else { return [] }
        return enrolled.sorted().flatMap { discovery!.person($0) }
    }

    /// Where the broker keeps what earlier runs announced (`MQTTConnection`'s subscriptions).
    package var retainedSubscriptions: [String] { discovery.map { [$0.ownSensors] } ?? [] }

    /// What to publish for a retained message an earlier run left: a person's entity whose
    /// person has left every gallery is removed (an empty retained config, as Home
    /// Assistant's discovery asks), with their last sighting.
    package func retained(_ publication: MQTTConnection.Publication) -> [MQTTConnection.Publication] {
        guard let enrolled, !publication.payload.isEmpty,
            let level = discovery?.personLevel(ofConfig: publication.topic, payload: publication.payload),
            !enrolled.contains(level)
        else { return [] }
        return [
            MQTTConnection.Publication(topic: publication.topic, payload: [], retain: true),
            MQTTConnection.Publication(topic: "\(prefix)/people/\(level)", payload: [], retain: true),
        ]
    }

    /// What to publish for `message`; `payload`: its binary frame (a snapshot's JPEG).
    package mutating func publications(for message: Message, payload: [UInt8]? = nil) -> [MQTTConnection.Publication] {
        switch message.kind {
        case .events: return message.event.map { events(for: $0, in: message) } ?? []
        case .status: return message.status.map { status($0, of: message.source) } ?? []
        case .snapshots:
            guard let snapshot = message.snapshot, let payload else { return [] }
            return self.snapshot(snapshot, jpeg: payload, in: message)
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

    // MARK: Snapshots

    /// A snapshot of an object in view: an update saying it has one, and the label's snapshot
    /// topic when it is the newest of its label.
    /// The update's `after` is the sighting the snapshot shows.
    private mutating func snapshot(_ snapshot: ObjectSnapshot, jpeg: [UInt8], in message: Message)
        -> [MQTTConnection.Publication]
    {
        // Only a JPEG (its start-of-image marker): the payload goes out as it came.
        let source = message.source
        // Keyed as the events' objects are: another detector's by what one object of theirs is called.
        let kind = snapshot.detector == nil ? snapshot.object : ObjectKind.detectedObjects.objectName
        let key = Key(source: source, kind: kind, id: snapshot.id)
        guard jpeg.starts(with: [0xFF, 0xD8]), let before = open[key] else { return [] }
        var after = before
        after.hasSnapshot = true
        after.seen(
            at: snapshot.bounds, score: snapshot.score, frameTime: Double(message.wallTimeNs) / 1e9,
            mediaTime: message.time?.seconds)
        open[key] = after
        var out = [eventMessage(type: "update", before: before, after: after)]
        let newest = open.filter { $0.key.source == source && $0.value.label == after.label }
            .max { ($0.value.startTime, $0.key.id) < ($1.value.startTime, $1.key.id) }
        if newest?.key == key {
            let label = countLabel(after.label, in: source)
            out += discovery?.camera(label, of: source) ?? []
            out.append(
                MQTTConnection.Publication(topic: "\(prefix)/\(source)/\(label)/snapshot", payload: jpeg, retain: true))
        }
        return out
    }

    /// The level a label's topics use on `source`: `other` beyond `maximumLabels`.
    private func countLabel(_ label: String, in source: String) -> String {
        let counts = inView[source, default: [:]]
        return counts[label] != nil || counts.count < Self.maximumLabels ? label : "other"
    }

    private mutating func count(_ label: String, in source: String, by change: Int) -> [MQTTConnection.Publication] {
        let label = countLabel(label, in: source)
        var counts = inView[source, default: [:]]
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
