import CoreMetrics
import Prometheus

/// swift-metrics' backend for the process: swift-prometheus 2's registry, whose text
/// `/metrics` serves. Every Sightline metric is created through the swift-metrics API; this
/// factory gives each the help text Prometheus shows (`# HELP`), which swift-metrics has no
/// place for, and histograms of detection time buckets that fit a detector.
package struct MetricsBackend: Sendable {
    package let registry: PrometheusCollectorRegistry

    /// The help text of each metric Sightline emits, by name.
    static let help: [String: String] = [
        "sightline_frames_total": "Frames the source delivered.",
        "sightline_frames_dropped_total": "Frames an output (detect, codes, encode, frames) discarded, by reason.",
        "sightline_frames_skipped_total": "Frames or packets the source skipped (corrupt, driverDropped), by reason.",
        "sightline_interruptions_total": "Times the source was interrupted (device unplugged or failed).",
        "sightline_source_restarts_total": "Times the source was opened again after a failure.",
        "sightline_source_reconnects_total": "Times a camera or live stream came back after an interruption.",
        "sightline_source_disconnected_seconds_total":
            "Seconds the source spent interrupted (a stream or camera away), the outage in progress included.",
        "sightline_source_stalled": "1 while the source is stalled: no frame for a few frame intervals, or an open that has not finished.",
        "sightline_detection_seconds": "Time to detect objects in one frame, by detector.",
        "sightline_detection_failures_total": "Frames a detector failed on (skipped, counted).",
        "sightline_objects_published_total":
            "Objects (faces, codes, other detectors') published, one per object per frame.",
        "sightline_snapshots_published_total":
            "JPEG snapshots of objects published (snapshots, while someone subscribes), by detector.",
        "sightline_mqtt_messages_sent_total": "MQTT messages handed to the broker's connection.",
        "sightline_mqtt_messages_dropped_total": "MQTT events dropped because the queue for the broker was full.",
        "sightline_mqtt_reconnects_total": "Times the MQTT output connected to its broker again.",
        "sightline_mqtt_messages_queued": "MQTT events waiting for the broker.",
        "sightline_mqtt_connected": "1 while the MQTT output is connected to its broker.",
        "sightline_metadata_in_accepted_total": "Timed metadata groups clients sent to the source and it took.",
        "sightline_metadata_in_rejected_total": "Groups sent to the source's metadata input it dropped, by reason.",
        "sightline_detector_groups_total": "Groups of objects a detector in another process sent and the source took.",
        "sightline_detector_groups_rejected_total": "Groups of a detector in another process dropped, by reason.",
        "sightline_messages_published_total": "Messages the source published on the bus.",
        "sightline_published_bytes_total": "Bytes of messages the source published on the bus.",
        "sightline_source_up": "1 while the source delivers frames, 0 while it is interrupted, retrying or ended.",
        "sightline_audio_frames_total": "AAC frames the source's audio made (passed through or encoded).",
        "sightline_audio_frames_skipped_total": "Source audio left out (undecodable, encoder, overrun), by reason.",
        "sightline_audio_timestamp_jumps_total": "Steps of over 100 ms in the source's audio timestamps.",
        "sightline_recorder_frames_written_total": "Video frames written into recordings.",
        "sightline_recorder_frames_dropped_total": "Video frames the recorder did not write, by reason.",
        "sightline_recorder_metadata_samples_written_total": "Timed metadata samples written into recordings.",
        "sightline_recorder_metadata_samples_dropped_total": "Timed metadata samples not written, by reason.",
        "sightline_recorder_audio_frames_written_total": "AAC frames written into recordings.",
        "sightline_recorder_audio_frames_dropped_total": "AAC frames not written into recordings, by reason.",
        "sightline_recorder_audio_timestamp_jumps_total":
            "Audio gaps, overlaps and new clocks the recorder evened out.",
        "sightline_recorder_written_bytes_total": "Bytes written into recordings.",
        "sightline_recorder_files_finished_total": "Recordings finalised.",
        "sightline_recorder_write_failures_total":
            "Times a write or a new file failed and recording waited to try a new file.",
        "sightline_recorder_source_outages_total":
            "Times the source went away while recorded: each finished the file, the next began at a key frame.",
        "sightline_recorder_messages_rejected_total": "Bus messages the recorder refused, by reason.",
        "sightline_recorder_up": "1 while the recorder records, 0 while it is paused (disk nearly full) or stopped.",
        "sightline_retention_deleted_files_total": "Recordings deleted by retention (age or total size).",
        "sightline_disk_free_bytes": "Free bytes for unprivileged users in a recordings directory's file system.",
    ]

    /// swift-metrics bootstrapped with this backend, the first time it is asked for (once per
    /// process, as swift-metrics allows), before any pipeline makes its metrics: a metric
    /// made before stays a no-op.
    package static let shared: MetricsBackend = {
        let backend = MetricsBackend(registry: PrometheusCollectorRegistry())
        MetricsSystem.bootstrap(Factory(registry: backend.registry))
        return backend
    }()

    /// The Prometheus text exposition of every metric.
    package func exposition() -> [UInt8] { registry.emitToBuffer() }

    private struct Factory: MetricsFactory {
        let registry: PrometheusCollectorRegistry
        let fallback: PrometheusMetricsFactory

        init(registry: PrometheusCollectorRegistry) {
            self.registry = registry
            fallback = PrometheusMetricsFactory(registry: registry)
        }

        private func descriptor(_ label: String) -> MetricNameDescriptor {
            MetricNameDescriptor(metricName: label, unitName: "", helpText: MetricsBackend.help[label] ?? "")
        }

        func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
            registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
        }

        func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler
        {
            registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
        }

        func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
            registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
        }

        func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
            registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
        }

        /// Detection takes milliseconds on small frames and up to seconds on large ones.
        func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
            registry.makeDurationHistogram(
                descriptor: descriptor(label), labels: dimensions,
                buckets: [1, 2, 5, 10, 20, 35, 50, 75, 100, 150, 250, 500, 1000, 2500].map { .milliseconds($0) })
        }

        func destroyCounter(_ handler: any CounterHandler) { fallback.destroyCounter(handler) }
        func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
            fallback.destroyFloatingPointCounter(handler)
        }
        func destroyRecorder(_ handler: any RecorderHandler) { fallback.destroyRecorder(handler) }
        func destroyMeter(_ handler: any MeterHandler) { fallback.destroyMeter(handler) }
        func destroyTimer(_ handler: any TimerHandler) { fallback.destroyTimer(handler) }
    }
}
