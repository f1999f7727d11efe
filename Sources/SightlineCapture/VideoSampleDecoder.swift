import CFFmpeg
import SightlineCore

/// Decodes H.264 or H.265 samples as a movie stores them (length-prefixed NAL units,
/// configured by the track's `avcC` or `hvcC` record) into yuv420p images: how the console takes one frame out of a
/// recording for a snapshot without opening the file a second time through libavformat.
/// Not thread-safe: one owner.
package final class VideoSampleDecoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let scaler = PixelScaler()

    /// `codec` and `configuration`: the track's codec and configuration record (the box's
    /// payload). More `threads` decode several frames at once: more frames a second, a few
    /// frames more delay.
    package init(codec videoCodec: VideoCodec, configuration: [UInt8], threads: Int = 1) throws {
        av_log_set_level(AV_LOG_FATAL)  // errors are thrown, not printed
        let id = videoCodec == .hevc ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264
        guard let codec = avcodec_find_decoder(id), let context = avcodec_alloc_context3(codec) else {
            throw SightlineError.invalidArgument("this FFmpeg has no \(videoCodec.displayName) decoder")
        }
        self.context = context
        let extradata = av_mallocz(configuration.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))!
        configuration.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        context.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
        context.pointee.extradata_size = Int32(configuration.count)
        context.pointee.thread_count = Int32(max(1, threads))
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else {
            throw SightlineError.invalidArgument("cannot open the \(videoCodec.displayName) decoder: \(ffmpegError(opened))")
        }
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// A decoded picture and its presentation time (the units given with its sample).
    package typealias Picture = (time: Int64, image: PixelBuffer)

    /// Decodes one sample (decode order; the first after `reset` must be a sync sample) and
    /// returns the pictures the decoder has ready, in presentation order.
    package func decode(_ sample: [UInt8], presentationTime: Int64) throws -> [Picture] {
        guard let context, let packet else { throw SightlineError.detector("out of memory") }
        let sent = sample.withUnsafeBufferPointer { bytes -> Int32 in
            guard av_new_packet(packet, Int32(bytes.count)) >= 0 else { return -1 }
            packet.pointee.data.update(from: bytes.baseAddress!, count: bytes.count)
            packet.pointee.pts = presentationTime
            defer { av_packet_unref(packet) }
            return avcodec_send_packet(context, packet)
        }
        guard sent >= 0 else { throw SightlineError.detector("H.264 decoding failed: \(ffmpegError(sent))") }
        return try receive()
    }

    /// The pictures still inside the decoder at the end of the samples.
    package func flush() throws -> [Picture] {
        guard let context else { return [] }
        avcodec_send_packet(context, nil)
        defer { avcodec_flush_buffers(context) }
        return try receive()
    }

    /// Forgets everything decoded, to start again at a sync sample.
    package func reset() {
        if let context { avcodec_flush_buffers(context) }
    }

    private func receive() throws -> [Picture] {
        guard let context, let frame else { return [] }
        var pictures: [Picture] = []
        while avcodec_receive_frame(context, frame) >= 0 {
            defer { av_frame_unref(frame) }
            guard let image = scaler.convert(frame) else {
                throw SightlineError.detector("cannot convert decoded frames")
            }
            // Every packet carries its presentation time, so the frame's own pts is exact (the
            // "best effort" guess can repeat a time when no decode times are given).
            pictures.append((frame.pointee.pts, image))
        }
        return pictures
    }

    /// Decodes `samples` (decode order, starting at a sync sample) and returns the picture
    /// presented at `wanted`, or the last one presented before it.
    package func decode(samples: [[UInt8]], presentationTimes: [Int64], wanted: Int64) throws -> PixelBuffer {
        reset()
        var best: Picture?
        func keep(_ pictures: [Picture]) {
            for picture in pictures where picture.time <= wanted && picture.time >= (best?.time ?? .min) {
                best = picture
            }
        }
        for (sample, time) in zip(samples, presentationTimes) { keep(try decode(sample, presentationTime: time)) }
        keep(try flush())
        guard let best else { throw SightlineError.detector("no frame could be decoded at that time") }
        return best.image
    }
}
