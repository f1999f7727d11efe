import Foundation

/// Home Assistant's MQTT discovery for what `MQTTTopics` publishes: retained
/// `<discovery prefix>/<component>/<node>/<object>/config` messages that make each source a
/// device with a binary sensor (a face in view), a sensor per label (how many are in view)
/// and its state, and the people a gallery names a device of their own with a sensor per
/// person (when they were last seen, the camera as an attribute). Every entity is
/// unavailable while `<prefix>/available` says `offline`.
///
/// Each entity is announced once, when what it shows first appears (a source's first
/// status, a label's first object, a person's first sighting), and again after every
/// reconnection with the rest of the retained state.
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
                "binary_sensor", id("face", source),
                Entity(
                    name: "Face in view", uniqueID: id("face", source), stateTopic: "\(prefix)/\(source)/face",
                    valueTemplate: "{{ 'ON' if value | int(0) > 0 else 'OFF' }}", deviceClass: "occupancy",
                    device: device, prefix: prefix)),
            config(
                "sensor", id("all", source),
                Entity(
                    name: "Objects in view", uniqueID: id("all", source), stateTopic: "\(prefix)/\(source)/all",
                    stateClass: "measurement", device: device, prefix: prefix)),
            config(
                "sensor", id("status", source),
                Entity(
                    name: "State", uniqueID: id("status", source), stateTopic: "\(prefix)/\(source)/status",
                    valueTemplate: "{{ value_json.state }}", attributesTopic: "\(prefix)/\(source)/status",
                    device: device, prefix: prefix)),
        ]
    }

    /// A sensor counting one label's objects in view on a source.
    mutating func label(_ label: String, of source: String) -> [MQTTConnection.Publication] {
        guard announced.insert("label \(source) \(label)").inserted else { return [] }
        let uniqueID = id("count", source, label)
        return [
            config(
                "sensor", uniqueID,
                Entity(
                    name: "\(label) count", uniqueID: uniqueID, stateTopic: "\(prefix)/\(source)/\(label)",
                    stateClass: "measurement", device: sourceDevice(source), prefix: prefix))
        ]
    }

    /// A person's sensor: when they were last seen, on which camera.
    mutating func person(_ level: String) -> [MQTTConnection.Publication] {
        guard announced.insert("person \(level)").inserted else { return [] }
        let uniqueID = id("person", level)
        return [
            config(
                "sensor", uniqueID,
                Entity(
                    name: "\(level) last seen", uniqueID: uniqueID, stateTopic: "\(prefix)/people/\(level)",
                    valueTemplate: "{{ value_json.last_seen }}", attributesTopic: "\(prefix)/people/\(level)",
                    deviceClass: "timestamp",
                    device: Device(
                        identifiers: [id("people")], name: "Sightline people", model: "gallery"),
                    prefix: prefix))
        ]
    }

    private func sourceDevice(_ source: String) -> Device {
        Device(identifiers: [id("source", source)], name: "Sightline \(source)", model: "camera source")
    }

    /// `sightline_<prefix>_<parts>`: letters, digits and `_` only, as discovery's IDs must be,
    /// and apart for two deployments with two prefixes.
    private func id(_ parts: String...) -> String {
        (["sightline", prefix] + parts).joined(separator: "_").unicodeScalars.map {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? String($0) : "_"
        }.joined()
    }

    private func config(_ component: String, _ object: String, _ entity: Entity) -> MQTTConnection.Publication {
        MQTTConnection.Publication(
            topic: "\(discoveryPrefix)/\(component)/\(object)/config", payload: MQTTTopics.json(entity), retain: true)
    }

    struct Device: Encodable {
        var identifiers: [String]
        var name: String
        var manufacturer = "Sightline"
        var model: String

        init(identifiers: [String], name: String, model: String) {
            (self.identifiers, self.name, self.model) = (identifiers, name, model)
        }
    }

    /// The fields of a discovery message, by their full names.
    struct Entity: Encodable {
        var name: String
        var uniqueID: String
        var stateTopic: String
        var valueTemplate: String?
        var attributesTopic: String?
        var deviceClass: String?
        var stateClass: String?
        var device: Device
        var availabilityTopic: String
        var payloadAvailable = "online"
        var payloadNotAvailable = "offline"

        init(
            name: String, uniqueID: String, stateTopic: String, valueTemplate: String? = nil,
            attributesTopic: String? = nil, deviceClass: String? = nil, stateClass: String? = nil, device: Device,
            prefix: String
        ) {
            (self.name, self.uniqueID, self.stateTopic, self.valueTemplate) = (
                name, uniqueID, stateTopic, valueTemplate
            )
            (self.attributesTopic, self.deviceClass, self.stateClass, self.device) = (
                attributesTopic, deviceClass, stateClass, device
            )
            availabilityTopic = "\(prefix)/available"
        }

        enum CodingKeys: String, CodingKey {
            case name, device
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
