import CFFmpeg
import Foundation
import SightlineCore
import Synchronization

/// Frames from a media file or a network URL that FFmpeg opens (rtsp://, http://, …),
/// decoded with libavformat and libavcodec.
///
/// Frames come with the stream's own timestamps. Decoded planes are handed on without a
/// copy when their layout is one Sightline knows; other layouts are converted to yuv420p.
package final class MediaFileSource: FrameSource {
    package struct Options: Sendable {
        /// Pace delivery to the timestamps, like a live camera; otherwise as fast as possible.
        package var realtime = false
        /// Start again at the end; timestamps keep increasing across loops.
        package var loop = false
        /// How long opening or a single read of a network stream may block (whole
        /// microseconds, as FFmpeg takes it; `--network-timeout` keeps it to 0.1-600 s).
        package var networkTimeout: Duration = .seconds(5)
        /// What to do with the source's audio; nil: carry it on as AAC when it has some.
        package var audio: AudioMode?
        package init(realtime: Bool = false, loop: Bool = false, audio: AudioMode? = nil) {
            self.realtime = realtime
            self.loop = loop
            self.audio = audio
        }
    }

    package let url: String
    /// A URL FFmpeg reads over the network (rtsp://, http:// …): a live source, paced by its
    /// sender, not a file read as fast as it can be.
    package var isNetworkStream: Bool { url.contains("://") && !url.hasPrefix("file:") }
    package private(set) var input: InputDescription
    package let options: Options
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let scaler = PixelScaler()
    /// An allocated frame the decoder had nothing for yet, reused for the next attempt.
    private var spareFrame: UnsafeMutablePointer<AVFrame>?
    /// The stream's H.264 parameter sets, Annex B, when the video is H.264 (else nil): what
    /// `onCompressedPacket` needs to make every key frame self-contained.
    package let h264ParameterSets: [UInt8]?
    /// NAL length size when the container stores length-prefixed H.264 (MP4, QuickTime).
    private let nalLengthSize: Int?
    /// Called on the capture thread with each compressed video packet, before it is
    /// decoded, when the video is H.264: for recording without re-encoding. Set it before
    /// the session starts.
    package var onCompressedPacket: (@Sendable (VideoAccessUnit) -> Void)?
    /// Called on the capture thread with each AAC frame of the source's audio (see
    /// `input.audio`), in order. Set it before the session starts; without it the audio is
    /// neither decoded nor encoded.
    package var onAudioPacket: (@Sendable (EncodedAudioPacket) -> Void)?
    /// What became of the audio so far, for any thread; nil without audio.
    package var audioCounters: AudioCountersCell? { audio?.shared }
    private let audio: StreamAudio?
    /// Why the source's audio is left out, when it has audio that cannot be carried on.
    package private(set) var audioProblem: String?
    private let interrupt: InterruptFlag
    private var draining = false
    private var framesProduced = 0
    /// Added to timestamps after each loop so media time keeps increasing.
    private var loopOffset: Int64 = 0
    private var lastPts: Int64 = 0
    private var frameDuration: Int64 = 0
    /// Set when frames are paced (`realtime`).
    private var pacing: FramePacing?

    /// `interrupt`, set from another thread, gives up the opening at once (and, once open,
    /// every blocking read): `serve` sets it when it shuts down while a stream opens.
    package init(url: String, options: Options = Options(), interrupt: InterruptFlag = InterruptFlag()) throws {
        self.url = url
        self.options = options
        self.interrupt = interrupt
        let isFile = !url.contains("://") || url.hasPrefix("file:")
        if isFile {
            let path = url.hasPrefix("file:") ? String(url.dropFirst(5)) : url
            guard FileManager.default.fileExists(atPath: path) else {
                throw SightlineError.sourceUnavailable(source: url, reason: "no such file")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw SightlineError.sourceUnavailable(source: url, reason: "permission denied")
            }
        }

        let opened = try Self.open(url: url, interrupt: interrupt, timeout: options.networkTimeout)
        format = opened.format
        decoder = opened.decoder
        streamIndex = opened.streamIndex
        timeBase = opened.timeBase
        let parameters = opened.format.pointee.streams[Int(opened.streamIndex)]!.pointee.codecpar!.pointee
        let extradata =
            parameters.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.extradata_size))) }
            ?? []
        if parameters.codec_id != AV_CODEC_ID_H264 {
            (h264ParameterSets, nalLengthSize) = (nil, nil)
        } else if let avcC = H264.parameterSets(avcC: extradata) {
            (h264ParameterSets, nalLengthSize) = (H264.annexB(avcC.units), avcC.lengthSize)
        } else {
            (h264ParameterSets, nalLengthSize) = (extradata, nil)
        }
        do {
            audio = try StreamAudio(
                format: opened.format, videoStream: opened.streamIndex, mode: options.audio, url: url)
        } catch  where options.audio == nil {
            // Audio nobody asked for by name must not keep the video from being analysed.
            audio = nil
            audioProblem = "\(error)"
        } catch {
            var decoder: UnsafeMutablePointer<AVCodecContext>? = opened.decoder
            avcodec_free_context(&decoder)
            var context: UnsafeMutablePointer<AVFormatContext>? = opened.format
            avformat_close_input(&context)
            throw error
        }
        input = opened.input
        input.audio = audio?.description
        if let frameRate = input.frameRate, frameRate > 0 {
            frameDuration = Int64((1 / frameRate / (Double(timeBase.num) / Double(timeBase.den))).rounded())
        }
        if options.realtime {
            pacing = FramePacing(
                tickSeconds: Double(timeBase.num) / Double(timeBase.den),
                frameInterval: frameDuration > 0 ? .seconds(mediaTime(frameDuration).seconds) : nil)
        }
    }

    private struct Opened {
        var format: UnsafeMutablePointer<AVFormatContext>
        var decoder: UnsafeMutablePointer<AVCodecContext>
        var streamIndex: Int32
        var timeBase: AVRational
        var input: InputDescription
    }

    /// Opens the container and the best video stream's decoder; on failure, frees what it
    /// opened and throws one line that says why.
    private static func open(url: String, interrupt: InterruptFlag, timeout: Duration) throws -> Opened {
        // FFmpeg would print every bitstream complaint on stderr; the capture session
        // reports skipped frames itself, counted and rate-limited.
        av_log_set_level(AV_LOG_FATAL)
        var context = avformat_alloc_context()
        context!.pointee.interrupt_callback = AVIOInterruptCB(
            callback: { opaque in
                Unmanaged<InterruptFlag>.fromOpaque(opaque!).takeUnretainedValue().isSet ? 1 : 0
            }, opaque: Unmanaged.passUnretained(interrupt).toOpaque())
        var dictionary: OpaquePointer?
        let microseconds = String(Int64(timeout / .microseconds(1)))
        av_dict_set(&dictionary, "rw_timeout", microseconds, 0)  // http, tcp, …
        av_dict_set(&dictionary, "timeout", microseconds, 0)  // rtsp socket timeout
        let started = ContinuousClock.now
        /// FFmpeg's reason, unless the other end never answered: a server that takes the
        /// connection and then says nothing fails as "invalid data" once the timeout is up.
        func reason(_ code: Int32) -> String {
            ContinuousClock.now - started >= timeout ? "no answer within \(timeout)" : ffmpegError(code)
        }
        let openResult = avformat_open_input(&context, url, nil, &dictionary)
        av_dict_free(&dictionary)
        guard openResult >= 0, let format = context else {
            throw SightlineError.sourceUnavailable(source: url, reason: reason(openResult))
        }
        var decoder: UnsafeMutablePointer<AVCodecContext>?
        func fail(_ reason: String) -> SightlineError {
            avcodec_free_context(&decoder)
            context = format
            avformat_close_input(&context)
            return .sourceUnavailable(source: url, reason: reason)
        }
        let info = avformat_find_stream_info(format, nil)
        guard info >= 0 else { throw fail(reason(info)) }
        var codec: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)
        guard index >= 0, let codec else { throw fail("no decodable video stream") }
        let stream = format.pointee.streams[Int(index)]!
        decoder = avcodec_alloc_context3(codec)
        guard let decoder else { throw fail("out of memory") }
        avcodec_parameters_to_context(decoder, stream.pointee.codecpar)
        decoder.pointee.thread_count = 1  // one frame in, one frame out: lowest latency
        let opening = avcodec_open2(decoder, codec, nil)
        guard opening >= 0 else {
            throw fail("cannot open the \(String(cString: codec.pointee.name)) decoder: \(ffmpegError(opening))")
        }
        guard decoder.pointee.width > 0, decoder.pointee.height > 0 else {
            throw fail("the video stream has no frame size (corrupt or unsupported)")
        }
        let rate = stream.pointee.avg_frame_rate
        let frameRate = rate.num > 0 && rate.den > 0 ? Double(rate.num) / Double(rate.den) : nil
        let pixelFormatName = av_get_pix_fmt_name(decoder.pointee.pix_fmt).map { String(cString: $0) } ?? "unknown"
        let input = InputDescription(
            url: url, width: Int(decoder.pointee.width), height: Int(decoder.pointee.height),
            pixelFormat: pixelFormatName, frameRate: frameRate, orientation: Self.orientation(of: stream))
        return Opened(
            format: format, decoder: decoder, streamIndex: index, timeBase: stream.pointee.time_base, input: input)
    }

    /// The stream's display orientation: its display matrix (what iPhones and most cameras
    /// write), else an old-style `rotate` tag; nil when upright.
    private static func orientation(of stream: UnsafeMutablePointer<AVStream>) -> Int? {
        var matrix = [Int32](repeating: 0, count: 9)
        var orientation = 1
        if cffmpeg_display_matrix(stream, &matrix) == 1 {
            orientation = DisplayMatrix.exifOrientation(matrix)
        } else if let tag = av_dict_get(stream.pointee.metadata, "rotate", nil, 0),
            let degrees = Int(String(cString: tag.pointee.value))
        {
            orientation = DisplayMatrix.exifOrientation(rotateTag: degrees)
        }
        return orientation == 1 ? nil : orientation
    }

    deinit {
        av_frame_free(&spareFrame)
        av_packet_free(&packet)
        avcodec_free_context(&decoder)
        avformat_close_input(&format)
    }

    package func cancel() { interrupt.set() }

    package func read() throws -> SourceRead {
        guard let decoder, let packet, let format else { return .end }
        pacing?.waitToDecode(interrupt: interrupt)
        while !interrupt.isSet {
            // Drain every frame the decoder has before feeding it more.
            let frame = spareFrame ?? av_frame_alloc()!
            let received = avcodec_receive_frame(decoder, frame)
            if received == 0 {
                spareFrame = nil  // the delivered pixel buffer owns it now
                return try deliver(frame)
            }
            spareFrame = frame
            if received == cffmpeg_averror_eof() {
                guard options.loop, framesProduced > 0 else { return .end }
                try rewind()
                continue
            }
            guard received == cffmpeg_averror_eagain() else {
                return .skipped(reason: "corrupt")
            }
            if draining { return .end }

            let readResult = av_read_frame(format, packet)
            if readResult == cffmpeg_averror_eof() {
                // A looping file's audio goes on across the loop; otherwise this is its end.
                if !draining, !options.loop, let audio, let onAudioPacket { audio.finish().forEach(onAudioPacket) }
                draining = true
                avcodec_send_packet(decoder, nil)
                continue
            }
            if readResult == cffmpeg_averror_exit() || interrupt.isSet { return .end }
            guard readResult >= 0 else {
                throw SightlineError.sourceFailed(source: url, reason: ffmpegError(readResult))
            }
            defer { av_packet_unref(packet) }
            if let audio, let onAudioPacket, packet.pointee.stream_index == audio.streamIndex {
                audio.handle(packet, offset: mediaTime(loopOffset)).forEach(onAudioPacket)
                continue
            }
            guard packet.pointee.stream_index == streamIndex else { continue }
            if let onCompressedPacket, let parameterSets = h264ParameterSets {
                onCompressedPacket(compressed(packet, parameterSets))
            }
            if packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 { return .skipped(reason: "corrupt") }
            let sent = avcodec_send_packet(decoder, packet)
            if sent < 0 && sent != cffmpeg_averror_eagain() { return .skipped(reason: "corrupt") }
        }
        return .end
    }

    private func rewind() throws {
        guard let format, let decoder else { return }
        loopOffset = lastPts + frameDuration
        pacing?.restart()
        draining = false
        let seek = av_seek_frame(format, streamIndex, 0, AVSEEK_FLAG_BACKWARD)
        guard seek >= 0 else {
            throw SightlineError.sourceFailed(source: url, reason: "cannot loop: \(ffmpegError(seek))")
        }
        avcodec_flush_buffers(decoder)
    }

    private func deliver(_ frame: UnsafeMutablePointer<AVFrame>) throws -> SourceRead {
        let owned = DecodedFrame(frame)
        if frame.pointee.decode_error_flags != 0 || frame.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 {
            return .skipped(reason: "corrupt")
        }
        var pts = frame.pointee.best_effort_timestamp
        if pts == cffmpeg_nopts() {
            pts = pacing?.origin.map { $0.pts + Int64(framesProduced) * frameDuration } ?? 0
        }
        let streamPts = pts
        pts += loopOffset
        lastPts = pts
        let time = mediaTime(pts)
        let duration = frameDuration > 0 ? mediaTime(frameDuration) : nil

        let pixels = try pixelBuffer(for: owned)
        let late = pacing?.waitUntilDue(pts: streamPts, interrupt: interrupt) ?? .zero
        defer { framesProduced += 1 }
        return .frame(
            VideoFrame(
                pixels: pixels, time: time, duration: duration,
                wallClockNanoseconds: WallClock.nowNanoseconds() - UInt64(late.seconds * 1e9), index: framesProduced))
    }

    /// The packet as Annex B, with the parameter sets in front of a key frame that lacks them.
    private func compressed(_ packet: UnsafeMutablePointer<AVPacket>, _ parameterSets: [UInt8]) -> VideoAccessUnit {
        let bytes = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
        var units =
            nalLengthSize.flatMap { H264.nalUnits(lengthPrefixed: bytes, lengthSize: $0) }
            ?? H264.nalUnits(annexB: bytes)
        let isKey = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
        if isKey, !units.contains(where: { H264.type(of: $0) == H264.sequenceParameterSet }) {
            units.insert(contentsOf: H264.nalUnits(annexB: parameterSets), at: 0)
        }
        let nopts = cffmpeg_nopts()
        let dts = (packet.pointee.dts != nopts ? packet.pointee.dts : packet.pointee.pts) + loopOffset
        let pts = (packet.pointee.pts != nopts ? packet.pointee.pts : packet.pointee.dts) + loopOffset
        return VideoAccessUnit(
            nalUnits: units, presentationTime: mediaTime(pts), decodeTime: mediaTime(dts),
            duration: packet.pointee.duration > 0 ? mediaTime(packet.pointee.duration) : nil, isKeyFrame: isKey)
    }

    private func mediaTime(_ ticks: Int64) -> MediaTime {
        if timeBase.num == 1 { return MediaTime(value: ticks, timescale: timeBase.den) }
        return MediaTime(value: ticks * Int64(timeBase.num), timescale: timeBase.den)
    }

    private func pixelBuffer(for owned: DecodedFrame) throws -> PixelBuffer {
        let frame = owned.frame
        let width = Int(frame.pointee.width)
        let height = Int(frame.pointee.height)
        let layout: PixelFormat? =
            switch AVPixelFormat(frame.pointee.format) {
            case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: .yuv420p
            case AV_PIX_FMT_NV12: .nv12
            case AV_PIX_FMT_GRAY8: .gray8
            case AV_PIX_FMT_YUYV422: .yuyv
            case AV_PIX_FMT_RGB24: .rgb24
            case AV_PIX_FMT_BGR24: .bgr24
            default: nil
            }
        if let layout {
            let geometry = layout.planeGeometry(width: width, height: height)
            let planes = geometry.indices.map { index in
                withUnsafeBytes(of: frame.pointee.data) { data in
                    let pointer = data.load(
                        fromByteOffset: index * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride,
                        as: UnsafeMutablePointer<UInt8>?.self)!
                    let stride = withUnsafeBytes(of: frame.pointee.linesize) {
                        $0.load(fromByteOffset: index * MemoryLayout<Int32>.stride, as: Int32.self)
                    }
                    return Plane(
                        baseAddress: UnsafeRawPointer(pointer), bytesPerRow: Int(stride), rows: geometry[index].rows)
                }
            }
            return PixelBuffer(format: layout, width: width, height: height, planes: planes, owner: owned)
        }
        // Other layouts (10-bit, 4:4:4, palettes…) become yuv420p through swscale.
        guard let pixels = scaler.convert(frame) else {
            throw SightlineError.sourceFailed(source: url, reason: "cannot convert pixel format \(input.pixelFormat)")
        }
        return pixels
    }
}

/// Owns one decoded AVFrame; the pixel buffers made from it keep it alive.
final class DecodedFrame {
    let frame: UnsafeMutablePointer<AVFrame>
    init(_ frame: UnsafeMutablePointer<AVFrame>) { self.frame = frame }
    deinit {
        var pointer: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&pointer)
    }
}

func ffmpegError(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    av_strerror(code, &buffer, buffer.count)
    let message = String(nulTerminated: buffer)
    return message.prefix(1).lowercased() + message.dropFirst()
}

/// A still image (JPEG, PNG … anything FFmpeg decodes; the first frame of a video).
package enum StillImage {
    /// The picture, in a layout with a luma plane (detectors read luma).
    package static func load(_ path: String) throws -> PixelBuffer {
        guard case .frame(let frame) = try MediaFileSource(url: path).read() else {
            throw SightlineError.sourceUnavailable(source: path, reason: "no picture in it")
        }
        if frame.pixels.format.hasLumaPlane { return frame.pixels }
        guard let converted = frame.pixels.converted(to: .yuv420p) else {
            throw SightlineError.sourceUnavailable(source: path, reason: "cannot convert \(frame.pixels.format) pixels")
        }
        return converted
    }
}
