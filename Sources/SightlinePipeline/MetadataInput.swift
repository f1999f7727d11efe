import Foundation
import Logging
import SightlineBus
import SightlineCore
import Synchronization

/// Client metadata in, the `AVCaptureMetadataInput` analogue (`run --metadata-in`).
///
/// Binds an endpoint that other services' publishers connect to, takes the
/// `metadata/<source>/` groups they send, checks them, places each on the source's media
/// timeline (from its `time`, or else from its wall-clock time) and publishes it again as
/// the source's own `metadata` message, which the recorder writes as timed metadata.
/// Anything malformed, oversized or beyond `maximumRate` is counted by reason and dropped
/// with a rate-limited log line; the source keeps running.
///
/// The socket belongs to the input's own thread, from `start()` to `stop()`.
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
    }

    private let configuration: Configuration
    private let sourceID: String
    private let publisher: Publisher
    private let mediaTime: @Sendable (UInt64) -> MediaTime?
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
        mediaTime: @escaping @Sendable (UInt64) -> MediaTime?, logger: Logger
    ) throws {
        let subscriber = try Subscriber(
            binding: configuration.endpoint, topics: [Topic.make(kind: .metadata, source: sourceID)],
            allowRemote: configuration.allowRemote, curve: configuration.curve,
            maximumMessageBytes: configuration.maximumMessageBytes)
        self.configuration = configuration
        self.sourceID = sourceID
        self.publisher = publisher
        self.mediaTime = mediaTime
        subscriber.logRejections(to: logger)
        wakeUp = try WakeUp()
        receiving = Mutex(
            Receiving(
                subscriber: subscriber, log: RateLimitedLog(logger: logger), tokens: Double(configuration.maximumRate)))
    }

    /// Accepted and rejected groups so far. Any thread.
    var counters: InputCounters {
        state.withLock {
            InputCounters(accepted: $0.accepted, rejected: $0.rejected.merging($0.undecodable, uniquingKeysWith: +))
        }
    }

    func start() {
        Thread.start(named: "metadata-in") { [self] in
            receiving.withLock { receiving in
                while !wakeUp.isSignalled { receiveOne(&receiving) }
                receiving.subscriber.close()
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
            return reject("receiveFailed", "\(error)", &receiving.log)
        }
        // The subscriber counts what it cannot decode (version, JSON, size, topic).
        let undecodable = receiving.subscriber.rejected
        state.withLock { $0.undecodable = undecodable }
        guard let received else { return }
        let message = received.message
        guard receiving.takeToken(rate: configuration.maximumRate) else {
            return reject("flood", "more than \(configuration.maximumRate) groups/s", &receiving.log)
        }
        guard let group = message.metadata else {
            return reject("malformed", "a metadata message without a group", &receiving.log)
        }
        do {
            _ = try group.validated()
        } catch {
            return reject(error.reason, error.description, &receiving.log)
        }
        let wallTime = message.wallTimeNs == 0 ? WallClock.nowNanoseconds() : message.wallTimeNs
        guard let time = message.time ?? mediaTime(wallTime) else {
            return reject("noTime", "no media time: no frame yet, or its wall-clock time is a day off", &receiving.log)
        }
        state.withLock { $0.accepted += 1 }
        publisher.publish(
            Message(kind: .metadata, source: sourceID, time: time, wallTimeNs: wallTime, metadata: group))
    }

    private func reject(_ reason: String, _ detail: String, _ log: inout RateLimitedLog) {
        state.withLock { $0.rejected[reason, default: 0] += 1 }
        log.warning(
            "client metadata rejected: \(detail); dropped", reason: reason,
            metadata: ["source": "\(sourceID)", "reason": "\(reason)"])
    }
}
