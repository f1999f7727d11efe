import SightlineCore
import SightlineMQTT

/// What `/health` answers: `ok` (HTTP 200) while every source runs, every microphone is
/// heard and every recorder records; `unhealthy` (503) with one reason a problem otherwise.
/// A file source that came to its end is `ended`, which is not a problem.
package struct HealthReport: Sendable, Codable, Equatable {
    package struct Source: Sendable, Codable, Equatable {
        package var id: String
        /// `running`, `starting`, `interrupted` (a camera away), `reconnecting` (a live
        /// stream away: a problem after the reconnect grace), `stalled` (no frame for a few
        /// frame intervals, or an open that has not finished), `failed`, `ended`, or
        /// `recording` for a source this process only records.
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
        let states = monitored.map(Self.source)
        sources = states.map(\.source)
        self.mqtt = mqtt.map { $0.connected ? "connected" : "unreachable" }
        mqttReason = mqtt?.connected == false ? mqtt?.lastError ?? "not connected yet" : nil
        problems = states.flatMap { (source, isProblem) -> [String] in
            var problems: [String] = []
            if isProblem {
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

    private static func source(_ monitored: MonitoredSource) -> (source: Source, isProblem: Bool) {
        var state = "recording"
        var reason: String?
        var isProblem = false
        let microphone = monitored.runner?.microphoneStatus
        if let runner = monitored.runner { (state, reason, isProblem) = runner.health }
        let recorder = monitored.recorder?.snapshot
        let source = Source(
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
        return (source, isProblem)
    }
}
