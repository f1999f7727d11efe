import ArgumentParser
import SightlineMQTT

/// The MQTT output's options, shared by the commands that run sources.
struct MQTTOptions: ParsableArguments {
    @Option(help: "Publish events, counts, people and statuses to this MQTT broker (mqtt://HOST[:PORT], mqtts://…).")
    var mqtt: String?

    @Option(help: "With --mqtt: the first level of every topic.")
    var mqttPrefix = "sightline"

    @Option(help: "With --mqtt: the client ID (default sightline-<pid>); two processes on one broker need two.")
    var mqttClientID: String?

    @Option(help: "With --mqtt: the user name to log in with.")
    var mqttUsername: String?

    @Option(help: "With --mqtt: a file whose first line is the password.")
    var mqttPasswordFile: String?

    @Option(help: "With mqtts://: the authority that signed the broker's certificate (else the system's).")
    var mqttCAFile: String?

    @Option(help: "With mqtts://: this client's certificate (PEM), when the broker asks for one.")
    var mqttCertFile: String?

    @Option(help: "With --mqtt-cert-file: its private key (PEM).")
    var mqttKeyFile: String?

    @Option(help: "With --mqtt: the QoS of events (0, 1 or 2).")
    var mqttQos: Int32 = 1

    @Option(help: "With --mqtt: events kept while the broker is unreachable; the oldest are dropped beyond.")
    var mqttQueue = 1000

    @Option(help: "With --mqtt: what people topics call a face no gallery named.")
    var mqttUnknownName = "unknown"

    @Option(help: "With --mqtt: where Home Assistant's discovery messages go, or none.")
    var mqttDiscoveryPrefix = "homeassistant"

    /// The keys of `serve`'s `mqtt:` section: the options without their `mqtt-`.
    static let fileKeys: Set<String> = [
        "url", "prefix", "client-id", "username", "password-file", "ca-file", "cert-file", "key-file", "qos", "queue",
        "unknown-name", "discovery-prefix",
    ]

    /// The checked configuration; nil without `--mqtt`.
    func configuration() throws -> MQTTConfiguration? {
        guard let mqtt else { return nil }
        var configuration = MQTTConfiguration(url: mqtt)
        configuration.prefix = mqttPrefix
        configuration.clientID = mqttClientID
        configuration.username = mqttUsername
        configuration.passwordFile = mqttPasswordFile
        configuration.caFile = mqttCAFile
        configuration.certificateFile = mqttCertFile
        configuration.keyFile = mqttKeyFile
        configuration.qos = mqttQos
        configuration.queueLimit = mqttQueue
        configuration.unknownName = mqttUnknownName
        configuration.discoveryPrefix = mqttDiscoveryPrefix == "none" ? nil : mqttDiscoveryPrefix
        _ = try configuration.validated()
        return configuration
    }
}
