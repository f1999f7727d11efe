import CFFmpeg
import SightlineCore

/// Encodes PCM audio to AAC-LC with libavcodec's own encoder: decoded frames of any
/// layout, rate and sample format (a stream's G.711, Opus, MP3 …) or interleaved samples
/// (a microphone), resampled to what the encoder takes and cut into its 1024-sample frames.
///
/// Timing follows the input: each packet's time is the time of its first sample on the
/// source's clock (the encoder's priming frame comes first, 1024 samples early). A jump of
/// more than 100 ms in the input's timestamps times the audio again from there (counted).
///
/// Not thread-safe: one owner calls it, in order.
package final class AACEncoder {
    /// What the encoder writes: the rate (the input's when AAC has it, else 48 kHz), the
    /// channels (mono stays mono, anything else becomes stereo) and the decoder's config.
    package let format: AudioFormat
    /// Input timestamp jumps so far.
    package private(set) var timestampJumps = 0
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var resampler: OpaquePointer?
    private var fifo: OpaquePointer?
    /// Resampler output, and the frame handed to the encoder.
    private var converted: UnsafeMutablePointer<AVFrame>?
    private var encoderFrame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    /// Output-rate sample number of the first sample in the FIFO.
    private var fifoStart: Int64?

    /// AAC's sampling frequencies (ISO/IEC 14496-3, table 1.18).
    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]

    /// `layout`: the input's channel layout when it has one (a decoded frame's), else the
    /// default layout of `channels`.
    package init(
        sampleRate: Int, channels: Int, sampleFormat: AVSampleFormat, layout: UnsafePointer<AVChannelLayout>? = nil
    ) throws {
        guard sampleRate > 0, channels > 0 else {
            throw SightlineError.invalidArgument("audio of \(sampleRate) Hz, \(channels) channels cannot be encoded")
        }
        let outputRate = Self.sampleRates.contains(sampleRate) ? sampleRate : 48000
        let outputChannels = channels == 1 ? 1 : 2
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC), let context = avcodec_alloc_context3(codec) else {
            throw SightlineError.invalidArgument("this FFmpeg has no AAC encoder")
        }
        self.context = context
        context.pointee.sample_rate = Int32(outputRate)
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP  // the only format the native encoder takes
        cffmpeg_set_channels(&context.pointee.ch_layout, Int32(outputChannels))
        // 64 kb/s a channel at 32 kHz and up; less for narrow-band sources (G.711's 8 kHz).
        context.pointee.bit_rate = Int64(outputChannels * (outputRate >= 32000 ? 64000 : 32000))
        context.pointee.time_base = AVRational(num: 1, den: Int32(outputRate))
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER  // the config goes to extradata, not ADTS
        // The "fast" coder: half the CPU of the default two-loop search at the same bit rate,
        // which keeps a transcoded stream's sound under 2% of a recording's CPU
        // (tools/bench-audio.py).
        var settings: OpaquePointer?
        av_dict_set(&settings, "aac_coder", "fast", 0)
        defer { av_dict_free(&settings) }
        let opened = avcodec_open2(context, codec, &settings)
        guard opened >= 0 else {
            throw SightlineError.invalidArgument("cannot open the AAC encoder: \(ffmpegError(opened))")
        }
        guard
            let resampler = cffmpeg_resampler(
                layout, Int32(channels), sampleFormat, Int32(sampleRate), Int32(outputChannels), AV_SAMPLE_FMT_FLTP,
                Int32(outputRate))
        else {
            throw SightlineError.invalidArgument(
                "cannot convert \(channels)-channel \(sampleRate) Hz audio for the AAC encoder")
        }
        self.resampler = resampler
        fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, Int32(outputChannels), context.pointee.frame_size * 2)
        converted = av_frame_alloc()
        encoderFrame = av_frame_alloc()
        let config = Array(
            UnsafeBufferPointer(start: context.pointee.extradata, count: Int(context.pointee.extradata_size)))
        format = AudioFormat(sampleRate: outputRate, channels: outputChannels, config: config)
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&converted)
        av_frame_free(&encoderFrame)
        if let fifo { av_audio_fifo_free(fifo) }
        swr_free(&resampler)
        avcodec_free_context(&context)
    }

    /// Encodes a decoded frame whose first sample is heard at `time` (nil: right after the
    /// previous one).
    package func encode(_ frame: UnsafePointer<AVFrame>, at time: MediaTime?) throws -> [EncodedAudioPacket] {
        try convert(count: Int(frame.pointee.nb_samples), at: time) { resampler, output, capacity in
            cffmpeg_resample_frame(resampler, output, capacity, frame)
        }
    }

    /// Encodes `count` interleaved samples (in the sample format given to `init`) whose first
    /// is heard at `time`.
    package func encode(interleaved samples: UnsafeRawPointer, count: Int, at time: MediaTime) throws
        -> [EncodedAudioPacket]
    {
        try convert(count: count, at: time) { resampler, output, capacity in
            cffmpeg_resample_interleaved(resampler, output, capacity, samples, Int32(count))
        }
    }

    /// Encodes what is still buffered (a short last frame) and ends the stream.
    package func finish() throws -> [EncodedAudioPacket] {
        guard let context, let fifo, fifoStart != nil else { return [] }
        var packets = try convert(count: 0, at: nil) { resampler, output, capacity in
            cffmpeg_resample_frame(resampler, output, capacity, nil)
        }
        if av_audio_fifo_size(fifo) > 0 { packets += try encodeFrame(samples: av_audio_fifo_size(fifo)) }
        avcodec_send_frame(context, nil)
        packets += try receivePackets()
        fifoStart = nil
        return packets
    }

    private func convert(
        count: Int, at time: MediaTime?, _ resample: (OpaquePointer, UnsafeMutablePointer<AVFrame>, Int32) -> Int32
    ) throws -> [EncodedAudioPacket] {
        guard let context, let resampler, let fifo, let converted else { return [] }
        let outputRate = Int64(context.pointee.sample_rate)
        // Where these samples fall at the output rate, against where the FIFO says.
        let start = time?.converted(to: Int32(outputRate)).value
        if let start, let fifoStart {
            let buffered = Int64(av_audio_fifo_size(fifo)) + swr_get_delay(resampler, outputRate)
            if abs(start - (fifoStart + buffered)) > outputRate / 10 {
                timestampJumps += 1
                self.fifoStart = start - buffered
            }
        } else if fifoStart == nil {
            fifoStart = start ?? 0
        }
        let capacity = swr_get_out_samples(resampler, Int32(count))
        guard capacity > 0 else { return [] }
        av_frame_unref(converted)
        converted.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        converted.pointee.nb_samples = capacity
        av_channel_layout_copy(&converted.pointee.ch_layout, &context.pointee.ch_layout)
        guard av_frame_get_buffer(converted, 0) >= 0 else { throw SightlineError.invalidArgument("out of memory") }
        let written = resample(resampler, converted, capacity)
        guard written >= 0 else {
            throw SightlineError.invalidArgument("cannot resample audio: \(ffmpegError(written))")
        }
        cffmpeg_fifo_write(fifo, converted, written)
        var packets: [EncodedAudioPacket] = []
        let frameSize = context.pointee.frame_size
        while av_audio_fifo_size(fifo) >= frameSize {
            packets += try encodeFrame(samples: frameSize)
        }
        return packets
    }

    /// Moves `samples` from the FIFO into one encoder frame and encodes it.
    private func encodeFrame(samples: Int32) throws -> [EncodedAudioPacket] {
        guard let context, let fifo, let frame = encoderFrame, let start = fifoStart else { return [] }
        av_frame_unref(frame)
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.nb_samples = samples  // the last may be short: the encoder pads it
        frame.pointee.sample_rate = context.pointee.sample_rate
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw SightlineError.invalidArgument("out of memory") }
        cffmpeg_fifo_read(fifo, frame, samples)
        frame.pointee.pts = start
        fifoStart = start + Int64(samples)
        let sent = avcodec_send_frame(context, frame)
        guard sent >= 0 else { throw SightlineError.invalidArgument("the AAC encoder failed: \(ffmpegError(sent))") }
        return try receivePackets()
    }

    private func receivePackets() throws -> [EncodedAudioPacket] {
        guard let context, let packet else { return [] }
        var packets: [EncodedAudioPacket] = []
        let rate = context.pointee.sample_rate
        while true {
            let received = avcodec_receive_packet(context, packet)
            if received == cffmpeg_averror_eagain() || received == cffmpeg_averror_eof() { break }
            guard received >= 0 else {
                throw SightlineError.invalidArgument("the AAC encoder failed: \(ffmpegError(received))")
            }
            defer { av_packet_unref(packet) }
            packets.append(
                EncodedAudioPacket(
                    data: Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))),
                    time: MediaTime(value: packet.pointee.pts, timescale: rate),
                    duration: MediaTime(value: packet.pointee.duration, timescale: rate)))
        }
        return packets
    }
}
