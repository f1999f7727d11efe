import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineCapture

/// The conversions a camera's buffers go through, checked against the ffmpeg CLI on the
/// same bytes. MJPEG comes from ffmpeg's encoder, as no test device offers it.
@Suite struct CapturedFrameConverterTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("convert") }

    /// Bytes of `frames` frames of ffmpeg's test pattern in a raw or MJPEG format.
    func pattern(_ format: String, codec: String = "rawvideo", frames: Int = 2, size: String = "640x480") throws
        -> [UInt8]
    {
        let path = directory.file("pattern-\(format)-\(codec)")
        let output = try ExternalTool.run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30", "-frames:v", "\(frames)",
                "-c:v", codec,
                "-pix_fmt", format, "-f", codec == "mjpeg" ? "mjpeg" : "rawvideo", path,
            ])
        #expect(output.status == 0, "\(output.stderr)")
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Mean absolute difference between two luma planes.
    func difference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(max(a.count, 1))
    }

    @Test func mjpegFromFFmpegDecodesToItsLuma() throws {
        let jpegs = try pattern("yuvj422p", codec: "mjpeg")
        // Split the stream at each JPEG's start-of-image marker.
        let starts = (0..<(jpegs.count - 1)).filter {
            jpegs[$0] == 0xFF && jpegs[$0 + 1] == 0xD8 && ($0 == 0 || jpegs[$0 - 1] == 0xD9)
        }
        #expect(starts.count == 2)
        let first = Array(jpegs[starts[0]..<starts[1]])
        try Data(first).write(to: URL(fileURLWithPath: directory.file("one.jpg")))
        let converter = try CapturedFrameConverter(pixelFormat: .mjpeg, width: 640, height: 480, bytesPerLine: 0)
        let pixels = try first.withUnsafeBytes { try converter.convert($0) }
        #expect(pixels.format == .yuv420p && pixels.width == 640 && pixels.height == 480)
        // ffmpeg's own decode of the same JPEG, converted to yuv420p as ours is.
        _ = try ExternalTool.run(
            "ffmpeg",
            [
                "-v", "error", "-i", directory.file("one.jpg"), "-f", "rawvideo", "-pix_fmt", "yuv420p",
                directory.file("one.yuv"),
            ])
        let reference = Array(try Data(contentsOf: URL(fileURLWithPath: directory.file("one.yuv"))).prefix(640 * 480))
        #expect(reference.count == 640 * 480)
        #expect(difference(pixels.packedBytes(plane: 0), reference) < 1.5)
        // A torn JPEG is a corrupt frame, not a failure.
        #expect(throws: CorruptFrame.self) {
            try Array(first.prefix(200)).withUnsafeBytes { try converter.convert($0) }
        }
    }

    @Test(arguments: [("yuyv422", V4L2PixelFormat.yuyv, 2), ("uyvy422", .uyvy, 2), ("rgb24", .rgb24, 3)])
    func packedFormatsBecomeYUV420(ffmpegFormat: String, format: V4L2PixelFormat, bytesPerPixel: Int) throws {
        let raw = try pattern(ffmpegFormat, frames: 1)
        let luma = Array(try pattern("yuv420p", frames: 1).prefix(640 * 480))
        let converter = try CapturedFrameConverter(
            pixelFormat: format, width: 640, height: 480, bytesPerLine: 640 * bytesPerPixel)
        let pixels = try raw.withUnsafeBytes { try converter.convert($0) }
        #expect(pixels.format == .yuv420p)
        #expect(difference(pixels.packedBytes(plane: 0), luma) < 1.5)
    }

    @Test func planarFormatsAreCopiedWithTheirStride() throws {
        let nv12 = try pattern("nv12", frames: 1)
        // As a driver with 64 bytes of padding per row would deliver it.
        var padded: [UInt8] = []
        for row in 0..<(480 + 240) {
            padded += nv12[(row * 640)..<(row * 640 + 640)] + [UInt8](repeating: 7, count: 64)
        }
        let converter = try CapturedFrameConverter(pixelFormat: .nv12, width: 640, height: 480, bytesPerLine: 704)
        let pixels = try padded.withUnsafeBytes { try converter.convert($0) }
        #expect(pixels.format == .nv12)
        #expect(pixels.packedBytes(plane: 0) == Array(nv12[0..<(640 * 480)]))
        #expect(pixels.packedBytes(plane: 1) == Array(nv12[(640 * 480)...]))
        #expect(throws: SightlineError.self) {
            try Array(padded.prefix(1000)).withUnsafeBytes { try converter.convert($0) }
        }
    }
}
