import CZMQ
import Dispatch
import Foundation
import Logging
import SightlineCore
import Synchronization

/// Publishes messages on a ZeroMQ socket it binds.
///
/// The socket belongs to the publisher's serial queue; `publish` may be called from any
/// thread and never blocks on subscribers (ZeroMQ drops for a subscriber past its
/// high-water mark). It is an XPUB socket, so the publisher can see subscriptions arrive
/// and `waitForSubscriber` lets a run hold its first message until someone listens.
public final class Publisher: Sendable {
    public let endpoint: Endpoint
    private let queue = DispatchQueue(label: "sightline.publisher")
    /// Only ever touched on `queue` (the lock is never contended; it lets the compiler
    /// check that the socket is used under it).
    private let socket: Mutex<Socket>
    private let state = Mutex(State())
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private let logger: Logger

    private struct State {
        var sequence: [String: UInt64] = [:]
        var messages = 0
        var bytes = 0
        var subscriptions = 0
        /// Prefixes subscribed by at least one subscriber (XPUB passes each once).
        var prefixes: Set<[UInt8]> = []
        var latencies: [Double] = []
        var recordLatency = false
    }

    /// Binds `endpoint`. Binding a tcp address reachable from other machines is refused
    /// unless `allowRemote` is set: nothing listens on the network by default.
    /// `alsoBind`: more endpoints on the same socket, for example an inproc one for an
    /// in-process recorder. With `connectsToBroker`, `endpoint` is a broker's frontend to
    /// connect to rather than an address to bind, and `brokerCurve` the key this source
    /// proves itself with to a CURVE broker. With `curve`, only subscribers holding an
    /// allowed key get anything, and traffic is encrypted; that is what makes a non-loopback
    /// bind safe.
    public init(
        endpoint: Endpoint, alsoBind: [Endpoint] = [], allowRemote: Bool = false, curve: CurveServer? = nil,
        connectsToBroker: Bool = false, brokerCurve: CurveClient? = nil, logger: Logger
    ) throws {
        if !connectsToBroker { try endpoint.checkBindIsSafe(allowRemote: allowRemote, curve: curve) }
        let socket = try Socket(type: ZMQ_XPUB)
        socket.setOption(ZMQ_SNDHWM, 10_000)
        if let curve { socket.makeCurveServer(curve) }
        if let brokerCurve { socket.makeCurveClient(brokerCurve) }
        if connectsToBroker {
            try socket.connect(endpoint)
        } else {
            try socket.bind(endpoint)
        }
        for extra in alsoBind { try socket.bind(extra) }
        self.socket = Mutex(socket)
        self.endpoint = endpoint
        self.logger = logger
    }

    /// Stamps `message` with the next sequence number for its topic and sends it, with an
    /// optional binary payload as a third frame. Returns at once.
    public func publish(_ message: Message, payload: [UInt8]? = nil) {
        queue.async { [self] in
            var message = message
            let topic = Topic.make(kind: message.kind, source: message.source)
            message.seq = state.withLock { state in
                defer { state.sequence[topic, default: 0] += 1 }
                return state.sequence[topic, default: 0]
            }
            do {
                let body = try encoder.encode(message)
                var frames = [Array(topic.utf8), Array(body)]
                if let payload { frames.append(payload) }
                _ = try socket.withLock { try $0.send(frames) }
                let sentAt = WallClock.nowNanoseconds()
                state.withLock { state in
                    state.messages += 1
                    state.bytes += frames.reduce(0) { $0 + $1.count }
                    if state.recordLatency && message.kind == .faces {
                        state.latencies.append(Double(sentAt &- message.wallTimeNs) / 1e6)
                    }
                }
            } catch {
                logger.error("could not publish", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
            readSubscriptions()
        }
    }

    /// Waits until at least one subscription has arrived, or `timeout` passes. Returns
    /// whether one did. ZeroMQ delivers only to subscribers already connected, so a run
    /// that must not lose its first messages waits here first. A cancelled task stops
    /// waiting (false).
    public func waitForSubscriber(timeout: Duration) async -> Bool {
        await waitForSubscriptions(timeout: timeout) { $0.subscriptions > 0 }
    }

    /// Waits until a subscription to exactly `prefix` has arrived, or `timeout` passes:
    /// through a broker, or with several subscribers, the first subscription to arrive may
    /// not be the one a caller needs.
    public func waitForSubscription(to prefix: String, timeout: Duration) async -> Bool {
        let bytes = Array(prefix.utf8)
        return await waitForSubscriptions(timeout: timeout) { $0.prefixes.contains(bytes) }
    }

    /// Ends early, with false, when the task is cancelled.
    private func waitForSubscriptions(timeout: Duration, until arrived: @escaping @Sendable (State) -> Bool) async
        -> Bool
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Whether time is up is decided before reading, so the last read always happens
            // after the deadline: on a busy machine this task can resume long after a read.
            let expired = ContinuousClock.now >= deadline
            let done = await withCheckedContinuation { continuation in
                queue.async { [self] in
                    readSubscriptions(waitMs: 20)
                    continuation.resume(returning: state.withLock { arrived($0) })
                }
            }
            if done { return true }
            if expired || Task.isCancelled { return false }
        }
    }

    /// Whether some subscriber currently receives `topic`: lets a producer skip work (such as
    /// encoding video) nobody asked for. Subscriptions are read as messages are published.
    public func hasSubscriber(for topic: String) -> Bool {
        let bytes = Array(topic.utf8)
        return state.withLock { state in state.prefixes.contains { bytes.starts(with: $0) } }
    }

    /// Messages and bytes sent so far.
    public var totals: (messages: Int, bytes: Int) { state.withLock { ($0.messages, $0.bytes) } }

    /// Starts recording capture-to-publish latency of `faces` messages (for benchmarks).
    public func recordLatencies() { state.withLock { $0.recordLatency = true } }
    public var latenciesMs: [Double] { state.withLock { $0.latencies } }

    /// Sends what is queued, closes the socket and lets ZeroMQ deliver what it still holds
    /// before the process exits (`Bus.finish`). Nothing is published after this.
    public func close() async {
        await withCheckedContinuation { continuation in
            queue.async { [self] in
                socket.withLock { $0.close() }
                continuation.resume()
            }
        }
    }

    /// Waits for every message handed to `publish` so far to be sent.
    public func flush() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }

    /// On the queue: consumes subscription frames so they do not pile up.
    private func readSubscriptions(waitMs: Int32 = 0) {
        while let frames = try? socket.withLock({ try $0.receive(timeoutMs: waitMs) }), let frame = frames.first,
            let first = frame.first
        {
            state.withLock { state in
                state.subscriptions += first == 1 ? 1 : -1
                if first == 1 {
                    state.prefixes.insert(Array(frame.dropFirst()))
                } else {
                    state.prefixes.remove(Array(frame.dropFirst()))
                }
            }
        }
    }
}
