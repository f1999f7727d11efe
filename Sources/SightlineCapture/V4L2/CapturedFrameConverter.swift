import CFFmpeg
import SightlineCore

/// Turns the bytes of one captured buffer into a `PixelBuffer` the pipeline can use: a
/// copy for layouts that already have a luma plane (NV12, YU12, GREY), swscale to yuv420p
/// for packed ones (YUYV, UYVY, RGB), and libavcodec's decoder for MJPEG.
///
/// Not thread-safe: the capture thread owns it.
package final class CapturedFrameConverter {
    package let pixelFormat: V4L2PixelFormat
    package let width: Int
    package let height: Int
    package let bytesPerLine: Int
    private let scaler = PixelScaler()
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private var decoded: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()

    package init(pixelFormat: V4L2PixelFormat, width: Int, height: Int, bytesPerLine: Int) throws {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        if pixelFormat == .mjpeg || pixelFormat == .jpeg {
            guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG), let context = avcodec_alloc_context3(codec)
            else {
                throw SightlineError.invalidArgument("this FFmpeg has no MJPEG decoder")
            }
            decoder = context
            guard avcodec_open2(context, codec, nil) >= 0 else {
                throw SightlineError.invalidArgument("cannot open the MJPEG decoder")
            }
        } else if !pixelFormat.isSupported {
            throw SightlineError.invalidArgument("pixel format \(pixelFormat) is not supported")
        }
    }

    deinit {
        avcodec_free_context(&decoder)
        av_packet_free(&packet)
        av_frame_free(&decoded)
    }

    /// The frame in `bytes` (one buffer as the driver filled it), in a layout the pipeline reads.
    package func convert(_ bytes: UnsafeRawBufferPointer) throws -> PixelBuffer {
        switch pixelFormat {
        case .nv12: return try copy(bytes, as: .nv12)
        case .yu12: return try copy(bytes, as: .yuv420p)
        case .grey: return try copy(bytes, as: .gray8)
        case .yuyv: return try scale(bytes, from: AV_PIX_FMT_YUYV422, bytesPerRow: bytesPerLine)
        case .uyvy: return try scale(bytes, from: AV_PIX_FMT_UYVY422, bytesPerRow: bytesPerLine)
        case .rgb24: return try scale(bytes, from: AV_PIX_FMT_RGB24, bytesPerRow: bytesPerLine)
        case .bgr24: return try scale(bytes, from: AV_PIX_FMT_BGR24, bytesPerRow: bytesPerLine)
        default: return try decodeJPEG(bytes)
        }
    }

    /// Planar layouts: rows copied out of the driver's buffer, which goes back to it.
    private func copy(_ bytes: UnsafeRawBufferPointer, as format: PixelFormat) throws -> PixelBuffer {
        let geometry = format.planeGeometry(width: width, height: height)
        // The driver's stride for plane 0; chroma planes of 4:2:0 use half of it (NV12: the same).
        let strides = geometry.indices.map { index in
            index == 0 || format == .nv12 ? bytesPerLine : bytesPerLine / 2
        }
        // Check the whole buffer first, then copy each row straight into the new buffer.
        var offsets: [Int] = []
        var offset = 0
        for (shape, stride) in zip(geometry, strides) {
            guard offset + stride * (shape.rows - 1) + shape.bytesPerRow <= bytes.count else {
                throw SightlineError.sourceFailed(
                    source: "\(pixelFormat)", reason: "a captured buffer is too short (\(bytes.count) bytes)")
            }
            offsets.append(offset)
            offset += stride * shape.rows
        }
        return PixelBuffer(format: format, width: width, height: height) { bases in
            for index in geometry.indices {
                let shape = geometry[index]
                for row in 0..<shape.rows {
                    bases[index].advanced(by: row * shape.bytesPerRow).copyMemory(
                        from: bytes.baseAddress!.advanced(by: offsets[index] + row * strides[index]),
                        byteCount: shape.bytesPerRow)
                }
            }
        }
    }

    /// Packed layouts become yuv420p through swscale.
    private func scale(_ bytes: UnsafeRawBufferPointer, from source: AVPixelFormat, bytesPerRow: Int) throws
        -> PixelBuffer
    {
        guard bytes.count >= bytesPerRow * height else {
            throw SightlineError.sourceFailed(
                source: "\(pixelFormat)", reason: "a captured buffer is too short (\(bytes.count) bytes)")
        }
        return try converted(
            scaler.convert(
                planes: [bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)], strides: [Int32(bytesPerRow)],
                from: source, width: width, height: height))
    }

    /// What swscale made of a captured image, or the error saying it could not.
    private func converted(_ pixels: PixelBuffer?) throws -> PixelBuffer {
        guard let pixels else {
            throw SightlineError.sourceFailed(source: "\(pixelFormat)", reason: "cannot convert to yuv420p")
        }
        return pixels
    }

    /// One JPEG image, decoded, then converted to yuv420p (webcams send 4:2:2 JPEG).
    private func decodeJPEG(_ bytes: UnsafeRawBufferPointer) throws -> PixelBuffer {
        guard let decoder, let packet, let decoded else {
            throw SightlineError.sourceFailed(source: "mjpeg", reason: "no decoder")
        }
        guard av_new_packet(packet, Int32(bytes.count)) >= 0 else {
            throw SightlineError.sourceFailed(source: "mjpeg", reason: "out of memory")
        }
        defer { av_packet_unref(packet) }
        packet.pointee.data.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        guard avcodec_send_packet(decoder, packet) >= 0, avcodec_receive_frame(decoder, decoded) >= 0 else {
            throw CorruptFrame()
        }
        defer { av_frame_unref(decoded) }
        guard Int(decoded.pointee.width) == width, Int(decoded.pointee.height) == height else {
            throw CorruptFrame()
        }
        return try converted(scaler.convert(decoded))
    }
}

/// A captured image that could not be decoded (a torn MJPEG frame): skipped, not fatal.
package struct CorruptFrame: Error {}
