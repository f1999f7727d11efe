import ArgumentParser
import Foundation
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineSamples

struct CodesBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-codes",
        abstract: "Measure the barcode pass and the frames output on the barcode sample.",
        discussion: """
            Run a release build: swift run -c release sightline bench-codes
            On decoded frames held in memory it prints, measured in the same run:
              codes     zxing-cpp over the whole frame, all formats (and --try-harder), ms/frame
              frames    the frames output: scale to gray8, or scale and encode a JPEG, ms/frame
              baseline  copying the luma plane, and dlib face detection, on the same frames
            """)

    @Option(help: "Clip to measure (default: the bundled barcode sample, 640x480).")
    var source: String?

    @Option(help: "Times over the clip for each figure.")
    var rounds = 3

    func run() throws {
        let frames = try decodeFrames(source ?? SampleMedia.barcodes640x480.path)
        guard let first = frames.first else { throw ValidationError("no frames in the clip") }
        let size = "\(first.pixels.width)x\(first.pixels.height)"
        Swift.print("sightline bench-codes: \(frames.count) frames of \(size), \(rounds) rounds, median of rounds")

        let copy = try perFrame(frames) { frame in _ = frame.pixels.packedBytes(plane: 0) }
        let reader = try BarcodeDetector()
        var found = 0
        let codes = try perFrame(frames) { found += try reader.detect(in: $0.pixels).count }
        let harder = try BarcodeDetector(configuration: .init(tryHarder: true))
        let codesHarder = try perFrame(frames) { _ = try harder.detect(in: $0.pixels) }
        let faces = try FaceDetector()
        let faceDetection = try perFrame(frames) { _ = try faces.detect(in: $0.pixels) }
        let gray = try FrameSnapshotter(format: .gray8, maximumWidth: 320, maximumHeight: 240)
        let grayFrames = try perFrame(frames) { _ = try gray.snapshot($0.pixels) }
        let jpeg = try FrameSnapshotter(format: .jpeg, maximumWidth: 320, maximumHeight: 240)
        let jpegFrames = try perFrame(frames) { _ = try jpeg.snapshot($0.pixels) }

        func line(_ name: String, _ ms: Double, _ note: String = "") {
            let label = name.padding(toLength: 32, withPad: " ", startingAt: 0)
            Swift.print(
                label
                    + String(
                        format: "%7.3f ms/frame  %6.1fx a luma copy  %5.3fx face detection  %@", ms, ms / copy,
                        ms / faceDetection, note))
        }
        line(
            "codes, all formats", codes,
            String(format: "(%.2f codes/frame)", Double(found) / Double(rounds * frames.count)))
        line("codes, all formats, try harder", codesHarder)
        line("frames output, gray8 320x240", grayFrames)
        line("frames output, JPEG 320x240", jpegFrames)
        line("baseline: luma copy", copy)
        line("baseline: dlib face detection", faceDetection)
    }

    /// The median over rounds of the mean time per frame.
    private func perFrame(_ frames: [VideoFrame], _ body: (VideoFrame) throws -> Void) throws -> Double {
        try body(frames[0])  // warm-up
        var means: [Double] = []
        for _ in 0..<rounds {
            let started = ContinuousClock.now
            for frame in frames { try body(frame) }
            means.append((ContinuousClock.now - started).milliseconds / Double(frames.count))
        }
        return median(means)
    }
}
