import SightlineCore
import SightlineMQTT

/// What `/health` answers: `ok` (HTTP 200) while every source runs, every microphone is
/// heard and every recorder records; `unhealthy` (503) with one reason a problem otherwise.
/// A file source that came to its end is `ended`, which is not a problem.
package struct HealthReport: Sendable, Codable, Equatable {
    package struct Source: Sendable, Codable, Equatable {
        package var id: String
        /// `running`, `starting`, `interrupted`, `failed`, `ended`, or `recording` for a
        /// source this process only records.
        package var state: String
        package var reason: String?
        /// `recording`, `notStarted` (nothing to record yet: no frame has come, as while its
        /// source cannot be opened), `paused` (the disk is nearly full), `failing` (a write
        /// failed), or nil when this process does not record the source.
        package var recorder: String?
        package var recorderReason: String?
        /// `running` or `interrupted` for a camera's microphone (`audio-device`); nil without one.
        package var microphone: String?
        package var microphoneReason: String?
    }

    package var status: String
    package var sources: [Source]
    /// The MQTT output's broker: `connected` or `unreachable`; nil without an MQTT output.
    package var mqtt: String?
    package var mqttReason: String?
    /// One line a problem, naming its source.
    package var problems: [String]

    package var isHealthy: Bool { problems.isEmpty }

    package init(_ monitored: [MonitoredSource], mqtt: MQTTConnection.Counters? = nil) {
        sources = monitored.map(Self.source)
        self.mqtt = mqtt.map { $0.connected ? "connected" : "unreachable" }
        mqttReason = mqtt?.connected == false ? mqtt?.lastError ?? "not connected yet" : nil
        problems = sources.flatMap { source -> [String] in
            var problems: [String] = []
            if ["interrupted", "failed"].contains(source.state) {
                problems.append("\(source.id): \(source.state)\(source.reason.map { ": \($0)" } ?? "")")
            }
            if source.microphone == "interrupted" {
                problems.append("\(source.id): microphone interrupted: \(source.microphoneReason ?? "")")
            }
            if let recorder = source.recorder, !["recording", "notStarted"].contains(recorder) {
                problems.append("\(source.id): recorder \(recorder): \(source.recorderReason ?? "")")
            }
            return problems
        }
        if self.mqtt == "unreachable" { problems.append("mqtt: broker unreachable: \(mqttReason ?? "")") }
        status = problems.isEmpty ? "ok" : "unhealthy"
    }

    private static func source(_ monitored: MonitoredSource) -> Source {
        var state = "recording"
        var reason: String?
        let microphone = monitored.runner?.microphoneStatus
        if let runner = monitored.runner {
            let status = runner.status
            reason = status.reason
            state =
                switch status.state {
                case .started: "starting"
                case .running, .resumed: "running"
                case .interrupted: "interrupted"
                case .failed: "failed"
                case .stopped: "ended"
                }
        }
        let recorder = monitored.recorder?.snapshot
        return Source(
            id: monitored.id, state: state, reason: reason,
            recorder: recorder.map {
                $0.failureReason != nil
                    ? "failing"
                    : $0.pausedReason != nil
                        ? "paused"
                        : $0.counters.files.isEmpty && $0.counters.framesWritten == 0 ? "notStarted" : "recording"
            },
            recorderReason: recorder?.failureReason ?? recorder?.pausedReason,
            microphone: microphone.map { $0.state == .interrupted ? "interrupted" : "running" },
            microphoneReason: microphone?.reason)
    }
}
