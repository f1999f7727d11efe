import Foundation

/// Home Assistant's MQTT discovery for what `MQTTTopics` publishes: retained
/// `<discovery prefix>/<component>/sightline_<prefix>/<object>/config` messages that make
/// each source a device with a binary sensor (a face in view), a sensor per label (how many
/// are in view), a camera per label with snapshots and its state, and the people a gallery
/// names a device of their own with a sensor per person (when they were last seen, the
/// camera as an attribute). Every entity is unavailable while `<prefix>/available` says
/// `offline`.
///
/// Each entity is announced once, when what it shows first appears (a source's first
/// status, a label's first object or snapshot, an enrolled person at the start), and again
/// after every reconnection with the rest of the retained state. The node level, one per
/// prefix, lets a later run find what an earlier one announced (`ownSensors`).
struct HomeAssistantDiscovery {
    let discoveryPrefix: String
    let prefix: String
    private var announced: Set<String> = []

    init(discoveryPrefix: String, prefix: String) {
        self.discoveryPrefix = discoveryPrefix
        self.prefix = prefix
    }

    /// A source's device: a face in view, everything in view, and its state.
    mutating func source(_ source: String) -> [MQTTConnection.Publication] {
        guard announced.insert("source \(source)").inserted else { return [] }
        let device = sourceDevice(source)
        return [
            config(
                "binary_sensor",
                Entity(
                    name: "Face in view", uniqueID: id("face", source), stateTopic: "\(prefix)/\(source)/face",
                    valueTemplate: "{{ 'ON' if value | int(0) > 0 else 'OFF' }}", deviceClass: "occupancy",
                    device: device, prefix: prefix)),
            config(
                "sensor",
                Entity(
                    name: "Objects in view", uniqueID: id("all", source), stateTopic: "\(prefix)/\(source)/all",
                    stateClass: "measurement", device: device, prefix: prefix)),
            config(
                "sensor",
                Entity(
                    name: "State", uniqueID: id("status", source), stateTopic: "\(prefix)/\(source)/status",
                    valueTemplate: "{{ value_json.state }}", attributesTopic: "\(prefix)/\(source)/status",
                    device: device, prefix: prefix)),
        ]
    }

    /// A sensor counting one label's objects in view on a source.
    mutating func label(_ label: String, of source: String) -> [MQTTConnection.Publication] {
        announce(
            "sensor",
            Entity(
                name: "\(label) count", uniqueID: id("count", source, label),
                stateTopic: "\(prefix)/\(source)/\(label)",
                stateClass: "measurement", device: sourceDevice(source), prefix: prefix))
    }

    /// A camera showing the snapshots of one label's newest object on a source.
    mutating func camera(_ label: String, of source: String) -> [MQTTConnection.Publication] {
        announce(
            "camera",
            Entity(
                name: "\(label) snapshot", uniqueID: id("snapshot", source, label),
                topic: "\(prefix)/\(source)/\(label)/snapshot",
                device: sourceDevice(source), prefix: prefix))
    }

    /// Where the broker keeps this prefix's sensors' discovery messages.
    var ownSensors: String { "\(discoveryPrefix)/sensor/\(node)/+/config" }

    /// The people level a retained sensor config of this prefix is for; nil: not a person's.
    func personLevel(ofConfig topic: String, payload: [UInt8]) -> String? {
        let people = "\(prefix)/people/"
        guard topic.hasPrefix("\(discoveryPrefix)/sensor/\(node)/"),
            let entity = try? JSONDecoder().decode(Entity.self, from: Data(payload)),
            let state = entity.stateTopic, state.hasPrefix(people)
        else { return nil }
        return String(state.dropFirst(people.count))
    }

    /// A person's sensor: when they were last seen, on which camera.
    mutating func person(_ level: String) -> [MQTTConnection.Publication] {
        announce(
            "sensor",
            Entity(
                name: "\(level) last seen", uniqueID: id("person", level), stateTopic: "\(prefix)/people/\(level)",
                valueTemplate: "{{ value_json.last_seen }}", attributesTopic: "\(prefix)/people/\(level)",
                deviceClass: "timestamp",
                device: Device(identifiers: [id("people")], name: "Sightline people", model: "gallery"),
                prefix: prefix))
    }

    /// `entity`'s config, the first time it is asked for.
    private mutating func announce(_ component: String, _ entity: Entity) -> [MQTTConnection.Publication] {
        guard announced.insert(entity.uniqueID).inserted else { return [] }
        return [config(component, entity)]
    }

    private func sourceDevice(_ source: String) -> Device {
        Device(identifiers: [id("source", source)], name: "Sightline \(source)", model: "camera source")
    }

    /// `sightline_<prefix>_<parts>`: letters, digits and `_` only, as discovery's IDs must be,
    /// and apart for two deployments with two prefixes.
    private func id(_ parts: String...) -> String {
        Self.identifier((["sightline", prefix] + parts).joined(separator: "_"))
    }

    /// The discovery topics' node level: `sightline_<prefix>`.
    private var node: String { Self.identifier("sightline_\(prefix)") }

    private static func identifier(_ text: String) -> String {
        text.unicodeScalars.map {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? String($0) : "_"
        }.joined()
    }

    /// `uniqueID` without its node's part is the object level.
    private func config(_ component: String, _ entity: Entity) -> MQTTConnection.Publication {
        let object = entity.uniqueID.dropFirst(node.count + 1)
        return MQTTConnection.Publication(
            topic: "\(discoveryPrefix)/\(component)/\(node)/\(object)/config", payload: MQTTTopics.json(entity),
            retain: true)
    }

    struct Device: Codable {
        var identifiers: [String]
        var name: String
        var manufacturer = "Sightline"
        var model: String

        init(identifiers: [String], name: String, model: String) {
            (self.identifiers, self.name, self.model) = (identifiers, name, model)
        }
    }

    /// The fields of a discovery message, by their full names.
    struct Entity: Codable {
        var name: String
        var uniqueID: String
        /// What a sensor shows; a camera's images come on `topic`.
        var stateTopic: String?
        var topic: String?
        var valueTemplate: String?
        var attributesTopic: String?
        var deviceClass: String?
        var stateClass: String?
        var device: Device
        var availabilityTopic: String
        var payloadAvailable = "online"
        var payloadNotAvailable = "offline"

        init(
            name: String, uniqueID: String, stateTopic: String? = nil, topic: String? = nil,
            valueTemplate: String? = nil,
            attributesTopic: String? = nil, deviceClass: String? = nil, stateClass: String? = nil, device: Device,
            prefix: String
        ) {
            (self.name, self.uniqueID, self.stateTopic, self.topic, self.valueTemplate) = (
                name, uniqueID, stateTopic, topic, valueTemplate
            )
            (self.attributesTopic, self.deviceClass, self.stateClass, self.device) = (
                attributesTopic, deviceClass, stateClass, device
            )
            availabilityTopic = "\(prefix)/available"
        }

        enum CodingKeys: String, CodingKey {
            case name, device, topic
            case uniqueID = "unique_id"
            case stateTopic = "state_topic"
            case valueTemplate = "value_template"
            case attributesTopic = "json_attributes_topic"
            case deviceClass = "device_class"
            case stateClass = "state_class"
            case availabilityTopic = "availability_topic"
            case payloadAvailable = "payload_available"
            case payloadNotAvailable = "payload_not_available"
        }
    }
}
