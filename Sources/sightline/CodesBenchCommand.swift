import ArgumentParser
import Foundation
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineSamples

struct CodesBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "codes",
        abstract: "Measure the barcode pass and the frames output on the barcode sample.",
        prints: """
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
        Swift.print("sightline bench codes: \(frames.count) frames of \(size), \(rounds) rounds, median of rounds")

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

        func line(_ name: String, _ timing: Timing, _ note: String = "") {
            let label = name.padding(toLength: 32, withPad: " ", startingAt: 0)
            Swift.print(
                label
                    + String(
                        format: "%7.3f ms/frame (CPU %6.3f)  %6.1fx a luma copy  %5.3fx face detection  %@",
                        timing.wall, timing.cpu, timing.wall / copy.wall, timing.wall / faceDetection.wall, note))
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

    /// The median over rounds of the mean wall time and the mean CPU time (all threads) per
    /// frame: the code reader spreads over two cores, so the two differ.
    private func perFrame(_ frames: [VideoFrame], _ body: (VideoFrame) throws -> Void) throws -> Timing {
        try body(frames[0])  // warm-up
        var (wall, cpu): ([Double], [Double]) = ([], [])
        for _ in 0..<rounds {
            let (started, cpuStarted) = (ContinuousClock.now, processCPUMilliseconds())
            for frame in frames { try body(frame) }
            wall.append((ContinuousClock.now - started).milliseconds / Double(frames.count))
            cpu.append((processCPUMilliseconds() - cpuStarted) / Double(frames.count))
        }
        return Timing(wall: median(wall), cpu: median(cpu))
    }

    struct Timing {
        var wall: Double
        var cpu: Double
    }
}

/// CPU time of this process so far, user and system, all threads.
func processCPUMilliseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) * 1000 + Double(usage.ru_utime.tv_usec) / 1000
    let system = Double(usage.ru_stime.tv_sec) * 1000 + Double(usage.ru_stime.tv_usec) / 1000
    return user + system
}
