import CZMQ
import Foundation
import Logging
import SightlineCore

/// A message as received: its topic, the decoded message, and any binary payload.
public struct ReceivedMessage: Sendable {
    public let topic: String
    public let message: Message
    /// The JSON exactly as it arrived, for printing it unchanged.
    public let json: [UInt8]
    public let payload: [UInt8]?

    public init(topic: String, message: Message, json: [UInt8], payload: [UInt8]?) {
        self.topic = topic
        self.message = message
        self.json = json
        self.payload = payload
    }
}

/// Why an incoming message was refused. `reason` is the short, bounded name counters use;
/// `description` is the log line.
public struct MessageDecodingError: Error, Hashable, CustomStringConvertible {
    /// A struct over a private enum (as swift-service-lifecycle's `ServiceRunnerError`), so
    /// that reasons can be added without breaking a caller's exhaustive switch.
    private enum Code: Hashable {
        case oversized
        case wrongFrameCount(Int)
        case unknownTopic
        case notJSON
        case unsupportedVersion(Int)
        case badFields(MessageKind)
        case topicMismatch
        case outOfRange(String)
    }

    private let code: Code

    /// Larger than the subscriber's size limit (or no frame at all).
    public static let oversized = Self(code: .oversized)
    /// Not 2 or 3 frames.
    public static func wrongFrameCount(_ count: Int) -> Self { Self(code: .wrongFrameCount(count)) }
    /// A topic that is not `<kind>/<source>/`.
    public static let unknownTopic = Self(code: .unknownTopic)
    /// Not a JSON message with a version.
    public static let notJSON = Self(code: .notJSON)
    /// A protocol version this build does not speak.
    public static func unsupportedVersion(_ version: Int) -> Self { Self(code: .unsupportedVersion(version)) }
    /// The JSON does not have the fields its kind needs.
    public static func badFields(_ kind: MessageKind) -> Self { Self(code: .badFields(kind)) }
    /// The topic and the message disagree on kind or source.
    public static let topicMismatch = Self(code: .topicMismatch)
    /// A field's value is outside what docs/protocol.md allows (the field's path).
    public static func outOfRange(_ field: String) -> Self { Self(code: .outOfRange(field)) }

    /// One word for counters and metrics labels (`outOfRange`).
    public var reason: String {
        switch code {
        case .oversized: "oversized"
        case .wrongFrameCount: "wrongFrameCount"
        case .unknownTopic: "unknownTopic"
        case .notJSON: "notJSON"
        case .unsupportedVersion: "unsupportedVersion"
        case .badFields: "badFields"
        case .topicMismatch: "topicMismatch"
        case .outOfRange: "outOfRange"
        }
    }

    public var description: String {
        switch code {
        case .oversized: "malformed message: larger than the size limit"
        case .wrongFrameCount(let count): "malformed message: expected 2 or 3 frames, got \(count)"
        case .unknownTopic: "malformed message: unknown topic"
        case .notJSON: "malformed message: not a JSON message with a version"
        case .unsupportedVersion(let version):
            "unsupported protocol version \(version) (this build speaks \(Message.protocolVersion))"
        case .badFields(let kind): "malformed message: bad \(kind.rawValue) message"
        case .topicMismatch: "malformed message: topic and message disagree"
        case .outOfRange(let field): "malformed message: \(field) is out of range"
        }
    }
}

/// Subscribes to topics on one or more endpoints. Not thread-safe: use it from one thread.
public final class Subscriber {
    private let socket: Socket
    private let decoder = JSONDecoder()
    private var maximumMessageBytes = 64 << 20
    private var rejectionLog: RateLimitedLog?
    /// Messages that arrived but could not be decoded, by `MessageDecodingError.reason`.
    public private(set) var rejected: [String: Int] = [:]

    /// With `curve`, the subscriber proves its key to a CURVE publisher and checks the
    /// publisher's.
    public init(endpoints: [Endpoint], topics: [String], curve: CurveClient? = nil) throws {
        socket = try Socket(type: ZMQ_SUB)
        socket.setOption(ZMQ_RCVHWM, 10_000)
        if let curve { socket.makeCurveClient(curve) }
        for topic in topics { socket.setOption(ZMQ_SUBSCRIBE, bytes: Array(topic.utf8)) }
        for endpoint in endpoints { try socket.connect(endpoint) }
    }

    /// A subscriber that binds `endpoint` for publishers to connect to: how a source takes
    /// messages in from other services (`run --metadata-in`). Messages over
    /// `maximumMessageBytes` are counted and dropped; a peer sending one over 16 times that
    /// is disconnected by ZeroMQ before it is read. Binding beyond loopback needs `curve`
    /// or `allowRemote`, as for a publisher.
    public init(
        binding endpoint: Endpoint, topics: [String], allowRemote: Bool = false, curve: CurveServer? = nil,
        maximumMessageBytes: Int
    ) throws {
        try endpoint.checkBindIsSafe(allowRemote: allowRemote, curve: curve)
        socket = try Socket(type: ZMQ_SUB)
        socket.setOption(ZMQ_RCVHWM, 10_000)
        socket.setOption(ZMQ_MAXMSGSIZE, int64: Int64(maximumMessageBytes) * 16)
        if let curve { socket.makeCurveServer(curve) }
        for topic in topics { socket.setOption(ZMQ_SUBSCRIBE, bytes: Array(topic.utf8)) }
        try socket.bind(endpoint)
        self.maximumMessageBytes = maximumMessageBytes
    }

    /// Logs rejected messages to `logger`, at most one line per reason every 10 s.
    public func logRejections(to logger: Logger) { rejectionLog = RateLimitedLog(logger: logger) }

    /// Disconnects; `receive` returns nothing afterwards.
    public func close() { socket.close() }

    /// Adds a subscription while connected (the console's video, while someone watches it).
    package func subscribe(_ topic: String) { socket.setOption(ZMQ_SUBSCRIBE, bytes: Array(topic.utf8)) }

    package func unsubscribe(_ topic: String) { socket.setOption(ZMQ_UNSUBSCRIBE, bytes: Array(topic.utf8)) }

    /// The subscriptions for the given kinds, optionally narrowed to one source.
    public static func topics(kinds: [MessageKind], source: String?) -> [String] {
        kinds.map { Topic.prefix(kind: $0, source: source) }
    }

    /// Waits up to `timeout` for the next well-formed message. Malformed ones are counted
    /// in `rejected` and skipped.
    public func receive(timeout: Duration) throws -> ReceivedMessage? {
        try receive(timeout: timeout, wakingOn: nil)
    }

    /// As `receive(timeout:)`, and nil as soon as `wakeUp` is signalled (a loop told to
    /// stop), so that a loop waits for a message or its stop, without checking a flag at
    /// intervals.
    package func receive(timeout: Duration, wakingOn wakeUp: WakeUp?) throws -> ReceivedMessage? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            let milliseconds = Int32(min(max(0, remaining.milliseconds), Double(Int32.max)))
            guard
                let frames = try socket.receive(
                    timeoutMs: milliseconds, maximumBytes: maximumMessageBytes, wakeUp: wakeUp)
            else {
                return nil
            }
            switch Self.decode(frames, using: decoder) {
            case .success(let message): return message
            case .failure(let error):
                rejected[error.reason, default: 0] += 1
                rejectionLog?.warning("a message was rejected: \(error); dropped", reason: error.reason)
                if milliseconds == 0 { return nil }
            }
        }
    }

    /// Decodes `[topic][json][payload?]`, checking the topic agrees with the message.
    public static func decode(_ frames: [[UInt8]], using decoder: JSONDecoder = JSONDecoder())
        -> Result<ReceivedMessage, MessageDecodingError>
    {
        guard !frames.isEmpty else { return .failure(.oversized) }
        guard frames.count == 2 || frames.count == 3 else {
            return .failure(.wrongFrameCount(frames.count))
        }
        guard let topic = String(validating: frames[0], as: UTF8.self), let parsed = Topic.parse(topic) else {
            return .failure(.unknownTopic)
        }
        struct Version: Decodable { let v: Int }
        guard let version = try? decoder.decode(Version.self, from: Data(frames[1])) else {
            return .failure(.notJSON)
        }
        guard version.v == Message.protocolVersion else { return .failure(.unsupportedVersion(version.v)) }
        let message: Message
        do {
            message = try decoder.decode(Message.self, from: Data(frames[1]))
        } catch {
            return .failure(.badFields(parsed.kind))
        }
        guard message.kind == parsed.kind, message.source == parsed.source else {
            return .failure(.topicMismatch)
        }
        if let field = MessageLimits.violation(in: message) { return .failure(.outOfRange(field)) }
        return .success(
            ReceivedMessage(
                topic: topic, message: message, json: frames[1], payload: frames.count == 3 ? frames[2] : nil))
    }
}
