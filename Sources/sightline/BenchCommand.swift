import ArgumentParser
import Foundation
import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlinePipeline
import SightlineSamples

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the detector, the whole pipeline and its latency on the sample media.",
        discussion: """
            Run a release build: swift run -c release sightline bench
            For each clip it prints, measured in the same run:
              detector   dlib HOG alone on decoded frames held in memory (ms/frame, frames/s)
              pipeline   decode + detect + publish as fast as possible, every frame analysed,
                         and its throughput as a ratio of the detector's
              latency    capture-to-publish in real-time mode (p50/p99), against the detector's p99 + 5 ms
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

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        var logger = global.makeLogger()
        logger.logLevel = max(logger.logLevel, .warning)  // keep the run's own lines out of the table
        let clips = source.isEmpty ? [SampleMedia.faces640x480.path, SampleMedia.faces1280x720.path] : source
        let detectorConfiguration = FaceDetector.Configuration(upsample: upsample, threads: detectorThreads)
        Swift.print(
            "sightline bench: dlib HOG upsample \(upsample), \(FaceDetector.instructionSet), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(detectorThreads) detector thread(s)"
        )
        for (index, clip) in clips.enumerated() {
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
            let detectorMs = perFrame.reduce(0, +) / Double(frames.count)
            let detectorP99 = percentile(perFrame, 0.99)
            let size = "\(frames[0].pixels.width)x\(frames[0].pixels.height)"
            Swift.print(
                String(
                    format: "%@ detector  %6.2f ms/frame (p99 %5.2f)  %6.1f frames/s  (%d frames, %d faces)", size,
                    detectorMs, detectorP99, 1000 / detectorMs, frames.count, faces))

            var configuration = PipelineConfiguration(source: clip)
            configuration.detector = detectorConfiguration
            configuration.discardLateFrames = false
            configuration.publish = try Endpoint("inproc://bench-\(index)-fast")
            let fast = try AnalysisPipeline(configuration: configuration, logger: logger)
            let pipelineStarted = ContinuousClock.now
            let counters = try await fast.runToCompletion()
            let fps = Double(counters.framesIn) / ((ContinuousClock.now - pipelineStarted).milliseconds / 1000)
            Swift.print(
                String(
                    format: "%@ pipeline  %6.1f frames/s  = %.2f x detector  (%d frames, %d messages)", size, fps,
                    fps * detectorMs / 1000, counters.framesIn, counters.messagesPublished))

            configuration.discardLateFrames = true
            configuration.sourceOptions = MediaFileSource.Options(realtime: true)
            configuration.publish = try Endpoint("inproc://bench-\(index)-live")
            let live = try AnalysisPipeline(configuration: configuration, logger: logger)
            live.publisher.recordLatencies()
            let liveCounters = try await live.runToCompletion()
            let latencies = live.publisher.latenciesMs
            guard !latencies.isEmpty else { continue }
            let dropped = liveCounters.outputs["detect"]?.droppedTotal ?? 0
            Swift.print(
                String(
                    format:
                        "%@ latency   p50 %5.2f ms  p99 %5.2f ms  vs detector p99 + 5 ms = %5.2f ms  (%d messages, %d late drops)",
                    size, percentile(latencies, 0.5), percentile(latencies, 0.99), detectorP99 + 5, latencies.count,
                    dropped))
        }
    }
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

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
