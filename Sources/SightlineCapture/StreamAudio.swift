import CFFmpeg
import SightlineCore
import Synchronization

/// What to do with a source's audio (`--audio`); nil means by the source: AAC passes,
/// other codecs are encoded to AAC, no audio is no audio.
package enum AudioMode: String, Sendable, CaseIterable {
    case off
    /// AAC as it arrives; a source with other audio is refused.
    case pass
    /// Decoded and encoded to AAC, whatever the source sends.
    case aac
}

/// A file's or network stream's first audio stream, carried on as AAC frames on the
/// source's clock: AAC packets as they are (ADTS headers, as MPEG-TS and RTSP cameras send
/// them, removed by FFmpeg's `aac_adtstoasc`), other codecs (G.711, Opus, MP3, PCM …)
/// decoded and encoded with `AACEncoder`.
///
/// On the capture thread, like the source that owns it.
final class StreamAudio {
    let description: AudioInputDescription
    let streamIndex: Int32
    /// What became of the audio, shared with whoever reports it (and with the stream's next
    /// audio after a reconnection, whose counts go on from these).
    let shared: AudioCountersCell
    private var counters = AudioCounters() {
        didSet { shared.value.withLock { $0 = counters } }
    }
    private let timeBase: AVRational
    private let sampleRate: Int32
    private var filter: UnsafeMutablePointer<AVBSFContext>?
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private let encoder: AACEncoder?
    private var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    private var filtered: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    /// When the next pass-through packet should start, to count timestamp jumps.
    private var expected: MediaTime?
    /// The offset of the last packet transcoded, for what the decoder holds at the end.
    private var lastOffset = MediaTime.zero

    /// The audio stream to carry, or nil when there is none or `mode` is `off`. Throws one
    /// line when `mode` asks for what the source cannot give.
    init?(
        format: UnsafeMutablePointer<AVFormatContext>, videoStream: Int32, mode: AudioMode?, url: String,
        counters shared: AudioCountersCell = AudioCountersCell()
    ) throws {
        guard mode != .off else { return nil }
        self.shared = shared
        counters = shared.counters
        var codec: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, videoStream, &codec, 0)
        guard index >= 0, let stream = format.pointee.streams[Int(index)], let parameters = stream.pointee.codecpar
        else {
            if mode == nil { return nil }
            throw SightlineError.sourceUnavailable(source: url, reason: "--audio \(mode!.rawValue): it has no audio")
        }
        let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
        let channels = Int(cffmpeg_channel_count(&parameters.pointee.ch_layout))
        let rate = Int(parameters.pointee.sample_rate)
        let isAAC = parameters.pointee.codec_id == AV_CODEC_ID_AAC
        if mode == .pass, !isAAC {
            throw SightlineError.sourceUnavailable(
                source: url, reason: "--audio pass needs AAC; its audio is \(name) (--audio aac encodes it)")
        }
        streamIndex = index
        timeBase = stream.pointee.time_base
        if isAAC && mode != .aac {
            sampleRate = Int32(rate)
            encoder = nil
            filter = try Self.adtsFilter(stream, url: url)
            let extradata = parameters.pointee.extradata.map {
                Array(UnsafeBufferPointer(start: $0, count: Int(parameters.pointee.extradata_size)))
            }
            let config = extradata.flatMap { $0.isEmpty ? nil : $0 } ?? Self.config(parameters.pointee)
            description = AudioInputDescription(
                codec: name, sampleRate: rate, channels: channels, handling: .pass,
                output: AudioFormat(sampleRate: rate, channels: channels, config: config))
        } else {
            guard let codec, let decoder = avcodec_alloc_context3(codec) else {
                throw SightlineError.sourceUnavailable(source: url, reason: "no decoder for its \(name) audio")
            }
            self.decoder = decoder
            avcodec_parameters_to_context(decoder, parameters)
            decoder.pointee.pkt_timebase = stream.pointee.time_base
            let opened = avcodec_open2(decoder, codec, nil)
            guard opened >= 0 else {
                throw SightlineError.sourceUnavailable(
                    source: url, reason: "cannot open its \(name) audio decoder: \(ffmpegError(opened))")
            }
            let encoder = try AACEncoder(
                sampleRate: Int(decoder.pointee.sample_rate),
                channels: Int(cffmpeg_channel_count(&decoder.pointee.ch_layout)),
                sampleFormat: decoder.pointee.sample_fmt,
                layout: withUnsafePointer(to: &decoder.pointee.ch_layout) { $0 })
            self.encoder = encoder
            sampleRate = Int32(encoder.format.sampleRate)
            counters.transcoding = TimingCounters()
            description = AudioInputDescription(
                codec: name, sampleRate: rate, channels: channels, handling: .aac, output: encoder.format)
        }
    }

    deinit {
        av_bsf_free(&filter)
        avcodec_free_context(&decoder)
        av_frame_free(&frame)
        av_packet_free(&filtered)
    }

    /// FFmpeg's filter that turns ADTS frames into raw AAC (and passes raw AAC through).
    private static func adtsFilter(_ stream: UnsafeMutablePointer<AVStream>, url: String) throws
        -> UnsafeMutablePointer<AVBSFContext>?
    {
        var filter: UnsafeMutablePointer<AVBSFContext>?
        guard let definition = av_bsf_get_by_name("aac_adtstoasc"), av_bsf_alloc(definition, &filter) >= 0,
            let filter
        else { throw SightlineError.sourceUnavailable(source: url, reason: "FFmpeg lacks aac_adtstoasc") }
        avcodec_parameters_copy(filter.pointee.par_in, stream.pointee.codecpar)
        filter.pointee.time_base_in = stream.pointee.time_base
        let initialised = av_bsf_init(filter)
        guard initialised >= 0 else {
            var failed: UnsafeMutablePointer<AVBSFContext>? = filter
            av_bsf_free(&failed)
            throw SightlineError.sourceUnavailable(
                source: url, reason: "cannot read its AAC: \(ffmpegError(initialised))")
        }
        return filter
    }

    /// An AudioSpecificConfig from the stream's parameters, for AAC that came without one
    /// (ADTS): object type, sampling frequency index, channel configuration.
    private static func config(_ parameters: AVCodecParameters) -> [UInt8] {
        let objectType = UInt16(max(parameters.profile, 0) + 1)  // FF_PROFILE_AAC_LOW (1) is object type 2
        let frequency = UInt16(AACEncoder.sampleRates.firstIndex(of: Int(parameters.sample_rate)) ?? 3)
        let channels = UInt16(min(max(parameters.ch_layout.nb_channels, 0), 7))
        let bits = objectType << 11 | frequency << 7 | channels << 3
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)]
    }

    /// The AAC frames one of the stream's packets makes; `offset` is added to its time (a
    /// looping file's).
    func handle(_ packet: UnsafeMutablePointer<AVPacket>, offset: MediaTime) -> [EncodedAudioPacket] {
        if encoder != nil { return transcode(packet, offset: offset) }
        guard let filter, let filtered, let copy = av_packet_clone(packet) else { return [] }
        var input: UnsafeMutablePointer<AVPacket>? = copy
        defer { av_packet_free(&input) }
        guard av_bsf_send_packet(filter, copy) >= 0 else {
            counters.skipped["undecodable", default: 0] += 1
            return []
        }
        var packets: [EncodedAudioPacket] = []
        while av_bsf_receive_packet(filter, filtered) >= 0 {
            defer { av_packet_unref(filtered) }
            guard filtered.pointee.size > 0, let time = mediaTime(filtered.pointee.pts) else {
                counters.skipped["undecodable", default: 0] += 1
                continue
            }
            let duration =
                filtered.pointee.duration > 0
                ? mediaTime(filtered.pointee.duration)! : MediaTime(value: 1024, timescale: sampleRate)
            let start = time + offset
            if let expected, abs((start - expected).seconds) > 0.1 { counters.timestampJumps += 1 }
            expected = start + duration
            packets.append(
                EncodedAudioPacket(
                    data: Array(UnsafeBufferPointer(start: filtered.pointee.data, count: Int(filtered.pointee.size))),
                    time: start.converted(to: sampleRate), duration: duration.converted(to: sampleRate)))
        }
        counters.packets += packets.count
        return packets
    }

    /// Decodes `packet` (nil: what the decoder still holds) and encodes what comes out.
    private func transcode(_ packet: UnsafeMutablePointer<AVPacket>?, offset: MediaTime) -> [EncodedAudioPacket] {
        guard let decoder, let encoder, let frame else { return [] }
        lastOffset = offset
        let started = ThreadCPUClock.seconds
        let sent = avcodec_send_packet(decoder, packet)
        if sent < 0 && sent != cffmpeg_averror_eagain() {
            counters.skipped["undecodable", default: 0] += 1
            return []
        }
        var packets: [EncodedAudioPacket] = []
        while true {
            let received = avcodec_receive_frame(decoder, frame)
            if received == cffmpeg_averror_eagain() || received == cffmpeg_averror_eof() { break }
            guard received >= 0 else {
                counters.skipped["undecodable", default: 0] += 1
                break
            }
            defer { av_frame_unref(frame) }
            let time = mediaTime(frame.pointee.best_effort_timestamp).map { $0 + offset }
            do {
                packets += try encoder.encode(frame, at: time)
            } catch {
                counters.skipped["encoder", default: 0] += 1
            }
        }
        counters.transcoding?.record(milliseconds: (ThreadCPUClock.seconds - started) * 1000)
        counters.timestampJumps = encoder.timestampJumps
        counters.packets += packets.count
        return packets
    }

    /// What the decoder and the encoder still hold, at the end of the source.
    func finish() -> [EncodedAudioPacket] {
        guard let encoder else { return [] }
        var packets = transcode(nil, offset: lastOffset)
        let drained = packets.count  // counted by transcode
        packets += (try? encoder.finish()) ?? []
        counters.packets += packets.count - drained
        return packets
    }

    private func mediaTime(_ ticks: Int64) -> MediaTime? {
        guard ticks != cffmpeg_nopts() else { return nil }
        return MediaTime(value: ticks * Int64(timeBase.num), timescale: timeBase.den)
    }
}

/// A source's audio counters: the capture thread writes them, any thread reads them.
package final class AudioCountersCell: Sendable {
    let value = Mutex(AudioCounters())
    package var counters: AudioCounters { value.withLock { $0 } }
}
