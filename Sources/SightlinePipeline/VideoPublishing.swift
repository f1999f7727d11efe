import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import Synchronization

/// When the pipeline puts video on the bus.
package enum VideoMode: String, Sendable, CaseIterable {
    /// Only while someone subscribes to this source's video (a recorder): no cost otherwise.
    case onDemand = "on-demand"
    case always
    case off
}

/// Publishes one `video` message per H.264 access unit: either the source's own packets
/// (pass-through, no re-encoding) or frames encoded with libx264 on the encode output's
/// queue, which sees every frame.
///
/// `frameDataOutput` runs on the encode output's serial queue, which owns the encoder;
/// `publishCompressed` runs on the capture thread. Counters may be read from any thread.
package final class VideoPublishing: FrameDataOutputDelegate, Sendable {
    private let publisher: Publisher
    private let sourceID: String
    private let demand: OnDemandTopic
    private let logger: Logger
    private let encoderOptions: VideoEncoder.Options
    private let frameRate: Double
    /// The encode output queue's (or, once it drained, `finish()`'s): it holds the lock
    /// while it encodes (never contended; the compiler checks that the encoder is used
    /// under it).
    private let encoding = Mutex(Encoding())

    private struct Encoding {
        var encoder: VideoEncoder?
        var failed = false
        var reportedBacklog = false
    }
    /// A live source cannot wait: an encoder that holds capture back is worth a warning.
    private let isLive: Bool
    /// Frames the encode output may hold before capture waits for it.
    static let maximumBacklog = 8
    private let state = Mutex((timing: TimingCounters(), packets: 0, encoding: false))

    package init(
        publisher: Publisher, sourceID: String, mode: VideoMode, encoder: VideoEncoder.Options, frameRate: Double,
        isLive: Bool, logger: Logger
    ) {
        self.isLive = isLive
        self.publisher = publisher
        self.sourceID = sourceID
        self.demand = OnDemandTopic(publisher: publisher, kind: .video, sourceID: sourceID, mode: mode)
        self.encoderOptions = encoder
        self.frameRate = frameRate
        self.logger = logger
    }

    package var encodingTiming: TimingCounters? { state.withLock { $0.encoding ? $0.timing : nil } }
    package var packetsPublished: Int { state.withLock { $0.packets } }

    /// Encodes and publishes one frame. On the encode output's queue.
    package func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        encoding.withLock { encode(frame, from: output, &$0) }
    }

    private func encode(_ frame: VideoFrame, from output: FrameDataOutput, _ encoding: inout Encoding) {
        if isLive, !encoding.reportedBacklog, output.maxBacklog >= Self.maximumBacklog - 1 {
            encoding.reportedBacklog = true
            logger.warning("the encoder is falling behind: capture waits for it", metadata: ["source": "\(sourceID)"])
        }
        let (publish, newSubscriber) = demand.wanted()
        guard publish, !encoding.failed else { return }
        do {
            if encoding.encoder == nil {
                encoding.encoder = try VideoEncoder(
                    width: frame.pixels.width, height: frame.pixels.height, timescale: frame.time.timescale,
                    frameRate: frameRate, pixelFormat: frame.pixels.format, options: encoderOptions)
                state.withLock { $0.encoding = true }
            }
            guard let encoder = encoding.encoder else { return }
            if newSubscriber { encoder.forceKeyFrame = true }
            let started = ContinuousClock.now
            let packets = try encoder.encode(frame)
            let elapsed = ContinuousClock.now - started
            state.withLock { $0.timing.record(milliseconds: elapsed.milliseconds) }
            for packet in packets {
                send(packet, wallTimeNs: frame.wallClockNanoseconds, width: encoder.width, height: encoder.height)
            }
        } catch {
            encoding.failed = true
            logger.error("video encoding stopped", metadata: ["error": "\(error)"])
        }
    }

    /// Publishes what the encoder still holds. On the encode output's queue, or after it drained.
    package func finish() {
        encoding.withLock { encoding in
            guard let encoder = encoding.encoder, !encoding.failed else { return }
            for packet in (try? encoder.flush()) ?? [] {
                send(packet, wallTimeNs: WallClock.nowNanoseconds(), width: encoder.width, height: encoder.height)
            }
        }
    }

    /// Publishes a packet the source demuxed. On the capture thread.
    package func publishCompressed(_ packet: VideoAccessUnit, width: Int, height: Int) {
        guard demand.wanted().publish else { return }
        send(packet, wallTimeNs: WallClock.nowNanoseconds(), width: width, height: height)
    }

    private func send(_ packet: VideoAccessUnit, wallTimeNs: UInt64, width: Int, height: Int) {
        publisher.publish(
            Message(
                kind: .video, source: sourceID, time: packet.presentationTime, wallTimeNs: wallTimeNs,
                video: packet.info(width: width, height: height)),
            payload: packet.annexB)
        state.withLock { $0.packets += 1 }
    }
}

/// Whether a kind of message is wanted now: always, never, or while someone subscribes to
/// its topic, noting each subscriber's arrival (an encoder starts it at a key frame). Any
/// thread.
final class OnDemandTopic: Sendable {
    private let publisher: Publisher
    private let topic: String
    private let mode: VideoMode
    private let subscribed = Atomic<Bool>(false)

    init(publisher: Publisher, kind: MessageKind, sourceID: String, mode: VideoMode) {
        self.publisher = publisher
        self.topic = Topic.make(kind: kind, source: sourceID)
        self.mode = mode
    }

    func wanted() -> (publish: Bool, newSubscriber: Bool) {
        switch mode {
        case .off: return (false, false)
        case .always: return (true, false)
        case .onDemand:
            let now = publisher.hasSubscriber(for: topic)
            let before = subscribed.exchange(now, ordering: .relaxed)
            return (now, now && !before)
        }
    }
}
