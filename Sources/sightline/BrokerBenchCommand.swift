import ArgumentParser
import Foundation
import Logging
import SightlineBus
import SightlineCore
import Synchronization

struct BrokerBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "broker",
        abstract: "Measure small-message throughput through the broker against a direct connection.",
        prints: """
            One publisher sends small status messages to one subscriber over tcp loopback,
            first directly and then through `sightline broker`'s proxy, in the same run; it
            prints messages/s for each and the broker's as a ratio of the direct figure.
            """)

    @Option(help: "Messages per measurement.")
    var messages = 100_000

    @Option(help: "Rounds of each; the median is printed.")
    var rounds = 3

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        var logger = global.makeLogger()
        logger.logLevel = .warning
        let size = try JSONEncoder().encode(statusMessage(0)).count
        Swift.print("sightline bench broker: \(messages) messages of \(size) bytes, \(rounds) rounds, median")
        var direct: [Double] = []
        var brokered: [Double] = []
        for _ in 0..<rounds {
            let port = Endpoint.freeLoopbackPort()
            direct.append(
                try await throughput(
                    publishTo: "tcp://127.0.0.1:\(port)", subscribeTo: "tcp://127.0.0.1:\(port)", broker: false,
                    logger: logger))
            let (frontend, backend) = (Endpoint.freeLoopbackPort(), Endpoint.freeLoopbackPort())
            let broker = try Broker(
                frontend: try Endpoint("tcp://127.0.0.1:\(frontend)"),
                backend: try Endpoint("tcp://127.0.0.1:\(backend)"))
            try broker.start()
            brokered.append(
                try await throughput(
                    publishTo: "tcp://127.0.0.1:\(frontend)", subscribeTo: "tcp://127.0.0.1:\(backend)", broker: true,
                    logger: logger))
            broker.stop()
        }
        let (d, b) = (median(direct), median(brokered))
        Swift.print(String(format: "direct          %9.0f messages/s", d))
        Swift.print(String(format: "through broker  %9.0f messages/s  %.2fx direct", b, b / d))
    }

    private func statusMessage(_ index: Int) -> Message {
        Message(
            kind: .status, source: "cam1", time: nil, wallTimeNs: UInt64(index), status: SourceStatus(state: .running))
    }

    /// Messages per second from the first send to the last receive; every message must arrive.
    private func throughput(publishTo: String, subscribeTo: String, broker: Bool, logger: Logger) async throws -> Double
    {
        let publisher = try Publisher(endpoint: try Endpoint(publishTo), connectsToBroker: broker, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [try Endpoint(subscribeTo)], topics: Subscriber.topics(kinds: [.status], source: nil))
        guard await publisher.waitForSubscriber(timeout: .seconds(5)) else {
            throw ValidationError("the subscriber did not connect")
        }
        try await Task.sleep(for: .milliseconds(200))
        let message = statusMessage(0)
        let received = Atomic<Int>(0)
        let started = ContinuousClock.now
        let messages = self.messages
        let sender = Task {
            // At most 4000 in flight: below every high-water mark, so none is dropped and
            // the figure is delivered messages.
            var sent = 0
            while sent < messages {
                while sent - received.load(ordering: .relaxed) > 4000 { try await Task.sleep(for: .microseconds(50)) }
                for _ in 0..<min(1000, messages - sent) { publisher.publish(message) }
                sent += min(1000, messages - sent)
            }
        }
        while received.load(ordering: .relaxed) < messages, try subscriber.receive(timeout: .seconds(5)) != nil {
            received.add(1, ordering: .relaxed)
        }
        let elapsed = (ContinuousClock.now - started).seconds
        try await sender.value
        await publisher.close()
        subscriber.close()
        let count = received.load(ordering: .relaxed)
        guard count == messages else { throw ValidationError("only \(count) of \(messages) messages arrived") }
        return Double(messages) / elapsed
    }
}
