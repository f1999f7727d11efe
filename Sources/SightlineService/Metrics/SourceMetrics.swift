import Foundation
import Metrics
import SightlineCore
import SightlineMQTT
import SightlineRecorder
import Synchronization

/// What metrics and health look at for one source: its runner, when this process analyses
/// it, and its recorder, when this process records it.
package struct MonitoredSource: Sendable {
    package var id: String
    package var runner: SourceRunner?
    package var recorder: RecorderService?
    package var recordingDirectory: String?

    package init(id: String, runner: SourceRunner?, recorder: RecorderService?, recordingDirectory: String?) {
        self.id = id
        self.runner = runner
        self.recorder = recorder
        self.recordingDirectory = recordingDirectory
    }
}

/// Turns the counters each source and recorder keeps (the ones its status messages carry)
/// into swift-metrics counters, by how much each grew since the last update: Prometheus
/// sees monotonic counters whose values are the status counters', with labels by source,
/// output and reason. A source opened again starts its counters from zero; the metric
/// goes on growing from where it was. Updated before each scrape; thread-safe.
package final class SourceMetrics: Sendable {
    private let sources: [MonitoredSource]
    private let retention: RecordingRetention
    private let mqtt: MQTTOutput?
    private let mirrored = Mutex<[String: Mirrored]>([:])

    /// A metric counter and the status counter's value it last mirrored.
    private struct Mirrored {
        enum Counting {
            case whole(Counter)
            case seconds(FloatingPointCounter)
        }
        let counter: Counting
        var last: Double

        /// Grows the metric by what the status counter grew since the last time. A status
        /// counter that went back to zero belongs to a source opened again.
        mutating func mirror(_ value: Double) {
            let growth = value >= last ? value - last : value
            if growth > 0 {
                switch counter {
                case .whole(let counter): counter.increment(by: Int64(growth))
                case .seconds(let counter): counter.increment(by: growth)
                }
            }
            last = value
        }
    }

    package init(sources: [MonitoredSource], retention: RecordingRetention, mqtt: MQTTOutput? = nil) {
        self.sources = sources
        self.retention = retention
        self.mqtt = mqtt
    }

    /// Reads every counter now and brings the metrics up to it.
    package func update() {
        mirrored.withLock { mirrored in
            for source in sources { update(source, &mirrored) }
            for (source, count) in retention.deleted {
                set("sightline_retention_deleted_files_total", [("source", source)], count, &mirrored)
            }
            if let counters = mqtt?.counters {
                set("sightline_mqtt_messages_sent_total", [], counters.sent, &mirrored)
                set("sightline_mqtt_messages_dropped_total", [], counters.dropped, &mirrored)
                set("sightline_mqtt_reconnects_total", [], counters.reconnects, &mirrored)
                Gauge(label: "sightline_mqtt_messages_queued").record(counters.queued)
                Gauge(label: "sightline_mqtt_connected").record(counters.connected ? 1 : 0)
            }
        }
        for directory in Set(sources.compactMap(\.recordingDirectory)) {
            var info = statvfs()
            guard statvfs(directory, &info) == 0 else { continue }
            Gauge(label: "sightline_disk_free_bytes", dimensions: [("directory", directory)])
                .record(Double(UInt64(info.f_bavail) * UInt64(info.f_frsize)))
        }
    }

    private func update(_ source: MonitoredSource, _ mirrored: inout [String: Mirrored]) {
        let id = [("source", source.id)]
        if let runner = source.runner {
            let up = runner.status.state
            Gauge(label: "sightline_source_up", dimensions: id).record([.running, .resumed].contains(up) ? 1 : 0)
            Gauge(label: "sightline_source_stalled", dimensions: id)
                .record(runner.stallReason == nil ? 0 : 1)
            set("sightline_source_restarts_total", id, runner.restarts, &mirrored)
            if let counters = runner.pipeline?.counters {
                set("sightline_frames_total", id, counters.framesIn, &mirrored)
                for (reason, count) in counters.sourceSkipped {
                    set("sightline_frames_skipped_total", id + [("reason", reason)], count, &mirrored)
                }
                for (output, outputCounters) in counters.outputs {
                    for (reason, count) in outputCounters.dropped {
                        set(
                            "sightline_frames_dropped_total", id + [("output", output), ("reason", reason)], count,
                            &mirrored)
                    }
                }
                set("sightline_interruptions_total", id, counters.interruptions, &mirrored)
                set("sightline_source_reconnects_total", id, counters.reconnects ?? 0, &mirrored)
                setSeconds(
                    "sightline_source_disconnected_seconds_total", id, counters.disconnectedSeconds ?? 0, &mirrored)
                if let input = counters.metadataIn {
                    set("sightline_metadata_in_accepted_total", id, input.accepted, &mirrored)
                    for (reason, count) in input.rejected {
                        set("sightline_metadata_in_rejected_total", id + [("reason", reason)], count, &mirrored)
                    }
                }
                for (detector, detectorCounters) in counters.objectsIn ?? [:] {
                    let labels = id + [("detector", detector)]
                    set("sightline_detector_groups_total", labels, detectorCounters.groups, &mirrored)
                    for (reason, count) in detectorCounters.rejected {
                        set("sightline_detector_groups_rejected_total", labels + [("reason", reason)], count, &mirrored)
                    }
                }
                set("sightline_messages_published_total", id, counters.messagesPublished, &mirrored)
                set("sightline_published_bytes_total", id, counters.bytesPublished, &mirrored)
                if let audio = counters.audio {
                    set("sightline_audio_frames_total", id, audio.packets, &mirrored)
                    for (reason, count) in audio.skipped {
                        set("sightline_audio_frames_skipped_total", id + [("reason", reason)], count, &mirrored)
                    }
                    set("sightline_audio_timestamp_jumps_total", id, audio.timestampJumps, &mirrored)
                }
            }
        }
        if let recorder = source.recorder { update(recorder, id, &mirrored) }
    }

    private func update(_ recorder: RecorderService, _ id: [(String, String)], _ mirrored: inout [String: Mirrored]) {
        let snapshot = recorder.snapshot
        let counters = snapshot.counters
        Gauge(label: "sightline_recorder_up", dimensions: id)
            .record(snapshot.failureReason == nil && snapshot.pausedReason == nil ? 1 : 0)
        set("sightline_recorder_frames_written_total", id, counters.framesWritten, &mirrored)
        for (reason, count) in counters.framesDropped {
            set("sightline_recorder_frames_dropped_total", id + [("reason", reason)], count, &mirrored)
        }
        set("sightline_recorder_metadata_samples_written_total", id, counters.metadataWritten, &mirrored)
        for (reason, count) in counters.metadataDropped {
            set("sightline_recorder_metadata_samples_dropped_total", id + [("reason", reason)], count, &mirrored)
        }
        set("sightline_recorder_audio_frames_written_total", id, counters.audioWritten, &mirrored)
        for (reason, count) in counters.audioDropped {
            set("sightline_recorder_audio_frames_dropped_total", id + [("reason", reason)], count, &mirrored)
        }
        set("sightline_recorder_audio_timestamp_jumps_total", id, counters.audioJumps, &mirrored)
        set("sightline_recorder_written_bytes_total", id, Int(counters.bytesWritten), &mirrored)
        set("sightline_recorder_files_finished_total", id, counters.files.count, &mirrored)
        set("sightline_recorder_write_failures_total", id, counters.writeFailures, &mirrored)
        set("sightline_recorder_source_outages_total", id, counters.sourceOutages, &mirrored)
        for (reason, count) in snapshot.rejectedMessages {
            set("sightline_recorder_messages_rejected_total", id + [("reason", reason)], count, &mirrored)
        }
    }

    private func set(
        _ label: String, _ dimensions: [(String, String)], _ value: Int, _ mirrored: inout [String: Mirrored]
    ) {
        mirror(label, dimensions, Double(value), .whole(Counter(label: label, dimensions: dimensions)), &mirrored)
    }

    /// As `set`, for a counter of seconds.
    private func setSeconds(
        _ label: String, _ dimensions: [(String, String)], _ value: Double, _ mirrored: inout [String: Mirrored]
    ) {
        mirror(
            label, dimensions, value, .seconds(FloatingPointCounter(label: label, dimensions: dimensions)), &mirrored)
    }

    private func mirror(
        _ label: String, _ dimensions: [(String, String)], _ value: Double,
        _ counter: @autoclosure () -> Mirrored.Counting, _ mirrored: inout [String: Mirrored]
    ) {
        let key = ([label] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "\u{1}")
        var entry = mirrored[key] ?? Mirrored(counter: counter(), last: 0)
        entry.mirror(value)
        mirrored[key] = entry
    }
}
