import ArgumentParser
import Foundation
import SightlineBus
import SightlineCore
import SightlineDetection
import SightlinePipeline
import SightlineSamples

struct FacesBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "faces",
        abstract: "Measure landmarks and face descriptors per face, and what a gallery costs a whole run.",
        prints: """
            Prints, measured in the same run:
              landmarks    dlib's 5-point shape predictor, ms per face (the faces of one frame)
              descriptor   dlib's recognition network, ms per face (jitter 0, as runs use it)
              run          every frame of the clip analysed, without and with --gallery, frames/s
                           (best of --runs each, alternated) and the ratio
            tools/bench-faces.sh adds the Python dlib binding on the same frame as a baseline.
            """)

    @Option(help: "The clip (default: the bundled 640x480 sample).")
    var source: String?

    @Option(help: "The frame whose faces are measured.")
    var frame = 150

    @Option(help: "Repetitions per face.")
    var repetitions = 20

    @Option(help: "Whole runs of each kind.")
    var runs = 3

    @OptionGroup var models: FaceModelOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        var logger = global.makeLogger()
        logger.logLevel = max(logger.logLevel, .warning)
        let clip = source ?? SampleMedia.faces640x480.path
        let (landmarker, recognizer) = try models.modelFiles.recognitionModels()
        let frames = try decodeFrames(clip, limit: frame + 1)
        guard frames.count > frame else { throw ValidationError("the clip has \(frames.count) frames") }
        let pixels = frames[frame].pixels
        let faces = try FaceDetector().detect(in: pixels)
        guard !faces.isEmpty, let rgb = pixels.converted(to: .rgb24) else {
            throw ValidationError("no face in frame \(frame); pick another with --frame")
        }
        let shapes = try faces.map { try landmarker.landmarks(of: $0, in: pixels) }
        var descriptor = try recognizer.descriptor(of: shapes[0], in: rgb)  // warm-up
        // Landmarks take well under a millisecond: ten times the repetitions.
        let landmarksMs = try measure(10 * repetitions, faces: faces.count) {
            for face in faces { _ = try landmarker.landmarks(of: face, in: pixels) }
        }
        let descriptorMs = try measure(repetitions, faces: faces.count) {
            for shape in shapes { descriptor = try recognizer.descriptor(of: shape, in: rgb) }
        }
        Swift.print(
            "sightline bench faces: \(clip.split(separator: "/").last ?? "") frame \(frame), \(faces.count) face(s)")
        Swift.print(String(format: "landmarks   %7.3f ms/face", landmarksMs))
        Swift.print(String(format: "descriptor  %7.3f ms/face", descriptorMs))

        // A gallery of one person: the face measured above.
        var gallery = FaceGallery()
        try gallery.enrol(name: "bench", .init(image: "frame \(frame)", jitters: 0, descriptor: descriptor))
        var best: [Bool: Double] = [:]
        for run in 0..<(2 * runs) {
            let named = run % 2 == 1
            var configuration = PipelineConfiguration(source: clip)
            configuration.detection.discardLateFrames = false
            configuration.detection.models = models.modelFiles
            configuration.detection.identities = named ? IdentityConfiguration(gallery: gallery) : nil
            configuration.bus.publishing = .bind(try Endpoint("inproc://bench-faces-\(run)"))
            let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
            let started = ContinuousClock.now
            let counters = try await pipeline.runToCompletion()
            let fps = Double(counters.framesIn) / ((ContinuousClock.now - started).milliseconds / 1000)
            best[named] = max(best[named] ?? 0, fps)
        }
        let (plain, named) = (best[false]!, best[true]!)
        Swift.print(
            String(
                format: "run         %6.1f frames/s without a gallery, %6.1f with: %.3f x", plain, named, named / plain)
        )
    }

    /// Mean milliseconds per face of `body`, which handles `faces` faces, run `times` times.
    private func measure(_ times: Int, faces: Int, _ body: () throws -> Void) throws -> Double {
        let started = ContinuousClock.now
        for _ in 0..<times { try body() }
        return (ContinuousClock.now - started).milliseconds / Double(times * faces)
    }
}
