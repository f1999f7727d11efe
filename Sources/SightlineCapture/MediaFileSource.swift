import CFFmpeg
import Foundation
import SightlineCore
import Synchronization

/// Frames from a media file or a network URL that FFmpeg opens (rtsp://, http://, …),
/// decoded with libavformat and libavcodec.
///
/// Frames come with the stream's own timestamps. Decoded planes are handed on without a
/// copy when their layout is one Sightline knows; other layouts are converted to yuv420p.
///
/// A live network stream (`isLiveStream`) never ends by itself: its end, a reset connection,
/// or no video packet for `networkTimeout` is a disconnection. `read()` then reports
/// `.interrupted`, opens the stream again with back-off (`ReconnectBackoff`) and reports
/// `.resumed` when it is back, its timestamps moved on so that media time keeps increasing
/// across the outage (by the outage's length). A camera that comes back in another format
/// carries the new one on (`input`, the parameter sets of its key frames).
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
        /// How a live stream that dropped is opened again.
        package var reconnect = ReconnectBackoff()
        /// How long a live stream may be away, reconnecting, before health checks call it a
        /// problem: a camera's reboot is not one (`--reconnect-grace`).
        package var reconnectGrace: Duration = .seconds(30)
        /// How an RTSP stream's packets travel: `tcp` (interleaved in the RTSP connection,
        /// through any NAT or firewall) or `udp`; nil: FFmpeg's choice (UDP, then TCP).
        package var rtspTransport: RTSPTransport?
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
    /// A stream that goes on until it is stopped, so that its end is a disconnection: a
    /// camera's protocols (RTSP, RTMP, SRT, UDP, RTP), and HTTP(S) without a duration (a live
    /// HLS or MJPEG stream, not a file served over HTTP).
    package let isLiveStream: Bool
    package private(set) var input: InputDescription
    package let options: Options
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var streamIndex: Int32
    private var timeBase: AVRational
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let scaler = PixelScaler()
    /// An allocated frame the decoder had nothing for yet, reused for the next attempt.
    private var spareFrame: UnsafeMutablePointer<AVFrame>?
    /// The stream's codec and parameter sets (Annex B) when its packets can be passed on as
    /// they are (H.264, H.265; else nil): what `onCompressedPacket` needs to make every key
    /// frame self-contained.
    package private(set) var passThrough: PassThrough?
    package typealias PassThrough = (codec: VideoCodec, parameterSets: [UInt8])
    /// NAL length size when the container stores length-prefixed NAL units (MP4, QuickTime).
    private var nalLengthSize: Int?
    /// Called on the capture thread with each compressed video packet, before it is
    /// decoded, when the video is H.264 or H.265: for recording without re-encoding; with
    /// the stream's size (a camera back from a restart may have another). Set it before the
    /// session starts.
    package var onCompressedPacket: (@Sendable (VideoAccessUnit, _ width: Int, _ height: Int) -> Void)?
    /// Called on the capture thread with each AAC frame of the source's audio (see
    /// `input.audio`), in order. Set it before the session starts; without it the audio is
    /// neither decoded nor encoded.
    package var onAudioPacket: (@Sendable (EncodedAudioPacket) -> Void)?
    /// What became of the audio so far, for any thread; nil without audio.
    package var audioCounters: AudioCountersCell? { audioCountersCell }
    private let audioCountersCell: AudioCountersCell?
    private var audio: StreamAudio?
    /// Why the source's audio is left out, when it has audio that cannot be carried on.
    package private(set) var audioProblem: String?
    private let interrupt: InterruptFlag
    /// Ends FFmpeg's blocking calls at the interrupt or when a live stream says nothing for
    /// `networkTimeout`; FFmpeg's interrupt callback reads it.
    private let watchdog: IOWatchdog
    private var draining = false
    private var framesProduced = 0
    /// Added to timestamps after each loop, and after each reconnection, so media time
    /// keeps increasing.
    private var loopOffset: Int64 = 0
    /// While a live stream is away: since when, and the back-off of the next try.
    private var outage: Outage?
    /// After a reconnection, where the stream's first video packet is put on the media
    /// timeline (the last frame's time plus the outage); nil once it has been.
    private var resumeAt: MediaTime?
    /// Compressed packets without a decode time yet (`timedPackets`), and the last decode
    /// time given or worked out.
    private var untimedPackets: [CompressedPacket] = []
    private var lastCompressedDts: Int64?
    /// How far presentation runs behind decoding: the stream's reordering (B-frames) in ticks.
    private var reorderingDelay: Int64 = 0
    /// When the last video packet of a live stream arrived.
    private var lastVideoPacket = ContinuousClock.now
    private var lastPts: Int64 = 0
    private var frameDuration: Int64 = 0
    /// Set when frames are paced (`realtime`).
    private var pacing: FramePacing?
    /// A live stream's and a paced file's jumps of the clock, taken out; nil for a file
    /// read whole.
    private var timestampJumps: TimestampJumps?

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

        watchdog = IOWatchdog(interrupt: interrupt)
        let opened = try Self.open(
            url: url, watchdog: watchdog, timeout: options.networkTimeout, transport: options.rtspTransport)
        (format, decoder, streamIndex, timeBase, input) = (
            opened.format, opened.decoder, opened.streamIndex, opened.timeBase, opened.input
        )
        isLiveStream = Self.isLive(url: url, format: opened.format)
        (passThrough, nalLengthSize) = Self.passThrough(opened)
        do {
            audio = try StreamAudio(
                format: opened.format, videoStream: opened.streamIndex, mode: options.audio, url: url)
        } catch  where options.audio == nil {
            // Audio nobody asked for by name must not keep the video from being analysed.
            audio = nil
            audioProblem = "\(error)"
        } catch {
            opened.close()
            throw error
        }
        audioCountersCell = audio?.shared
        input.audio = audio?.description
        frameDuration = Self.frameDuration(input, timeBase)
        reorderingDelay = Self.reorderingDelay(opened, frameDuration)
        if options.realtime {
            pacing = FramePacing(
                tickSeconds: tickSeconds,
                frameInterval: frameDuration > 0 ? .seconds(mediaTime(frameDuration).seconds) : nil)
        }
        restartTimestampJumps()
    }

    /// A stream opened again, or a file back at its start, starts its clock anew: `loopOffset`
    /// places it, not a jump.
    private func restartTimestampJumps() {
        guard isLiveStream || options.realtime else { return }
        timestampJumps = TimestampJumps(tickSeconds: tickSeconds, frameTicks: frameDuration)
    }

    /// Seconds per tick of the video stream's time base.
    private var tickSeconds: Double { Double(timeBase.num) / Double(timeBase.den) }

    private struct Opened {
        var format: UnsafeMutablePointer<AVFormatContext>
        var decoder: UnsafeMutablePointer<AVCodecContext>
        var streamIndex: Int32
        var timeBase: AVRational
        var input: InputDescription

        func close() {
            var decoder: UnsafeMutablePointer<AVCodecContext>? = decoder
            avcodec_free_context(&decoder)
            var context: UnsafeMutablePointer<AVFormatContext>? = format
            avformat_close_input(&context)
        }
    }

    /// How an RTSP stream's packets travel (`--rtsp-transport`).
    package enum RTSPTransport: String, Sendable, CaseIterable { case tcp, udp }

    private static let liveSchemes = ["rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp", "rtp", "tcp"]

    private static func isLive(url: String, format: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard let scheme = url.range(of: "://").map({ url[..<$0.lowerBound].lowercased() }) else { return false }
        if liveSchemes.contains(scheme) { return true }
        return ["http", "https"].contains(scheme) && format.pointee.duration == cffmpeg_nopts()
    }

    /// The stream's codec and parameter sets, Annex B, and the NAL length size when the
    /// container stores length-prefixed units (its extradata is an `avcC` or `hvcC` record);
    /// nil for a codec that is not passed on.
    private static func passThrough(_ opened: Opened) -> (PassThrough?, Int?) {
        let parameters = opened.format.pointee.streams[Int(opened.streamIndex)]!.pointee.codecpar!.pointee
        let extradata =
            parameters.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.extradata_size))) }
            ?? []
        let (codec, record): (VideoCodec, (units: [ArraySlice<UInt8>], lengthSize: Int)?)
        switch parameters.codec_id {
        case AV_CODEC_ID_H264: (codec, record) = (.h264, H264.parameterSets(avcC: extradata))
        case AV_CODEC_ID_HEVC: (codec, record) = (.hevc, H265.parameterSets(hvcC: extradata))
        default: return (nil, nil)
        }
        guard let record else { return ((codec, extradata), nil) }
        return ((codec, H264.annexB(record.units)), record.lengthSize)
    }

    /// A frame's duration in `timeBase` ticks; 0 when the stream has no frame rate.
    private static func frameDuration(_ input: InputDescription, _ timeBase: AVRational) -> Int64 {
        guard let frameRate = input.frameRate, frameRate > 0 else { return 0 }
        return Int64((1 / frameRate / (Double(timeBase.num) / Double(timeBase.den))).rounded())
    }

    /// The stream's reordering delay in ticks: the frames its decoder holds back (B-frames).
    private static func reorderingDelay(_ opened: Opened, _ frameDuration: Int64) -> Int64 {
        let parameters = opened.format.pointee.streams[Int(opened.streamIndex)]!.pointee.codecpar!.pointee
        return Int64(max(0, parameters.video_delay)) * frameDuration
    }

    /// Opens the container and the best video stream's decoder; on failure, frees what it
    /// opened and throws one line that says why.
    private static func open(
        url: String, watchdog: IOWatchdog, timeout: Duration, transport: RTSPTransport? = nil
    ) throws -> Opened {
        // FFmpeg would print every bitstream complaint on stderr; the capture session
        // reports skipped frames itself, counted and rate-limited.
        av_log_set_level(AV_LOG_FATAL)
        var context = avformat_alloc_context()
        context!.pointee.interrupt_callback = AVIOInterruptCB(
            callback: { opaque in
                Unmanaged<IOWatchdog>.fromOpaque(opaque!).takeUnretainedValue().shouldGiveUp ? 1 : 0
            }, opaque: Unmanaged.passUnretained(watchdog).toOpaque())
        // A server that takes the connection and then says nothing, or a stream that never
        // sends its video, gives up here too.
        watchdog.arm(timeout)
        defer { watchdog.disarm() }
        var dictionary: OpaquePointer?
        let microseconds = String(Int64(timeout / .microseconds(1)))
        av_dict_set(&dictionary, "rw_timeout", microseconds, 0)  // http, tcp, …
        av_dict_set(&dictionary, "timeout", microseconds, 0)  // rtsp socket timeout
        if let transport { av_dict_set(&dictionary, "rtsp_transport", transport.rawValue, 0) }
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
        watchdog.arm(timeout)  // finding the streams gets a timeout of its own
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
            url: redactingPassword(url), width: Int(decoder.pointee.width), height: Int(decoder.pointee.height),
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
        if let outage { return reconnect(outage) }
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

            if isLiveStream { watchdog.arm(options.networkTimeout) }
            let readResult = av_read_frame(format, packet)
            watchdog.disarm()
            if interrupt.isSet { return .end }
            if readResult == cffmpeg_averror_eof() {
                if isLiveStream { return disconnected("the stream ended") }
                // A looping file's audio goes on across the loop; otherwise this is its end.
                if !draining, !options.loop, let audio, let onAudioPacket { audio.finish().forEach(onAudioPacket) }
                draining = true
                avcodec_send_packet(decoder, nil)
                continue
            }
            if readResult == cffmpeg_averror_exit() {
                // The watchdog's deadline, not a stop.
                guard isLiveStream else { return .end }
                return disconnected("nothing received for \(options.networkTimeout)")
            }
            guard readResult >= 0 else {
                if isLiveStream { return disconnected(ffmpegError(readResult)) }
                throw SightlineError.sourceFailed(source: url, reason: ffmpegError(readResult))
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else {
                if isLiveStream, ContinuousClock.now - lastVideoPacket > options.networkTimeout {
                    return disconnected("no video for \(options.networkTimeout)")
                }
                // Audio before the first video packet after a reconnection has no place on
                // the timeline yet.
                if let audio, let onAudioPacket, packet.pointee.stream_index == audio.streamIndex, resumeAt == nil {
                    let offset = loopOffset &+ (timestampJumps?.correction ?? 0)
                    audio.handle(packet, offset: mediaTime(offset)).forEach(onAudioPacket)
                }
                continue
            }
            lastVideoPacket = .now
            takeOutJump(packet)
            if let resumeAt { rebase(packet, to: resumeAt) }
            if let onCompressedPacket, let passThrough {
                for unit in timedPackets(packet, passThrough) { onCompressedPacket(unit, input.width, input.height) }
            }
            if packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 { return .skipped(reason: "corrupt") }
            let sent = avcodec_send_packet(decoder, packet)
            if sent < 0 && sent != cffmpeg_averror_eagain() { return .skipped(reason: "corrupt") }
        }
        return .end
    }

    // MARK: Reconnection

    /// A live stream that is away: since when, the back-off of its next try, and the reason
    /// last reported.
    private struct Outage {
        var since = ContinuousClock.now
        var backoff: ReconnectBackoff
        var reason: String
    }

    /// Closes the stream that dropped; the next `read()` opens it again.
    private func disconnected(_ why: String) -> SourceRead {
        avcodec_free_context(&decoder)
        avformat_close_input(&format)
        av_frame_free(&spareFrame)
        audio = nil
        draining = false
        let reason = "\(redactingPassword(url)): \(why)"
        outage = Outage(backoff: options.reconnect, reason: reason)
        // The stream's timestamps start anew when it is back; its first frame comes after
        // the last one by the outage's length.
        resumeAt = resumeAt ?? (framesProduced > 0 ? mediaTime(lastPts + max(frameDuration, 1)) : nil)
        return .interrupted(reason: reason)
    }

    /// Tries to open the stream again, waiting the back-off before each try, until it opens
    /// (`.resumed`), the source is cancelled (`.end`), or a try fails for another reason than
    /// the last one said (`.interrupted` with it: said once, however often it fails so).
    private func reconnect(_ away: Outage) -> SourceRead {
        var outage = away
        while !interrupt.isSet {
            let delay = outage.backoff.nextDelay()
            if interrupt.sleep(until: .now + delay) { break }
            do {
                try adopt(
                    Self.open(
                        url: url, watchdog: watchdog, timeout: options.networkTimeout, transport: options.rtspTransport)
                )
                resumeAt = resumeAt.map {
                    $0 + MediaTime(seconds: (ContinuousClock.now - outage.since).seconds, timescale: 1000)
                }
                self.outage = nil
                lastVideoPacket = .now
                pacing?.restart()
                return .resumed
            } catch {
                outage.backoff.failed(because: "\(error)")
                if "\(error)" != outage.reason {
                    outage.reason = "\(error)"
                    self.outage = outage
                    return .interrupted(reason: outage.reason)
                }
                self.outage = outage
            }
        }
        return .end
    }

    /// Takes over a stream opened again, in whatever format it now has.
    private func adopt(_ opened: Opened) {
        (format, decoder, streamIndex, timeBase) = (opened.format, opened.decoder, opened.streamIndex, opened.timeBase)
        (passThrough, nalLengthSize) = Self.passThrough(opened)
        let audioInput = input.audio
        input = opened.input
        frameDuration = Self.frameDuration(input, timeBase)
        reorderingDelay = Self.reorderingDelay(opened, frameDuration)
        (untimedPackets, lastCompressedDts) = ([], nil)
        restartTimestampJumps()
        // The audio it had goes on; audio that cannot be carried on now is left out.
        audio =
            (try? StreamAudio(
                format: opened.format, videoStream: opened.streamIndex, mode: options.audio, url: url,
                counters: audioCountersCell ?? AudioCountersCell())) ?? nil
        input.audio = audio?.description ?? audioInput
    }

    /// Moves a video packet by the stream's jumps so far (`TimestampJumps`).
    private func takeOutJump(_ packet: UnsafeMutablePointer<AVPacket>) {
        let nopts = cffmpeg_nopts()
        let time = packet.pointee.dts != nopts ? packet.pointee.dts : packet.pointee.pts
        guard time != nopts, let correction = timestampJumps?.place(time), correction != 0 else { return }
        if packet.pointee.pts != nopts { packet.pointee.pts &+= correction }
        if packet.pointee.dts != nopts { packet.pointee.dts &+= correction }
    }

    /// Puts the first video packet after a reconnection, and all after it, at `time`.
    private func rebase(_ packet: UnsafeMutablePointer<AVPacket>, to time: MediaTime) {
        let nopts = cffmpeg_nopts()
        let first = packet.pointee.dts != nopts ? packet.pointee.dts : packet.pointee.pts
        guard first != nopts else { return }
        let ticks = Int64((time.seconds * Double(timeBase.den) / Double(timeBase.num)).rounded())
        loopOffset = ticks - first
        resumeAt = nil
    }

    private func rewind() throws {
        guard let format, let decoder else { return }
        loopOffset = lastPts + frameDuration
        lastCompressedDts = nil
        restartTimestampJumps()
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

    /// A compressed packet as Annex B, with the parameter sets in front of a key frame that
    /// lacks them, and its timestamps in ticks (nil where the stream gave none).
    private struct CompressedPacket {
        var codec: VideoCodec
        var units: [ArraySlice<UInt8>]
        var isKey: Bool
        var pts: Int64?
        var dts: Int64?
        var duration: Int64
    }

    /// The packets ready to publish, in order: this one and those held before it. An RTSP
    /// stream's first packets come without a decode time (and its first key frame without
    /// any time) until its first sender report places its RTP clock: they are held until a
    /// packet with a decode time says where they are, one frame apart before it, each
    /// missing presentation time its decode time plus the stream's reordering delay.
    private func timedPackets(_ packet: UnsafeMutablePointer<AVPacket>, _ stream: PassThrough) -> [VideoAccessUnit] {
        let bytes = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
        var units =
            nalLengthSize.flatMap { H264.nalUnits(lengthPrefixed: bytes, lengthSize: $0) }
            ?? H264.nalUnits(annexB: bytes)
        let isKey = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
        if isKey, !units.contains(where: stream.codec.isParameterSet) {
            units.insert(contentsOf: H264.nalUnits(annexB: stream.parameterSets), at: 0)
        }
        let nopts = cffmpeg_nopts()
        var current = CompressedPacket(
            codec: stream.codec, units: units, isKey: isKey,
            pts: packet.pointee.pts != nopts ? packet.pointee.pts : nil,
            dts: packet.pointee.dts != nopts ? packet.pointee.dts : nil, duration: packet.pointee.duration)
        let step = max(frameDuration, 1)
        if current.dts == nil, let last = lastCompressedDts { current.dts = last + step }
        guard let dts = current.dts else {
            // Bounded: a stream that never gives a time holds at most a few seconds.
            if untimedPackets.count >= 300 { untimedPackets.removeFirst() }
            untimedPackets.append(current)
            return []
        }
        lastCompressedDts = dts
        guard !untimedPackets.isEmpty else { return [accessUnit(current, dts: dts)] }
        let held = untimedPackets
        untimedPackets.removeAll()
        return held.enumerated().map { index, packet in
            accessUnit(packet, dts: dts - Int64(held.count - index) * step)
        } + [accessUnit(current, dts: dts)]
    }

    private func accessUnit(_ packet: CompressedPacket, dts: Int64) -> VideoAccessUnit {
        let dts = dts + loopOffset
        let pts = packet.pts.map { $0 + loopOffset } ?? dts + reorderingDelay
        return VideoAccessUnit(
            nalUnits: packet.units, codec: packet.codec, presentationTime: mediaTime(max(pts, dts)),
            decodeTime: mediaTime(dts),
            duration: packet.duration > 0 ? mediaTime(packet.duration) : nil, isKeyFrame: packet.isKey)
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
