import CFFmpeg
import SightlineCore

/// Downscaled copies of frames for other services' detectors (the `frames` output): the
/// luma plane as gray8 bytes, or a colour JPEG. Not thread-safe: one owner.
package final class FrameSnapshotter {
    package let format: FrameInfo.Format
    package let maximumWidth: Int
    package let maximumHeight: Int
    private let scaler = PixelScaler()
    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let quality: Int32
    private var nextTimestamp: Int64 = 0

    /// Frames are scaled to fit `maximumWidth` x `maximumHeight`, keeping their shape (never
    /// enlarged). `jpegQuality` is libavcodec's quantiser scale, 2 (best) to 31.
    package init(format: FrameInfo.Format, maximumWidth: Int, maximumHeight: Int, jpegQuality: Int = 5) throws {
        guard maximumWidth >= 16, maximumHeight >= 16 else {
            throw SightlineError.invalidArgument("frames must be at least 16x16, not \(maximumWidth)x\(maximumHeight)")
        }
        guard (2...31).contains(jpegQuality) else {
            throw SightlineError.invalidArgument("JPEG quality must be 2 (best) to 31, not \(jpegQuality)")
        }
        self.format = format
        self.maximumWidth = maximumWidth
        self.maximumHeight = maximumHeight
        quality = Int32(jpegQuality)
    }

    deinit {
        avcodec_free_context(&encoder)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// The size a `width` x `height` frame is scaled to: even, within the maximum.
    package func outputSize(width: Int, height: Int) -> (width: Int, height: Int) {
        let scale = min(1, min(Double(maximumWidth) / Double(width), Double(maximumHeight) / Double(height)))
        return (max(2, Int(Double(width) * scale) & ~1), max(2, Int(Double(height) * scale) & ~1))
    }

    /// `drawing` draws into the scaled picture before it is encoded (a JPEG's boxes): a
    /// full-range yuv420p picture this snapshotter owns.
    package func snapshot(_ pixels: PixelBuffer, drawing: ((PixelBuffer) -> Void)? = nil) throws -> (
        info: FrameInfo, bytes: [UInt8]
    ) {
        let (width, height) = outputSize(width: pixels.width, height: pixels.height)
        let info = FrameInfo(
            format: format, width: width, height: height, sourceWidth: pixels.width, sourceHeight: pixels.height)
        switch format {
        case .gray8:
            // Only the luma plane is read: gray is all a detector like Haar's needs.
            let scaled = try scale(
                [try pixels.requireLumaPlane()], from: AV_PIX_FMT_GRAY8, pixels, to: .gray8, size: (width, height))
            return (info, scaled.packedBytes(plane: 0))
        case .jpeg:
            // JPEG wants full-range samples: yuvj420p has the same layout as yuv420p.
            let scaled = try scale(
                pixels.planes, from: pixels.format.avPixelFormat, pixels, to: .yuv420p, size: (width, height),
                swscaleTarget: AV_PIX_FMT_YUVJ420P)
            drawing?(scaled)
            return (info, try encodeJPEG(scaled))
        }
    }

    /// A yuv420p copy of `pixels` within the maximum size that owns its memory: it can be kept
    /// after the frame's own buffer has gone back to a camera's driver or a decoder.
    package func copy(_ pixels: PixelBuffer) throws -> PixelBuffer {
        let (width, height) = outputSize(width: pixels.width, height: pixels.height)
        return try scale(pixels.planes, from: pixels.format.avPixelFormat, pixels, to: .yuv420p, size: (width, height))
    }

    private func scale(
        _ planes: [Plane], from source: AVPixelFormat, _ pixels: PixelBuffer, to target: PixelFormat,
        size: (width: Int, height: Int), swscaleTarget: AVPixelFormat? = nil
    ) throws -> PixelBuffer {
        guard
            let scaled = scaler.convert(
                planes, from: source, width: pixels.width, height: pixels.height, to: target,
                swscaleTarget: swscaleTarget, size: size, algorithm: SWS_AREA)
        else { throw SightlineError.detector("cannot scale frames in \(pixels.format.rawValue)") }
        return scaled
    }

    private func encodeJPEG(_ image: PixelBuffer) throws -> [UInt8] {
        let context = try jpegEncoder(width: image.width, height: image.height)
        guard let frame, let packet else { throw SightlineError.detector("out of memory") }
        frame.pointee.width = Int32(image.width)
        frame.pointee.height = Int32(image.height)
        frame.pointee.format = AV_PIX_FMT_YUVJ420P.rawValue
        frame.pointee.quality = context.pointee.global_quality
        frame.pointee.pts = nextTimestamp  // the encoder wants them to increase
        nextTimestamp += 1
        frame.attach(image.planes)
        var result = avcodec_send_frame(context, frame)
        guard result >= 0 else { throw SightlineError.detector("JPEG encoding failed: \(ffmpegError(result))") }
        result = avcodec_receive_packet(context, packet)
        guard result >= 0 else { throw SightlineError.detector("JPEG encoding failed: \(ffmpegError(result))") }
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
    }

    /// libavcodec's MJPEG encoder, opened for this size (again when the size changes).
    private func jpegEncoder(width: Int, height: Int) throws -> UnsafeMutablePointer<AVCodecContext> {
        if let encoder, encoder.pointee.width == Int32(width), encoder.pointee.height == Int32(height) {
            return encoder
        }
        avcodec_free_context(&encoder)
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG), let context = avcodec_alloc_context3(codec) else {
            throw SightlineError.invalidArgument("this FFmpeg has no MJPEG encoder")
        }
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
        context.pointee.time_base = AVRational(num: 1, den: 30)
        context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
        context.pointee.global_quality = quality * Int32(FF_QP2LAMBDA)
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else {
            var context: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&context)
            throw SightlineError.invalidArgument("cannot open the JPEG encoder: \(ffmpegError(opened))")
        }
        encoder = context
        return context
    }
}
