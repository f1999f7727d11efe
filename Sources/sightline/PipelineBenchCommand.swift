import ArgumentParser
import Foundation
import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlinePipeline
import SightlineSamples

struct PipelineBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "pipeline",
        abstract: "Measure the detector, the whole pipeline and its latency on the sample media.",
        prints: """
            (`sightline bench` alone runs this one.) For each clip it prints, measured in the same run:
              detector   dlib HOG alone on decoded frames held in memory (ms/frame, frames/s)
              tracking   --full-scan-interval N (and --motion-gate): ms/frame as a ratio of scanning
                         every frame whole, and recall and precision against those full scans
              pipeline   decode + detect + publish as fast as possible, every frame analysed,
                         and its throughput as a ratio of the detector's
              paced      the bare detector again, one frame per frame interval as a camera delivers
                         them: an idle machine runs each frame slower than in a tight loop; and its
                         frames' time from when each was due to its answer, which includes waiting
                         for the frame before it when that one overran the interval, as the
                         pipeline's latency does
              latency    capture-to-publish in real-time mode (p50/p99), against the paced detector's
                         p99 + 5 ms (what the pipeline adds to detection at the same cadence), and
                         the run's own mean detection time (scan, landmarks, tracking): well above
                         the paced detector's, detection itself ran slower inside the pipeline
            Paced and latency alternate over --latency-rounds rounds and pool their frames.
            tools/bench.sh adds the Python dlib binding on the same frames as a baseline.
            """)

    @Option(help: "Clips to measure (default: the two bundled samples).")
    var source: [String] = []

    @Option(help: "Frames per measurement.")
    var frames = 300

    @Option(help: "Upsampling for the detector.")
    var upsample = 0

    @Option(help: "Threads per frame's scan (default: the usable cores).")
    var detectorThreads = FaceDetector.availableCores

    @Option(help: "Full-scan intervals to measure region tracking at.")
    var fullScanInterval: [Int] = [5]

    @Flag(help: "Also measure each full-scan interval with the motion gate on.")
    var motionGate = false

    @Option(
        help: ArgumentHelp(
            "Rounds of the paced detector and the real-time pipeline, alternated, their figures pooled (0: neither).",
            discussion:
                "p99 over one round of 300 frames is its third-slowest frame: on a shared machine, where the host stalls now and then, it moves by tens of milliseconds from run to run."
        ))
    var latencyRounds = 3

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if latencyRounds < 0 { throw ValidationError("--latency-rounds must not be negative") }
    }

    func run() async throws {
        var logger = global.makeLogger()
        logger.logLevel = max(logger.logLevel, .warning)  // keep the run's own lines out of the table
        let clips = source.isEmpty ? [SampleMedia.faces640x480.path, SampleMedia.faces1280x720.path] : source
        let detectorConfiguration = FaceDetector.Configuration(upsample: upsample, threads: detectorThreads)
        Swift.print(
            "sightline bench: dlib HOG upsample \(upsample), \(FaceDetector.instructionSet), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(detectorThreads) detector thread(s)"
        )
        for (index, clip) in clips.enumerated() {
            try await bench(clip, index: index, detectorConfiguration, logger: logger)
        }
    }

    /// The figures of one clip: the detector alone, tracking, the pipeline, and (with
    /// `--latency-rounds`) the real-time latency.
    private func bench(
        _ clip: String, index: Int, _ detectorConfiguration: FaceDetector.Configuration, logger: Logger
    ) async throws {
        let frames = try decodeFrames(clip, limit: self.frames)
        let detector = try FaceDetector(configuration: detectorConfiguration)
        _ = try detector.detect(in: frames[0].pixels)  // warm-up
        var faces = 0
        var perFrame: [Double] = []
        for frame in frames {
            let started = ContinuousClock.now
            faces += try detector.detect(in: frame.pixels).count
            perFrame.append((ContinuousClock.now - started).milliseconds)
        }
        let detectorMs = mean(perFrame)
        let detectorP99 = percentile(perFrame, 0.99)
        let size = "\(frames[0].pixels.width)x\(frames[0].pixels.height)"
        Swift.print(
            String(
                format: "%@ detector  %6.2f ms/frame (p99 %5.2f)  %6.1f frames/s  (%d frames, %d faces)", size,
                detectorMs, detectorP99, 1000 / detectorMs, frames.count, faces))
        let reference = try TrackingBench(frames: frames, configuration: detectorConfiguration)
        for interval in fullScanInterval {
            for gated in motionGate ? [false, true] : [false] {
                var tracking = detectorConfiguration
                tracking.fullScanInterval = interval
                tracking.motionGate = gated
                Swift.print(try reference.line(size, tracking, detectorMs: detectorMs))
            }
        }

        var configuration = PipelineConfiguration(source: clip)
        configuration.detection.faces = detectorConfiguration
        configuration.detection.discardLateFrames = false
        configuration.bus.publishing = .bind(try Endpoint("inproc://bench-\(index)-fast"))
        let fast = try AnalysisPipeline(configuration: configuration, logger: logger)
        let pipelineStarted = ContinuousClock.now
        let counters = try await fast.runToCompletion()
        let fps = Double(counters.framesIn) / ((ContinuousClock.now - pipelineStarted).milliseconds / 1000)
        Swift.print(
            String(
                format: "%@ pipeline  %6.1f frames/s  = %.2f x detector  (%d frames, %d messages)", size, fps,
                fps * detectorMs / 1000, counters.framesIn, counters.messagesPublished))
        guard latencyRounds > 0 else { return }
        configuration.detection.discardLateFrames = true
        configuration.source = .media(url: clip, options: MediaFileSource.Options(realtime: true))
        try await latency(configuration, index: index, frames: frames, detector: detector, size: size, logger: logger)
    }

    /// The paced detector's time per frame beside the real-time run's capture-to-publish latency.
    private func latency(
        _ realTime: PipelineConfiguration, index: Int, frames: [VideoFrame], detector: FaceDetector, size: String,
        logger: Logger
    ) async throws {
        var configuration = realTime
        var paced = PacedDetection()
        var live = RealTimeRun()
        for round in 0..<latencyRounds {
            try paced.add(frames, detector)
            configuration.bus.publishing = .bind(try Endpoint("inproc://bench-\(index)-live-\(round)"))
            try await live.add(configuration, logger: logger)
        }
        Swift.print(
            String(
                format: "%@ paced     %6.2f ms/frame (p99 %5.2f)  one frame every %.1f ms; due to answer p99 %5.2f",
                size, mean(paced.perFrame), percentile(paced.perFrame, 0.99),
                (frames[0].duration?.seconds ?? 1.0 / 30) * 1000, percentile(paced.fromDue, 0.99)))
        guard !live.latencies.isEmpty else { return }
        Swift.print(
            String(
                format:
                    "%@ latency   p50 %5.2f ms  p99 %5.2f ms  vs paced detector p99 + 5 ms = %5.2f ms  (%d messages, %d late drops; detection in the run %5.2f ms a frame)",
                size, percentile(live.latencies, 0.5), percentile(live.latencies, 0.99),
                percentile(paced.perFrame, 0.99) + 5, live.latencies.count, live.lateDrops,
                mean(live.detectionMs)))
    }
}

/// The bare detector with frames coming one per frame interval, as in real time: each frame's
/// time in the detector, and from when it was due to its answer (a frame due while the one
/// before is still being scanned waits for it, as in the pipeline). Rounds add to the pool.
private struct PacedDetection {
    var perFrame: [Double] = []
    var fromDue: [Double] = []

    mutating func add(_ frames: [VideoFrame], _ detector: FaceDetector) throws {
        let clock = ContinuousClock()
        let start = clock.now
        for (index, frame) in frames.enumerated() {
            let due = start + .seconds(Double(index) * (frame.duration?.seconds ?? 1.0 / 30))
            if clock.now < due { usleep(UInt32((due - clock.now).milliseconds * 1000)) }
            let started = clock.now
            _ = try detector.detect(in: frame.pixels)
            perFrame.append((clock.now - started).milliseconds)
            fromDue.append((clock.now - due).milliseconds)
        }
    }
}

/// The pipeline over a clip paced in real time: capture-to-publish latency of its faces
/// messages, the frames it dropped late and its mean detection time. Rounds add to the pool.
private struct RealTimeRun {
    var latencies: [Double] = []
    var lateDrops = 0
    var detectionMs: [Double] = []

    mutating func add(_ configuration: PipelineConfiguration, logger: Logger) async throws {
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        pipeline.publisher.recordLatencies()
        let counters = try await pipeline.runToCompletion()
        latencies += pipeline.publisher.latenciesMs
        lateDrops += counters.outputs["detect"]?.droppedTotal ?? 0
        detectionMs.append(counters.detection?.meanMs ?? 0)
    }
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(values.count) }

/// Up to `limit` decoded frames of `clip`, held in memory so a benchmark measures only
/// what it means to.
func decodeFrames(_ clip: String, limit: Int = .max) throws -> [VideoFrame] {
    let source = try MediaFileSource(url: clip)
    var result: [VideoFrame] = []
    while result.count < limit {
        switch try source.read() {
        case .frame(let frame): result.append(frame)
        case .skipped, .interrupted, .resumed: continue
        case .end: return result
        }
    }
    return result
}
