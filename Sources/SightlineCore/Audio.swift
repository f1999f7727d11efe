/// An AAC stream's format: what a decoder is configured with, and what a movie's `esds`
/// carries.
public struct AudioFormat: Sendable, Codable, Hashable {
    /// Always "aac" (MPEG-4 AAC, raw frames without ADTS headers) in protocol version 1.
    public var codec: String
    public var sampleRate: Int
    public var channels: Int
    /// The AudioSpecificConfig (ISO/IEC 14496-3, 1.6.2.1) as hexadecimal digits.
    public var config: String

    public init(codec: String = "aac", sampleRate: Int, channels: Int, config: [UInt8]) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.config = config.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// The AudioSpecificConfig's bytes; nil when `config` is not hexadecimal.
    public var configBytes: [UInt8]? {
        let digits = Array(config.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }
}

/// One encoded audio frame (1024 samples for AAC-LC), timed on the source's clock like its
/// video, so the two stay in sync wherever they go.
public struct EncodedAudioPacket: Sendable {
    public var data: [UInt8]
    /// When its first sample is heard, in the format's sample rate.
    public var time: MediaTime
    public var duration: MediaTime

    public init(data: [UInt8], time: MediaTime, duration: MediaTime) {
        self.data = data
        self.time = time
        self.duration = duration
    }
}

/// What an `audio` message's payload is: one AAC frame, of this format and duration.
public struct AudioPacketInfo: Sendable, Codable, Equatable {
    public var format: AudioFormat
    public var duration: MediaTime

    public init(format: AudioFormat, duration: MediaTime) {
        self.format = format
        self.duration = duration
    }
}

/// A source's audio as it arrives and as Sightline carries it on.
public struct AudioInputDescription: Sendable, Codable, Equatable {
    /// How the source's audio reaches the bus and the recordings.
    public enum Handling: String, Sendable, Codable, CaseIterable {
        /// AAC frames as the source sent them.
        case pass
        /// Decoded and encoded to AAC with libavcodec's encoder.
        case aac
    }
    /// The source's codec as FFmpeg names it (`aac`, `pcm_mulaw`, `opus` …).
    public var codec: String
    public var sampleRate: Int
    public var channels: Int
    public var handling: Handling
    /// What the bus and the recordings get.
    public var output: AudioFormat

    public init(codec: String, sampleRate: Int, channels: Int, handling: Handling, output: AudioFormat) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.handling = handling
        self.output = output
    }

    /// One phrase for logs: "aac 48000 Hz 2 ch, passed on", "pcm_mulaw 8000 Hz 1 ch, encoded
    /// to AAC 8000 Hz 1 ch".
    public var summary: String {
        let source = "\(codec) \(sampleRate) Hz \(channels) ch"
        return handling == .pass
            ? "\(source), passed on" : "\(source), encoded to AAC \(output.sampleRate) Hz \(output.channels) ch"
    }
}

/// What became of a source's audio.
public struct AudioCounters: Sendable, Codable, Equatable {
    /// `audio` messages published.
    public var packets = 0
    /// Packets left out, by reason: `undecodable` (the decoder refused them), `encoder`.
    public var skipped: [String: Int] = [:]
    /// Times the source's audio timestamps jumped (a gap or a step back of more than
    /// 100 ms); the audio is timed again from the new timestamp.
    public var timestampJumps = 0
    /// Decoding and encoding, when the audio is transcoded: per encoded frame.
    public var transcoding: TimingCounters?
    /// A microphone's: how often it failed or disappeared (`interrupted` status messages).
    public var interruptions: Int?

    public init() {}
}

extension String {
    /// With zeros before it to `length` characters (hex bytes: `0a`).
    package func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
