import Foundation
import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import Synchronization

/// Client metadata and other detectors' objects in, the `AVCaptureMetadataInput` analogue
/// (`run --metadata-in`).
///
/// Binds an endpoint that other services' publishers connect to, takes the
/// `metadata/<source>/` and `objects/<source>/` groups they send, checks them and places
/// each on the source's media timeline (from its `time`, or else from its wall-clock time).
/// A metadata group is published again as the source's own `metadata` message, which the
/// recorder writes as timed metadata; objects go to `DetectorInputs`, which tracks them.
/// Anything malformed, oversized or beyond `maximumRate` (both kinds together) is counted by
/// reason and dropped with a rate-limited log line; the source keeps running.
///
/// The socket belongs to the input's own thread, from `start()` to `stop()`, which also
/// lets go of detectors' objects that are held too long.
final class MetadataInput: Sendable {
    struct Configuration: Sendable {
        var endpoint: Endpoint
        var allowRemote = false
        var curve: CurveServer?
        /// Groups per second accepted from all clients together, beyond which they are
        /// dropped as `flood`.
        var maximumRate = 200
        /// Larger messages are dropped as oversized.
        var maximumMessageBytes = 256 << 10
        var detectors = DetectorInputs.Configuration()
    }

    private let configuration: Configuration
    private let sourceID: String
    private let publisher: Publisher
    private let clock: any MediaClock
    private let detectors: DetectorInputs
    /// The socket, the log and the rate limit: made by `init`, then the input thread's,
    /// which holds the lock until it stops (a lock nobody else takes, so that the compiler
    /// checks who uses them).
    private let receiving: Mutex<Receiving>
    private let state = Mutex((accepted: 0, rejected: [String: Int](), undecodable: [String: Int]()))
    /// Signalled by `stop()`: ends the thread's receive at once, and its loop.
    private let wakeUp: WakeUp
    private let finished = DispatchSemaphore(value: 0)

    private struct Receiving {
        let subscriber: Subscriber
        var log: RateLimitedLog
        /// A token bucket: `maximumRate` groups a second on average, as many in a burst.
        var tokens: Double
        var lastRefill = ContinuousClock.now

        mutating func takeToken(rate: Int) -> Bool {
            let now = ContinuousClock.now
            tokens = min(Double(rate), tokens + (now - lastRefill).seconds * Double(rate))
            lastRefill = now
            guard tokens >= 1 else { return false }
            tokens -= 1
            return true
        }
    }

    /// Binds at once, so a bad or busy endpoint fails before the run starts.
    init(
        configuration: Configuration, sourceID: String, publisher: Publisher,
        clock: any MediaClock, recentFrames: RecentFrames? = nil, logger: Logger
    ) throws {
        let subscriber = try Subscriber(
            binding: configuration.endpoint,
            topics: [Topic.make(kind: .metadata, source: sourceID), Topic.make(kind: .objects, source: sourceID)],
            allowRemote: configuration.allowRemote, curve: configuration.curve,
            maximumMessageBytes: configuration.maximumMessageBytes)
        self.configuration = configuration
        self.sourceID = sourceID
        self.publisher = publisher
        self.clock = clock
        detectors = DetectorInputs(
            configuration: configuration.detectors, sourceID: sourceID, publisher: publisher,
            recentFrames: recentFrames, logger: logger)
        subscriber.logRejections(to: logger)
        wakeUp = try WakeUp()
        receiving = Mutex(
            Receiving(
                subscriber: subscriber, log: RateLimitedLog(logger: logger), tokens: Double(configuration.maximumRate)))
    }

    /// Accepted and rejected metadata groups so far, and objects groups that cannot be
    /// counted as a detector's. Any thread.
    var counters: InputCounters {
        state.withLock {
            InputCounters(accepted: $0.accepted, rejected: $0.rejected.merging($0.undecodable, uniquingKeysWith: +))
        }
    }

    /// What each detector in another process sent so far. Any thread.
    var detectorCounters: [String: DetectorCounters]? { detectors.counters }

    func start() {
        Thread.start(named: "metadata-in") { [self] in
            receiving.withLock { receiving in
                while !wakeUp.isSignalled {
                    receiveOne(&receiving)
                    if let newest = clock.newestFrameTime { detectors.expire(newest: newest) }
                }
                receiving.subscriber.close()
                detectors.finish(newest: clock.newestFrameTime)
            }
            finished.signal()
        }
    }

    /// Stops taking groups in and closes the socket; returns when it is closed.
    func stop() {
        wakeUp.signal()
        finished.wait()
    }

    private func receiveOne(_ receiving: inout Receiving) {
        let received: ReceivedMessage?
        do {
            // Rejected messages do not end a receive: 250 ms keeps their counts current.
            received = try receiving.subscriber.receive(timeout: .milliseconds(250), wakingOn: wakeUp)
        } catch {
            return reject("receiveFailed", "\(error)", nil, &receiving.log)
        }
        // The subscriber counts what it cannot decode (version, JSON, size, topic).
        let undecodable = receiving.subscriber.rejected
        state.withLock { $0.undecodable = undecodable }
        guard let received else { return }
        let message = received.message
        // Objects are counted as their detector's where they can be.
        let detector = message.kind == .objects ? message.objects?.detector : nil
        guard receiving.takeToken(rate: configuration.maximumRate) else {
            return reject("flood", "more than \(configuration.maximumRate) groups/s", detector, &receiving.log)
        }
        let wallTime = message.wallTimeNs == 0 ? WallClock.nowNanoseconds() : message.wallTimeNs
        let time = message.time ?? clock.mediaTime(atWallTimeNs: wallTime)
        switch (message.metadata, message.objects) {
        case (let group?, nil) where message.kind == .metadata:
            do {
                _ = try group.validated()
            } catch {
                return reject(error.reason, error.description, nil, &receiving.log)
            }
            guard let time else { return reject("noTime", Self.noTime, nil, &receiving.log) }
            state.withLock { $0.accepted += 1 }
            publisher.publish(
                Message(kind: .metadata, source: sourceID, time: time, wallTimeNs: wallTime, metadata: group))
        case (nil, let group?) where message.kind == .objects:
            do {
                try group.validated()
            } catch {
                return reject(error.reason, error.description, detector, &receiving.log)
            }
            guard let time, let newest = clock.newestFrameTime else {
                return reject("noTime", Self.noTime, detector, &receiving.log)
            }
            guard (time - newest).seconds.magnitude <= 86_400 else {
                return reject(
                    "noTime", "\(time.seconds) s is a day off the newest frame's \(newest.seconds) s", detector,
                    &receiving.log)
            }
            switch detectors.take(group, time: time, wallTimeNs: wallTime) {
            case .taken: break
            case .late:
                reject("late", "not after its last group, or after its objects were let go", detector, &receiving.log)
            case .tooManyDetectors:
                reject(
                    "tooManyDetectors", "more than \(configuration.detectors.maximumDetectors) detectors", nil,
                    &receiving.log)
            }
        default:
            reject("malformed", "a \(message.kind.rawValue) message without its group", detector, &receiving.log)
        }
    }

    private static let noTime = "no media time: no frame yet, or a day off the source's newest frame"

    /// Counts a dropped group by reason, as its detector's when it is one that can be told
    /// apart, and logs it at most once every 10 s per reason.
    private func reject(_ reason: String, _ detail: String, _ detector: String?, _ log: inout RateLimitedLog) {
        if detector.map({ detectors.countRejected(reason, detector: $0) }) != true {
            state.withLock { $0.rejected[reason, default: 0] += 1 }
        }
        let what = detector.map { "objects from \($0.prefix(64))" } ?? "client metadata"
        log.warning(
            "\(what) rejected: \(detail); dropped", reason: reason,
            metadata: ["source": "\(sourceID)", "reason": "\(reason)"])
    }
}

/// Where a source's media timeline stands, which is what places a client's group on it.
protocol MediaClock: Sendable {
    /// The media time of a wall-clock time, by the newest frame's; nil before the first
    /// frame or a day off it.
    func mediaTime(atWallTimeNs: UInt64) -> MediaTime?
    /// The newest frame's time; nil before the first.
    var newestFrameTime: MediaTime? { get }
}

extension CaptureSession: MediaClock {}
