import CFFmpeg
import SightlineCore

/// Encodes frames to H.264 with libx264 through libavcodec. Tuned for low latency by
/// default: no B-frames and no look-ahead, so each frame comes out as it goes in.
///
/// Not thread-safe: one owner (the encode output's queue) calls it.
package final class VideoEncoder {
    package struct Options: Sendable, Equatable {
        /// x264 preset: ultrafast … veryslow.
        package var preset = "superfast"
        /// Constant quality (0–51, lower is better) unless `bitrate` is set.
        package var crf = 23
        /// Bits per second; when set, rate control targets it instead of `crf`.
        package var bitrate: Int?
        /// Frames between key frames; nil: two seconds' worth.
        package var keyFrameInterval: Int?
        /// x264 tune; "zerolatency" turns off B-frames, look-ahead and frame threads.
        package var tune: String? = "zerolatency"
        package var threads = 1

        package init() {}
    }

    package let width: Int
    package let height: Int
    package let timescale: Int32
    /// The layout x264 is given frames in: yuv420p, or NV12 as a camera delivers it (x264
    /// reads NV12 itself, which saves converting every frame).
    package let pixelFormat: PixelFormat
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let scaler = PixelScaler()
    private var durations: [Int64: MediaTime] = [:]
    /// Makes the next frame a key frame, for a subscriber that just arrived.
    package var forceKeyFrame = false

    /// `frameRate` sets the rate control's notion of time and the default key-frame interval;
    /// `pixelFormat` is that of the frames to come (other layouts than NV12 are encoded from
    /// yuv420p, converted when they are not).
    package init(
        width: Int, height: Int, timescale: Int32, frameRate: Double, pixelFormat: PixelFormat = .yuv420p,
        options: Options = Options()
    ) throws {
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw SightlineError.invalidArgument("this FFmpeg has no libx264 encoder")
        }
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
            throw SightlineError.invalidArgument("H.264 needs an even frame size, not \(width)x\(height)")
        }
        self.width = width
        self.height = height
        self.timescale = timescale
        self.pixelFormat = pixelFormat == .nv12 ? .nv12 : .yuv420p
        context = avcodec_alloc_context3(codec)
        guard let context else { throw SightlineError.invalidArgument("out of memory") }
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = self.pixelFormat.avPixelFormat
        context.pointee.time_base = AVRational(num: 1, den: timescale)
        let rate = frameRate > 0 ? frameRate : 30
        context.pointee.framerate = av_d2q(rate, 100_000)
        context.pointee.gop_size = Int32(options.keyFrameInterval ?? Int((rate * 2).rounded()))
        context.pointee.thread_count = Int32(options.threads)
        context.pointee.max_b_frames = options.tune == "zerolatency" ? 0 : 2
        if let bitrate = options.bitrate { context.pointee.bit_rate = Int64(bitrate) }
        var settings: OpaquePointer?
        av_dict_set(&settings, "preset", options.preset, 0)
        if let tune = options.tune { av_dict_set(&settings, "tune", tune, 0) }
        if options.bitrate == nil { av_dict_set(&settings, "crf", String(options.crf), 0) }
        let opened = avcodec_open2(context, codec, &settings)
        av_dict_free(&settings)
        guard opened >= 0 else {
            avcodec_free_context(&self.context)
            throw SightlineError.invalidArgument(
                "cannot open the H.264 encoder (preset \(options.preset), \(width)x\(height)): \(ffmpegError(opened))")
        }
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)
    }

    /// Encodes one frame and returns what the encoder has ready (one packet with the
    /// default tuning).
    package func encode(_ input: VideoFrame) throws -> [VideoAccessUnit] {
        guard let context, let frame else { return [] }
        guard input.pixels.width == width, input.pixels.height == height else {
            throw SightlineError.sourceFailed(
                source: "encoder",
                reason: "frame size changed to \(input.pixels.width)x\(input.pixels.height) from \(width)x\(height)")
        }
        let pts = input.time.converted(to: timescale).value
        if let duration = input.duration { durations[pts] = duration }
        try withEncoderLayout(input.pixels) { planes in
            frame.pointee.width = Int32(width)
            frame.pointee.height = Int32(height)
            frame.pointee.format = pixelFormat.avPixelFormat.rawValue
            frame.pointee.pts = pts
            frame.pointee.pict_type = forceKeyFrame ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
            forceKeyFrame = false
            frame.attach(planes)
            // The frame's planes are not reference-counted, so libavcodec copies what it keeps.
            let sent = avcodec_send_frame(context, frame)
            guard sent >= 0 else { throw SightlineError.sourceFailed(source: "encoder", reason: ffmpegError(sent)) }
        }
        return try receivePackets()
    }

    /// Drains the encoder at the end of the stream.
    package func flush() throws -> [VideoAccessUnit] {
        guard let context else { return [] }
        avcodec_send_frame(context, nil)
        return try receivePackets()
    }

    private func receivePackets() throws -> [VideoAccessUnit] {
        guard let context, let packet else { return [] }
        var packets: [VideoAccessUnit] = []
        while true {
            let received = avcodec_receive_packet(context, packet)
            if received == cffmpeg_averror_eagain() || received == cffmpeg_averror_eof() { break }
            guard received >= 0 else {
                throw SightlineError.sourceFailed(source: "encoder", reason: ffmpegError(received))
            }
            defer { av_packet_unref(packet) }
            let pts = packet.pointee.pts
            let dts = packet.pointee.dts == cffmpeg_nopts() ? pts : packet.pointee.dts
            packets.append(
                VideoAccessUnit(
                    annexB: Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))),
                    presentationTime: MediaTime(value: pts, timescale: timescale),
                    decodeTime: MediaTime(value: dts, timescale: timescale),
                    duration: durations.removeValue(forKey: pts),
                    isKeyFrame: packet.pointee.flags & AV_PKT_FLAG_KEY != 0))
        }
        return packets
    }

    /// Hands planes in the encoder's layout straight through; others go through swscale.
    private func withEncoderLayout(_ pixels: PixelBuffer, _ body: ([Plane]) throws -> Void) throws {
        if pixels.format == pixelFormat { return try body(pixels.planes) }
        guard
            let converted = scaler.convert(
                pixels.planes, from: pixels.format.avPixelFormat, width: width, height: height, to: pixelFormat)
        else {
            throw SightlineError.sourceFailed(source: "encoder", reason: "cannot convert \(pixels.format)")
        }
        try body(converted.planes)
    }
}
