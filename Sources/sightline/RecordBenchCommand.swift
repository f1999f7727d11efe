import ArgumentParser
import Foundation
import Logging
import SightlineBus
import SightlineCore
import SightlinePipeline
import SightlineRecorder
import SightlineSamples

struct RecordBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "record",
        abstract: "Measure recording: the encoder's and the recorder's CPU, and run + record throughput.",
        prints: """
            On the 1280x720 sample, every frame analysed, as fast as possible, it measures:
              baseline  run alone (decode + detect + publish, no video)
              record    run + an in-process recorder, encoding with libx264: throughput and its
                        ratio to the baseline, the encoder's CPU per frame and share of a core at
                        30 fps, and the recorder's own CPU (its thread) per recorded second
            """)

    @Option(help: "The clip (default: the bundled 1280x720 sample).")
    var source: String?

    @Option(help: "x264 preset.")
    var preset = "superfast"

    func run() async throws {
        let logger = {
            var logger = Logger(label: "bench")
            logger.logLevel = .error
            return logger
        }()
        let clip = source ?? SampleMedia.faces1280x720.path
        let scratch = NSTemporaryDirectory() + "sightline-bench-record-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: scratch) }

        var configuration = PipelineConfiguration(source: clip)
        configuration.detection.discardLateFrames = false
        configuration.video.mode = .off
        configuration.bus.publishing = .bind(try Endpoint("inproc://bench-record-baseline"))
        let baseline = try AnalysisPipeline(configuration: configuration, logger: logger)
        var started = ContinuousClock.now
        let baseCounters = try await baseline.runToCompletion()
        let baseSeconds = (ContinuousClock.now - started).milliseconds / 1000
        let size = "\(baseline.input.width)x\(baseline.input.height)"
        print(
            String(
                format: "%@ baseline  %6.1f frames/s  run alone (%d frames)", size,
                Double(baseCounters.framesIn) / baseSeconds, baseCounters.framesIn))

        configuration.video.mode = .always
        configuration.video.reencode = true
        configuration.video.encoder.preset = preset
        configuration.bus.publishing = .bind(try Endpoint("inproc://bench-record"))
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let measured = Self.recordOnAThreadOfItsOwn(configuration.bus.endpoint, into: scratch, logger: logger)
        try await Task.sleep(for: .milliseconds(200))  // let the subscription reach the publisher
        started = ContinuousClock.now
        let counters = try await pipeline.runToCompletion()
        let result = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: measured.wait()) }
        }
        let seconds = (ContinuousClock.now - started).milliseconds / 1000
        if let error = result.error { throw SightlineError.invalidArgument("the recorder failed: \(error)") }
        let fps = Double(counters.framesIn) / seconds
        let mediaSeconds = Double(counters.framesIn) / (pipeline.input.frameRate ?? 30)
        let encoding = counters.encoding ?? TimingCounters()
        print(
            String(
                format: "%@ record    %6.1f frames/s  = %.2f x baseline  (%d frames written)", size, fps,
                fps * baseSeconds / Double(baseCounters.framesIn), result.framesWritten))
        print(
            String(
                format: "%@ encoder   %6.2f ms/frame (max %.2f)  = %.1f%% of a core at %.0f fps (x264 %@, 1 thread)",
                size,
                encoding.meanMs, encoding.maxMs, encoding.meanMs * (pipeline.input.frameRate ?? 30) / 10,
                pipeline.input.frameRate ?? 30, preset))
        print(
            String(
                format:
                    "%@ recorder  %6.3f s CPU for %.1f s recorded = %.2f%% of a core per recorded second (beyond encoding)",
                size,
                result.cpuSeconds, mediaSeconds, result.cpuSeconds / mediaSeconds * 100))
    }

    /// Records what `endpoint` publishes on a thread of its own, whose CPU time is what the
    /// recorder costs, until the source's final status.
    private static func recordOnAThreadOfItsOwn(_ endpoint: Endpoint, into scratch: String, logger: Logger)
        -> PendingResult<Measured>
    {
        let measured = PendingResult<Measured>()
        Thread.start(named: "recorder-bench") {
            let cpuStart = ThreadCPUClock.seconds
            var result = Measured()
            do {
                let recorder = try Recorder(
                    configuration: RecorderConfiguration(sourceID: "cam1", directory: scratch), logger: logger)
                let subscriber = try Subscriber(
                    endpoints: [endpoint], topics: Subscriber.topics(kinds: [.video, .faces, .status], source: "cam1"))
                while let received = try subscriber.receive(timeout: .seconds(5)) {
                    recorder.handle(received)
                    if received.message.status?.state == .stopped { break }
                }
                recorder.finish()
                result.framesWritten = recorder.counters.framesWritten
            } catch {
                result.error = "\(error)"
            }
            result.cpuSeconds = ThreadCPUClock.seconds - cpuStart
            measured.complete(result)
        }
        return measured
    }
}

/// What the recorder thread measured.
private struct Measured: Sendable {
    var cpuSeconds = 0.0
    var framesWritten = 0
    var error: String?
}
