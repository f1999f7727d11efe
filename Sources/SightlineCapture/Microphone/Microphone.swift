import Foundation
import Logging
import SightlineCore
import Synchronization

/// A microphone (an ALSA capture PCM, `--audio-device hw:1,0`) as a camera's sound: read on
/// a thread of its own, encoded to AAC, timed on the camera's clock.
///
/// The mode is chosen as a camera's is: the rate nearest 48 kHz and the channel count
/// nearest stereo that the device offers, 16-bit samples when it has them; `mode` and
/// `modeWasChosen` say what it got. When the device fails or disappears, the microphone
/// reports `.interrupted`, opens it again with backoff and reports `.resumed`, while the
/// camera's video goes on; the gap is a timestamp jump in its audio.
package final class Microphone: Sendable {
    /// What Sightline asks every microphone for.
    package static let preferredMode = AudioCaptureMode(sampleRate: 48000, channels: 2, format: .s16)

    package let device: String
    package let mode: AudioCaptureMode
    /// The source's audio as the status describes it: PCM, encoded to AAC.
    package let description: AudioInputDescription
    /// What became of the audio so far, for any thread.
    package let counters = AudioCountersCell()
    /// The device and the encoder: the initialiser's, then the microphone thread's, which
    /// holds the lock while it reads (a lock nobody else takes, so that the compiler checks
    /// who uses them).
    private let reader: Mutex<Reader>
    private let logger: Logger
    private let stopRequested = InterruptFlag()
    private let finished = Mutex<DispatchSemaphore?>(nil)

    /// Opens the device at once, so a missing or busy one is an error before anything runs.
    package init(device: String, logger: Logger) throws {
        let capture = try AlsaCapture(name: device, wanted: Self.preferredMode)
        let encoder = try AACEncoder(
            sampleRate: capture.mode.sampleRate, channels: capture.mode.channels,
            sampleFormat: capture.mode.ffmpegFormat)
        self.device = device
        mode = capture.mode
        description = AudioInputDescription(
            codec: capture.mode.codecName, sampleRate: capture.mode.sampleRate, channels: capture.mode.channels,
            handling: .aac, output: encoder.format)
        reader = Mutex(Reader(capture: capture, encoder: encoder))
        self.logger = logger
        counters.value.withLock {
            $0.interruptions = 0
            $0.transcoding = TimingCounters()
        }
    }

    /// Whether the device could not give what Sightline asks for (48 kHz stereo s16).
    package var modeWasChosen: Bool { mode != Self.preferredMode }

    /// Every capture PCM this machine has, for `sightline devices`.
    package static func captureDevices() -> [AudioCaptureDevice] { AlsaCapture.captureDevices() }

    /// Starts reading on the microphone's thread, which calls `onPacket` with each AAC frame
    /// and `onEvent` when the device goes and comes back, until `stop()`.
    package func start(
        onPacket: @escaping @Sendable (EncodedAudioPacket) -> Void,
        onEvent: @escaping @Sendable (CaptureSession.SourceEvent) -> Void
    ) {
        let done = DispatchSemaphore(value: 0)
        finished.withLock { $0 = done }
        Thread.start(named: "microphone", qualityOfService: .userInteractive) { [self] in
            reader.withLock { readLoop(&$0, onPacket: onPacket, onEvent: onEvent) }
            done.signal()
        }
    }

    /// Asks the thread to stop; it hands over its last frames within a read (200 ms). Any
    /// thread; returns at once, so a shutdown handler can call it.
    package func stop() { stopRequested.set() }

    /// Stops and returns once the thread has handed over its last frames. Any thread.
    package func finish() {
        stop()
        finished.withLock { $0 }?.wait()
    }

    private var isStopping: Bool { stopRequested.isSet }

    private func readLoop(
        _ reader: inout Reader, onPacket: @Sendable (EncodedAudioPacket) -> Void,
        onEvent: @Sendable (CaptureSession.SourceEvent) -> Void
    ) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536 * mode.bytesPerFrame, alignment: 16)
        defer { buffer.deallocate() }
        var backoff = Duration.milliseconds(250)
        while !isStopping {
            guard let capture = reader.capture else {
                // Gone: try again with backoff; a stop ends the wait at once.
                if stopRequested.sleep(until: .now + backoff) { break }
                if let reopened = try? AlsaCapture(name: device, wanted: mode, exactly: true) {
                    reader.capture = reopened
                    backoff = .milliseconds(250)
                    logger.notice("microphone back", metadata: ["device": "\(device)"])
                    onEvent(.resumed)
                } else {
                    backoff = min(backoff * 2, .seconds(5))
                }
                continue
            }
            switch capture.read(into: buffer, timeout: .milliseconds(200)) {
            case .samples(let frames, let time):
                let started = ThreadCPUClock.seconds
                let packets: [EncodedAudioPacket]
                do {
                    packets = try reader.encoder.encode(interleaved: buffer, count: frames, at: time)
                } catch {
                    counters.value.withLock { $0.skipped["encoder", default: 0] += 1 }
                    continue
                }
                let (jumps, milliseconds) = (
                    reader.encoder.timestampJumps, (ThreadCPUClock.seconds - started) * 1000
                )
                counters.value.withLock {
                    $0.packets += packets.count
                    $0.timestampJumps = jumps
                    $0.transcoding?.record(milliseconds: milliseconds)
                }
                packets.forEach(onPacket)
            case .idle:
                continue
            case .overrun:
                counters.value.withLock { $0.skipped["overrun", default: 0] += 1 }
            case .lost(let reason):
                reader.capture = nil
                counters.value.withLock { $0.interruptions = ($0.interruptions ?? 0) + 1 }
                logger.warning("microphone lost", metadata: ["device": "\(device)", "reason": "\(reason)"])
                onEvent(.interrupted(reason: "audio device \(device): \(reason)"))
            }
        }
        let last = (try? reader.encoder.finish()) ?? []
        counters.value.withLock { $0.packets += last.count }
        last.forEach(onPacket)
        reader.capture = nil
    }

    private struct Reader {
        var capture: AlsaCapture?
        let encoder: AACEncoder
    }
}
