import ArgumentParser
import Foundation
import SightlineCapture
import SightlineCore
import SightlineSamples

struct CaptureBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "capture",
        abstract: "Measure what capture costs per frame: dequeue, conversion to the pipeline's format, requeue.",
        prints: """
            With a camera (or inside vivid-run) it captures at 640x480 YUYV and 1280x720 NV12 and
            times each buffer from dequeue to requeue. Without one, and in any case, it times the
            conversion alone on this CPU, against a plain copy of the same bytes as the baseline.
            Then x264 on a camera's NV12 (the 1280x720 sample's frames in NV12) as the pipeline
            encodes it now, as it comes, against converting each frame to yuv420p first, as it
            did before: ms per frame of each, alternated over 3 rounds, median.
            """)

    @Option(help: "The V4L2 device.")
    var device = "/dev/video0"

    @Option(help: "Frames per measurement.")
    var frames = 100

    func run() throws {
        let modes: [(V4L2PixelFormat, Int, Int, Int)] = [(.yuyv, 640, 480, 2), (.nv12, 1280, 720, 1)]
        if FileManager.default.fileExists(atPath: device) {
            for (format, width, height, _) in modes {
                var options = V4L2Source.Options()
                (options.width, options.height, options.pixelFormat) = (width, height, format)
                let source = try V4L2Source(path: device, options: options)
                var captured = 0
                while captured < frames {
                    if case .frame = try source.read() { captured += 1 }
                }
                let timing = source.captureTiming
                print(
                    String(
                        format: "%@ device   %6.3f ms/frame (max %.3f) dequeue → convert → requeue, %@ (%d frames)",
                        "\(width)x\(height) \(format)", timing.meanMs, timing.maxMs, "\(source.mode)", timing.count))
            }
        } else {
            print("no \(device): device figures skipped")
        }
        for (format, width, height, bytesPerPixel) in modes {
            let count = format == .nv12 ? width * height * 3 / 2 : width * height * bytesPerPixel
            let buffer = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 4) }
            let converter = try CapturedFrameConverter(
                pixelFormat: format, width: width, height: height, bytesPerLine: width * bytesPerPixel)
            let convert = try buffer.withUnsafeBytes { bytes in
                try medianMilliseconds { _ = try converter.convert(bytes) }
            }
            let copy = medianMilliseconds {
                _ = PixelBuffer(format: .gray8, width: count, height: 1, packedPlanes: [buffer])
            }
            print(
                String(
                    format: "%@ convert  %6.3f ms/frame on this CPU = %.1f x a plain copy of the buffer (%.3f ms)",
                    "\(width)x\(height) \(format)", convert, convert / copy, copy))
        }
        try encodeFigures()
    }

    /// x264 fed NV12 as it comes against the same frames converted to yuv420p first.
    private func encodeFigures() throws {
        let source = try MediaFileSource(url: SampleMedia.faces1280x720.path)
        var frames: [VideoFrame] = []
        while frames.count < 60, case .frame(let frame) = try source.read() {
            guard let nv12 = frame.pixels.converted(to: .nv12) else { throw ValidationError("cannot make NV12") }
            frames.append(
                VideoFrame(
                    pixels: nv12, time: frame.time, duration: frame.duration, wallClockNanoseconds: 0,
                    index: frame.index))
        }
        var perFrame: [PixelFormat: [Double]] = [:]
        for _ in 0..<3 {
            for layout in [PixelFormat.nv12, .yuv420p] {
                let encoder = try VideoEncoder(
                    width: 1280, height: 720, timescale: frames[0].time.timescale, frameRate: 30, pixelFormat: layout)
                let started = ContinuousClock.now
                for frame in frames { _ = try encoder.encode(frame) }
                perFrame[layout, default: []].append(
                    (ContinuousClock.now - started).milliseconds / Double(frames.count))
            }
        }
        let (direct, converted) = (median(perFrame[.nv12] ?? []), median(perFrame[.yuv420p] ?? []))
        print(
            String(
                format:
                    "1280x720 nv12 encode  %6.3f ms/frame as it comes, %6.3f ms/frame converted to yuv420p first (before) = %.2f x",
                direct, converted, converted / direct))
    }

    /// Median milliseconds of `frames` runs.
    private func medianMilliseconds(_ body: () throws -> Void) rethrows -> Double {
        var times: [Double] = []
        for _ in 0..<frames {
            let started = ContinuousClock.now
            try body()
            times.append((ContinuousClock.now - started).milliseconds)
        }
        return median(times)
    }
}
