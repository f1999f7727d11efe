import CMosquitto
import Foundation
import Logging
import NIOCore
import SightlineCore
import Synchronization

/// One connection to an MQTT broker through libmosquitto, kept up on libmosquitto's own
/// network thread (`mosquitto_loop_start`), which reconnects with back-off (1 s doubling to
/// 30 s) for as long as the connection is open.
///
/// `publish` never waits for the broker. While connected, a message goes to libmosquitto,
/// which sends it and, at QoS 1 or 2, sends it again after a reconnect until the broker has
/// it. While not, an event waits in a queue of `queueLimit` (the oldest dropped and counted
/// beyond), and retained state keeps only its newest value per topic; on (re)connecting,
/// the network thread sends the retained state, then the queue, in order. The broker
/// publishes `<prefix>/available` = `offline` for a process that dies (its last will).
///
/// It subscribes to `subscriptions` on every connection and keeps the retained messages the
/// broker has there (what earlier runs left: Home Assistant's discovery) for `takeRetained`.
///
/// `publish`, `takeRetained`, `counters` and `close` are called from any thread;
/// libmosquitto's callbacks run on its network thread.
package final class MQTTConnection: Sendable {
    /// What the connection did, for status, metrics and health.
    package struct Counters: Sendable, Equatable {
        package var connected = false
        /// Messages handed to the broker's connection (sent, or being sent).
        package var sent = 0
        /// Events waiting for the broker now.
        package var queued = 0
        /// Events dropped because the queue was full.
        package var dropped = 0
        /// Connections made after the first.
        package var reconnects = 0
        /// Why the broker cannot be reached or refused the connection, while it cannot.
        package var lastError: String?
    }

    /// One message to publish.
    package struct Publication: Sendable, Equatable {
        package var topic: String
        package var payload: [UInt8]
        /// Retained state (counts, people, availability) rather than an event.
        package var retain: Bool

        package init(topic: String, payload: [UInt8], retain: Bool) {
            self.topic = topic
            self.payload = payload
            self.retain = retain
        }

        package init(topic: String, json: String, retain: Bool) {
            self.init(topic: topic, payload: Array(json.utf8), retain: retain)
        }
    }

    private struct State {
        var counters = Counters()
        var connections = 0
        /// Events waiting while not connected, oldest first.
        var queue = CircularBuffer<Publication>()
        /// The newest value of each retained topic, sent again on every connection (a broker
        /// restarted without persistence has lost them).
        var retained: [String: Publication] = [:]
        var retainedOrder: [String] = []
        var lastErrorLoggedAt: ContinuousClock.Instant?
        /// Retained messages received on `subscriptions`, oldest first, at most `retainedLimit`.
        var received: [Publication] = []
    }

    /// Retained messages kept for `takeRetained` at most, and their largest payload: a broker
    /// cannot grow them for ever.
    static let retainedLimit = 10_000
    static let retainedPayloadLimit: Int32 = 65_536

    private let handle: Handle
    private let state = Mutex(State())
    private let qos: Int32
    private let queueLimit: Int
    private let availability: String
    private let subscriptions: [String]
    private let logger: Logger

    /// The libmosquitto client, destroyed with the connection.
    private final class Handle: @unchecked Sendable {
        // @unchecked: libmosquitto's client is thread-safe once its loop thread runs
        // (`mosquitto_threaded_set`); this class only owns the pointer.
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { mosquitto_destroy(pointer) }
    }

    /// Opens the connection (it goes on trying in the background while the broker is
    /// unreachable). Throws, with one line, for what no retry can mend: a bad TLS file, an
    /// invalid option.
    package init(configuration: MQTTConfiguration, subscriptions: [String] = [], logger: Logger)
        throws(SightlineError)
    {
        let broker = try configuration.validated()
        mosquitto_lib_init()
        let clientID = configuration.clientID ?? "sightline-\(ProcessInfo.processInfo.processIdentifier)"
        guard let pointer = mosquitto_new(clientID, true, nil) else {
            throw .messaging("MQTT: could not make a client (out of memory)")
        }
        handle = Handle(pointer)
        qos = configuration.qos
        queueLimit = configuration.queueLimit
        availability = "\(configuration.prefix)/available"
        self.subscriptions = subscriptions
        self.logger = logger
        try check(mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311)), "protocol")
        if let username = configuration.username {
            try check(mosquitto_username_pw_set(pointer, username, try configuration.password()), "username")
        }
        if broker.tls {
            try check(
                mosquitto_tls_set(
                    pointer, configuration.caFile ?? "/etc/ssl/certs/ca-certificates.crt", nil,
                    configuration.certificateFile, configuration.keyFile, nil), "TLS")
        }
        let offline = Array("offline".utf8)
        try check(mosquitto_will_set(pointer, availability, Int32(offline.count), offline, 1, true), "last will")
        try check(mosquitto_reconnect_delay_set(pointer, 1, 30, true), "reconnect delay")
        setCallbacks(pointer)
        // Online as soon as the broker has us; the will says offline when we die.
        state.withLock { state in
            remember(Publication(topic: availability, json: "online", retain: true), &state)
        }
        let code = mosquitto_connect_async(pointer, broker.host, broker.port, 30)
        if code != MOSQ_ERR_SUCCESS.rawValue {
            // Refused, unresolvable or a failed TLS handshake now: the network thread keeps
            // trying. What libmosquitto logged of it (OpenSSL's reason) says more.
            let logged = state.withLock { $0.counters.lastError }
            noteError(
                "cannot reach \(broker.host):\(broker.port): \(Self.describe(code))" + (logged.map { " (\($0))" } ?? "")
            )
        }
        try check(mosquitto_loop_start(pointer), "network thread")
    }

    /// libmosquitto calls these on its network thread, with this connection as its context.
    private func setCallbacks(_ pointer: OpaquePointer) {
        mosquitto_user_data_set(pointer, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(pointer) { _, context, code in
            guard let context else { return }
            Unmanaged<MQTTConnection>.fromOpaque(context).takeUnretainedValue().connected(code: code)
        }
        mosquitto_disconnect_callback_set(pointer) { _, context, code in
            guard let context else { return }
            Unmanaged<MQTTConnection>.fromOpaque(context).takeUnretainedValue().disconnected(code: code)
        }
        mosquitto_message_callback_set(pointer) { _, context, message in
            // A discovery config is a few hundred bytes: anything far bigger is not one of ours.
            guard let context, let message, message.pointee.retain, let topic = message.pointee.topic,
                message.pointee.payloadlen <= MQTTConnection.retainedPayloadLimit
            else { return }
            let payload = Array(
                UnsafeRawBufferPointer(
                    start: message.pointee.payload, count: Int(max(0, message.pointee.payloadlen))))
            Unmanaged<MQTTConnection>.fromOpaque(context).takeUnretainedValue().received(
                Publication(topic: String(cString: topic), payload: payload, retain: true))
        }
        // What libmosquitto says of a failure no callback reports (a certificate that does
        // not verify, a TLS handshake the broker ends).
        mosquitto_log_callback_set(pointer) { _, context, level, text in
            guard let context, let text, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
            Unmanaged<MQTTConnection>.fromOpaque(context).takeUnretainedValue().noteError(String(cString: text))
        }
    }

    private func check(_ code: Int32, _ what: String) throws(SightlineError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            throw .invalidArgument("MQTT \(what): \(Self.describe(code))")
        }
    }

    private static func describe(_ code: Int32) -> String {
        if code == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(code))
    }

    /// A connection whose output never ran (another service failed first): its network
    /// thread ends before the callbacks' context goes.
    deinit {
        mosquitto_disconnect(handle.pointer)
        mosquitto_loop_stop(handle.pointer, false)
    }

    package var counters: Counters { state.withLock { $0.counters } }

    /// The retained messages received on `subscriptions` since the last call. Any thread.
    package func takeRetained() -> [Publication] {
        state.withLock { state in
            defer { state.received.removeAll() }
            return state.received
        }
    }

    /// Publishes `publication`, or keeps it until the broker is back. Any thread.
    package func publish(_ publication: Publication) {
        state.withLock { state in
            if publication.retain { remember(publication, &state) }
            if state.counters.connected {
                send(publication, &state)
            } else if !publication.retain {
                enqueue(publication, &state)
            }
        }
    }

    /// Says `offline` (retained) and disconnects. libmosquitto writes its packets in the order
    /// they were queued, so what was published before, `offline` last, goes out ahead of the
    /// disconnection; `mosquitto_loop_stop` then waits for its thread. Any thread, once.
    package func close() {
        publish(Publication(topic: availability, json: "offline", retain: true))
        mosquitto_disconnect(handle.pointer)
        mosquitto_loop_stop(handle.pointer, false)
        mosquitto_user_data_set(handle.pointer, nil)
    }

    // MARK: On the network thread

    private func connected(code: Int32) {
        guard code == 0 else {
            noteError("the broker refused the connection: \(String(cString: mosquitto_connack_string(code)))")
            return
        }
        state.withLock { state in
            state.connections += 1
            state.counters.reconnects = max(0, state.connections - 1)
            state.counters.connected = true
            state.counters.lastError = nil
            for topic in state.retainedOrder { if let p = state.retained[topic] { send(p, &state) } }
            let waiting = state.queue
            state.queue.removeAll(keepingCapacity: true)
            state.counters.queued = 0
            for publication in waiting { send(publication, &state) }
            // After our own retained state: what the broker then has of ours beside it is
            // what earlier runs left.
            for pattern in subscriptions { _ = mosquitto_subscribe(handle.pointer, nil, pattern, 1) }
        }
        logger.info("MQTT connected")
    }

    private func received(_ publication: Publication) {
        state.withLock { state in
            if state.received.count < Self.retainedLimit { state.received.append(publication) }
        }
    }

    private func disconnected(code: Int32) {
        let wasConnected = state.withLock { state in
            defer { state.counters.connected = false }
            return state.counters.connected
        }
        // 0: we asked for it (close).
        if code != 0, wasConnected { noteError("lost the broker: \(Self.describe(code))") }
    }

    // MARK: Under the lock

    private func send(_ publication: Publication, _ state: inout State) {
        let code = publication.payload.withUnsafeBytes { bytes in
            mosquitto_publish(
                handle.pointer, nil, publication.topic, Int32(bytes.count), bytes.baseAddress,
                publication.retain ? 1 : qos, publication.retain)
        }
        if code == MOSQ_ERR_SUCCESS.rawValue {
            state.counters.sent += 1
        } else if code == MOSQ_ERR_NO_CONN.rawValue || code == MOSQ_ERR_CONN_LOST.rawValue {
            // The connection went between the callback and now: wait for the next one.
            state.counters.connected = false
            if !publication.retain { enqueue(publication, &state) }
        } else {
            state.counters.dropped += 1
        }
    }

    private func enqueue(_ publication: Publication, _ state: inout State) {
        if state.queue.count >= queueLimit {
            state.queue.removeFirst()
            state.counters.dropped += 1
        }
        state.queue.append(publication)
        state.counters.queued = state.queue.count
    }

    private func remember(_ publication: Publication, _ state: inout State) {
        if state.retained.updateValue(publication, forKey: publication.topic) == nil {
            state.retainedOrder.append(publication.topic)
        }
    }

    /// Keeps the error for health and logs it, at most once every 10 s.
    private func noteError(_ error: String) {
        let log = state.withLock { state in
            state.counters.lastError = error
            if let at = state.lastErrorLoggedAt, ContinuousClock.now - at < .seconds(10) { return false }
            state.lastErrorLoggedAt = .now
            return true
        }
        if log { logger.warning("MQTT: \(error); events wait in a queue and the broker is tried again") }
    }
}
