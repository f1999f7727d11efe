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

/// A camera's NV12 goes to x264 as it is, without a conversion of every frame; what comes
/// out is the camera's picture (ffmpeg decodes it back to the same luma), as when the frames
/// are converted to yuv420p first.
@Suite struct VideoEncoderLayoutTests {
    @Test func nv12IsEncodedAsItComes() throws {
        let directory = try TemporaryDirectory("encode-nv12")
        let (width, height, count) = (640, 480, 10)
        let raw = directory.file("pattern.nv12")
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=30", "-frames:v",
                "\(count)", "-pix_fmt", "nv12", "-f", "rawvideo", raw,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: raw)))
        let frameBytes = width * height * 3 / 2
        let converter = try CapturedFrameConverter(
            pixelFormat: .nv12, width: width, height: height, bytesPerLine: width)
        let frames = try (0..<count).map { index in
            try bytes[(index * frameBytes)..<((index + 1) * frameBytes)].withUnsafeBytes { buffer in
                VideoFrame(
                    pixels: try converter.convert(buffer), time: MediaTime(value: Int64(index), timescale: 30),
                    duration: MediaTime(value: 1, timescale: 30), wallClockNanoseconds: 0, index: index)
            }
        }
        #expect(frames[0].pixels.format == .nv12)
        var lumas: [[UInt8]] = []
        for layout in [PixelFormat.nv12, .yuv420p] {
            let encoder = try VideoEncoder(
                width: width, height: height, timescale: 30, frameRate: 30, pixelFormat: layout)
            #expect(encoder.pixelFormat == layout)
            var stream: [UInt8] = []
            for frame in frames { stream += try encoder.encode(frame).flatMap(\.annexB) }
            stream += try encoder.flush().flatMap(\.annexB)
            let h264 = directory.file("\(layout).h264")
            try Data(stream).write(to: URL(fileURLWithPath: h264))
            // Decoded to yuv420p (the same range, where gray would stretch it): the luma planes.
            let decoded = directory.file("\(layout).yuv")
            let output = try ExternalTool.run(
                "ffmpeg", ["-v", "error", "-y", "-i", h264, "-pix_fmt", "yuv420p", "-f", "rawvideo", decoded])
            try #require(output.status == 0, "\(output.stderr)")
            let yuv = Array(try Data(contentsOf: URL(fileURLWithPath: decoded)))
            lumas.append(
                (0..<(yuv.count / frameBytes)).flatMap { yuv[($0 * frameBytes)..<($0 * frameBytes + width * height)] })
        }
        // Every frame back, and each one the camera's picture (x264's losses only).
        let original = (0..<count).flatMap { bytes[($0 * frameBytes)..<($0 * frameBytes + width * height)] }
        for luma in lumas {
            #expect(luma.count == width * height * count)
            let difference =
                Double(zip(luma, original).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(luma.count)
            #expect(difference < 2, "mean luma difference \(difference)")
        }
    }
}
