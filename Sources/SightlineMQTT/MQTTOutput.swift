import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore
import SightlineRecorder
import Synchronization

/// The MQTT output of a process (`run --mqtt`, `serve`'s `mqtt:`), as a swift-service-lifecycle
/// service: it subscribes to the sources of this process on the bus, turns their events and
/// statuses into MQTT topics (`MQTTTopics`) and publishes them through one `MQTTConnection`.
///
/// The sources never wait for it: it is one more subscriber of the bus, and the connection
/// never blocks. Its thread (`mqtt`) receives and maps; libmosquitto's network thread
/// sends (docs/threading.md).
package final class MQTTOutput: Service, Sendable {
    private let connection: MQTTConnection
    /// The subscriber and the topics' state: made by `init`, then used only by `run()`'s
    /// thread, which holds the lock for as long as it runs.
    private let owned: Mutex<Owned>
    private struct Owned {
        let subscriber: Subscriber
        var topics: MQTTTopics
    }
    private let logger: Logger

    /// Connects (in the background) and subscribes to every source at `endpoints`.
    /// `enrolled`: the names in the sources' galleries; nil: no source has one.
    package init(configuration: MQTTConfiguration, endpoints: [Endpoint], enrolled: [String]?, logger: Logger) throws {
        let subscriber = try Subscriber(
            endpoints: endpoints, topics: Subscriber.topics(kinds: [.events, .status, .snapshots], source: nil))
        subscriber.logRejections(to: logger)
        var topics = MQTTTopics(
            prefix: configuration.prefix, unknownName: configuration.unknownName,
            discoveryPrefix: configuration.discoveryPrefix, enrolled: enrolled)
        // Last: nothing after it can fail, so a connection is never left without its owner.
        connection = try MQTTConnection(
            configuration: configuration, subscriptions: topics.retainedSubscriptions, logger: logger)
        for publication in topics.atStart() { connection.publish(publication) }
        owned = Mutex(Owned(subscriber: subscriber, topics: topics))
        self.logger = logger
    }

    /// What the connection did. Any thread.
    package var counters: MQTTConnection.Counters { connection.counters }

    package func run() async throws {
        try await BlockingLoop.run(name: "mqtt") { [self] stop in
            owned.withLock { owned in
                // Until the group stops: then what is still arriving (the sources, stopped
                // first, have sent their last statuses and leave events) until 100 ms pass
                // without a message, 0.5 s at most, and `offline`.
                var stoppingSince: ContinuousClock.Instant?
                while true {
                    if stoppingSince == nil, stop.isRequested { stoppingSince = .now }
                    if let since = stoppingSince, ContinuousClock.now - since > .milliseconds(500) { break }
                    let received: ReceivedMessage?
                    do {
                        received = try owned.subscriber.receive(
                            timeout: .milliseconds(stoppingSince == nil ? 1000 : 100),
                            wakingOn: stoppingSince == nil ? stop.wakeUp : nil)
                    } catch {
                        logger.error("MQTT output: the bus failed", metadata: ["error": "\(error)"])
                        break
                    }
                    // What earlier runs left on the broker, at least once a second.
                    for retained in connection.takeRetained() {
                        for publication in owned.topics.retained(retained) { connection.publish(publication) }
                    }
                    guard let received else {
                        if stoppingSince != nil { break }
                        continue
                    }
                    for publication in owned.topics.publications(for: received.message, payload: received.payload) {
                        connection.publish(publication)
                    }
                }
                // On this thread, which owns it: an open socket would hold the process's
                // ZeroMQ context at exit.
                owned.subscriber.close()
            }
            connection.close()
        }
    }
}
