import CAlsa
import CFFmpeg
import Foundation
import SightlineCore

/// A capture PCM that ALSA offers, as `sightline devices` lists it.
package struct AudioCaptureDevice: Sendable, Codable, Equatable {
    /// What `--audio-device` takes: `hw:CARD,DEVICE`.
    package var name: String
    /// The card's ID (`Loopback`, `PCH`) and the PCM's name.
    package var card: String
    package var description: String
}

/// How a microphone delivers samples: interleaved, at this rate, in this format.
package struct AudioCaptureMode: Sendable, Equatable, CustomStringConvertible {
    package enum SampleFormat: String, Sendable, CaseIterable {
        case s16, s32, float
    }
    package var sampleRate: Int
    package var channels: Int
    package var format: SampleFormat

    var bytesPerFrame: Int { channels * (format == .s16 ? 2 : 4) }

    var alsaFormat: snd_pcm_format_t {
        switch format {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float: SND_PCM_FORMAT_FLOAT_LE
        }
    }

    var ffmpegFormat: AVSampleFormat {
        switch format {
        case .s16: AV_SAMPLE_FMT_S16
        case .s32: AV_SAMPLE_FMT_S32
        case .float: AV_SAMPLE_FMT_FLT
        }
    }

    /// FFmpeg's name for these samples, as the status's `input.audio.codec` says.
    var codecName: String {
        switch format {
        case .s16: "pcm_s16le"
        case .s32: "pcm_s32le"
        case .float: "pcm_f32le"
        }
    }

    package var description: String { "\(sampleRate) Hz \(channels) ch \(format.rawValue)" }
}

/// One open ALSA capture PCM, through libasound: opened non-blocking, so that a busy device
/// is an error at once and a reader can be stopped; samples are read interleaved and timed
/// on CLOCK_MONOTONIC, the clock V4L2 stamps camera frames with, so sound and picture share
/// one timeline.
///
/// Not thread-safe: one thread at a time.
final class AlsaCapture {
    let name: String
    let mode: AudioCaptureMode
    /// Frames per read: one period.
    let periodFrames: Int
    private var pcm: OpaquePointer?

    /// What a read gives.
    enum Read {
        /// `frames` frames, the first heard at `time` (CLOCK_MONOTONIC, microseconds).
        case samples(frames: Int, time: MediaTime)
        /// Nothing yet (the wait timed out).
        case idle
        /// The reader was too slow and the device dropped samples; it goes on.
        case overrun
        /// The device failed or disappeared.
        case lost(reason: String)
    }

    /// Opens `name` as close to `wanted` as the device allows: the nearest rate, the
    /// nearest channel count, 16-bit samples when offered. With `exactly`, only `wanted`
    /// (a device coming back must deliver what the encoder was set up for).
    init(name: String, wanted: AudioCaptureMode, exactly: Bool = false) throws {
        self.name = name
        var handle: OpaquePointer?
        let opened = snd_pcm_open(&handle, name, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard opened >= 0, let handle else { throw Self.openError(name, opened) }
        pcm = handle
        do {
            (mode, periodFrames) = try Self.configure(handle, name: name, wanted: wanted, exactly: exactly)
        } catch {
            snd_pcm_close(handle)
            pcm = nil
            throw error
        }
    }

    deinit { if let pcm { snd_pcm_close(pcm) } }

    /// Waits up to `timeout` for a period of samples and reads what is there into `buffer`
    /// (room for `periodFrames`).
    func read(into buffer: UnsafeMutableRawPointer, timeout: Duration) -> Read {
        guard let pcm else { return .lost(reason: "closed") }
        // A prepared capture stream waits for a start: the first read's, so that the time
        // between opening the device and reading it (the rest of the pipeline opening, a
        // wait for a subscriber) fills no buffer; or the one after an overrun.
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { snd_pcm_start(pcm) }
        let waited = snd_pcm_wait(pcm, Int32(timeout.milliseconds))
        if waited == 0 { return .idle }
        let count = waited < 0 ? snd_pcm_sframes_t(waited) : snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(periodFrames))
        if count == -snd_pcm_sframes_t(EAGAIN) { return .idle }
        if count == -snd_pcm_sframes_t(EPIPE) || count == -snd_pcm_sframes_t(ESTRPIPE),
            snd_pcm_recover(pcm, Int32(count), 1) >= 0
        {
            // An overrun, or a suspend and resume: recovered to prepared, started at the next read.
            return .overrun
        }
        guard count > 0 else {
            return .lost(
                reason: count == -snd_pcm_sframes_t(ENODEV)
                    ? "the device disappeared (ENODEV)" : Self.text(Int32(count)))
        }
        return .samples(frames: Int(count), time: firstSampleTime(of: Int(count)))
    }

    /// When the first of the `frames` just read was heard: the driver's timestamp of its
    /// latest update, less the frames captured up to it (those read and those still unread).
    private func firstSampleTime(of frames: Int) -> MediaTime {
        var available: snd_pcm_uframes_t = 0
        var stamp = timespec()
        let stamped = pcm.map { snd_pcm_htimestamp($0, &available, &stamp) == 0 } ?? false
        if !stamped || (stamp.tv_sec == 0 && stamp.tv_nsec == 0) {
            // No driver timestamp: now, less what waits unread.
            clock_gettime(CLOCK_MONOTONIC, &stamp)
            available = snd_pcm_uframes_t(max(0, pcm.map { snd_pcm_avail_update($0) } ?? 0))
        }
        let microseconds =
            Int64(stamp.tv_sec) * 1_000_000 + Int64(stamp.tv_nsec) / 1000
            - (Int64(available) + Int64(frames)) * 1_000_000 / Int64(mode.sampleRate)
        return MediaTime(value: microseconds, timescale: 1_000_000)
    }

    private static func configure(
        _ pcm: OpaquePointer, name: String, wanted: AudioCaptureMode, exactly: Bool
    ) throws -> (AudioCaptureMode, Int) {
        var hardware: OpaquePointer?
        snd_pcm_hw_params_malloc(&hardware)
        guard let hardware else { throw SightlineError.invalidArgument("out of memory") }
        defer { snd_pcm_hw_params_free(hardware) }
        func check(_ result: Int32, _ what: String) throws { try Self.check(result, what, device: name) }
        try check(snd_pcm_hw_params_any(pcm, hardware), "no configuration")
        try check(snd_pcm_hw_params_set_access(pcm, hardware, SND_PCM_ACCESS_RW_INTERLEAVED), "no interleaved access")
        var mode = wanted
        let formats = exactly ? [wanted.format] : [wanted.format] + AudioCaptureMode.SampleFormat.allCases
        guard
            let format = formats.first(where: { format in
                var candidate = wanted
                candidate.format = format
                return snd_pcm_hw_params_test_format(pcm, hardware, candidate.alsaFormat) == 0
            })
        else {
            throw SightlineError.sourceUnavailable(
                source: "audio device \(name)", reason: "offers no sample format Sightline reads (s16, s32, float)")
        }
        mode.format = format
        try check(snd_pcm_hw_params_set_format(pcm, hardware, mode.alsaFormat), "format \(format)")
        var minimum: UInt32 = 0
        var maximum: UInt32 = 0
        snd_pcm_hw_params_get_channels_min(hardware, &minimum)
        snd_pcm_hw_params_get_channels_max(hardware, &maximum)
        mode.channels = Int(min(max(UInt32(wanted.channels), minimum), maximum))
        try check(snd_pcm_hw_params_set_channels(pcm, hardware, UInt32(mode.channels)), "\(mode.channels) channels")
        var rate = UInt32(wanted.sampleRate)
        var direction: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(pcm, hardware, &rate, &direction), "rate near \(wanted.sampleRate)")
        mode.sampleRate = Int(rate)
        if exactly, mode != wanted {
            throw SightlineError.sourceUnavailable(
                source: "audio device \(name)", reason: "now offers \(mode), not \(wanted)")
        }
        // Periods of 1024 frames (an AAC frame), eight of them buffered (about 170 ms at
        // 48 kHz): room for a busy machine, and reads that come as often as AAC frames.
        var period = snd_pcm_uframes_t(1024)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hardware, &period, &direction), "period size")
        var buffer = period * 8
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hardware, &buffer), "buffer size")
        try check(snd_pcm_hw_params(pcm, hardware), "cannot apply \(mode)")
        try prepare(pcm, name: name, period: period)
        return (mode, Int(period))
    }

    /// Sets the software parameters (timestamps on CLOCK_MONOTONIC, the camera's clock; a
    /// read wakes once a period is there) and prepares capturing, which the first read starts.
    private static func prepare(_ pcm: OpaquePointer, name: String, period: snd_pcm_uframes_t) throws {
        var software: OpaquePointer?
        snd_pcm_sw_params_malloc(&software)
        guard let software else { throw SightlineError.invalidArgument("out of memory") }
        defer { snd_pcm_sw_params_free(software) }
        snd_pcm_sw_params_current(pcm, software)
        snd_pcm_sw_params_set_tstamp_mode(pcm, software, SND_PCM_TSTAMP_ENABLE)
        snd_pcm_sw_params_set_tstamp_type(pcm, software, SND_PCM_TSTAMP_TYPE_MONOTONIC)
        snd_pcm_sw_params_set_avail_min(pcm, software, period)
        try check(snd_pcm_sw_params(pcm, software), "software parameters", device: name)
        try check(snd_pcm_prepare(pcm), "cannot prepare", device: name)
    }

    private static func check(_ result: Int32, _ what: String, device name: String) throws {
        guard result >= 0 else {
            throw SightlineError.sourceUnavailable(source: "audio device \(name)", reason: "\(what): \(text(result))")
        }
    }

    /// The one line for a device that cannot be opened, naming what exists.
    private static func openError(_ name: String, _ code: Int32) -> SightlineError {
        let reason =
            switch -code {
            case ENOENT, ENODEV, ENXIO: "no such capture device"
            case EBUSY: "busy (another program is recording from it)"
            case EACCES, EPERM: "permission denied (is the user in the audio group?)"
            default: text(code)
            }
        let devices = captureDevices()
        let offered =
            devices.isEmpty
            ? "this machine has no capture device"
            : "capture devices: "
                + devices.map { "\($0.name) (\($0.card): \($0.description))" }.joined(separator: ", ")
        return SightlineError.sourceUnavailable(source: "audio device \(name)", reason: "\(reason); \(offered)")
    }

    static func text(_ code: Int32) -> String { String(cString: snd_strerror(code)) }

    /// Every capture PCM of every sound card, as `hw:CARD,DEVICE`.
    static func captureDevices() -> [AudioCaptureDevice] {
        var devices: [AudioCaptureDevice] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            var control: OpaquePointer?
            guard snd_ctl_open(&control, "hw:\(card)", 0) == 0, let control else { continue }
            defer { snd_ctl_close(control) }
            var cardInfo: OpaquePointer?
            snd_ctl_card_info_malloc(&cardInfo)
            defer { snd_ctl_card_info_free(cardInfo) }
            guard let cardInfo, snd_ctl_card_info(control, cardInfo) == 0 else { continue }
            let cardID = String(cString: snd_ctl_card_info_get_id(cardInfo))
            var pcmInfo: OpaquePointer?
            snd_pcm_info_malloc(&pcmInfo)
            defer { snd_pcm_info_free(pcmInfo) }
            guard let pcmInfo else { continue }
            var device: Int32 = -1
            while snd_ctl_pcm_next_device(control, &device) == 0, device >= 0 {
                snd_pcm_info_set_device(pcmInfo, UInt32(device))
                snd_pcm_info_set_subdevice(pcmInfo, 0)
                snd_pcm_info_set_stream(pcmInfo, SND_PCM_STREAM_CAPTURE)
                guard snd_ctl_pcm_info(control, pcmInfo) == 0 else { continue }  // playback only
                devices.append(
                    AudioCaptureDevice(
                        name: "hw:\(card),\(device)", card: cardID,
                        description: String(cString: snd_pcm_info_get_name(pcmInfo))))
            }
        }
        return devices
    }
}
