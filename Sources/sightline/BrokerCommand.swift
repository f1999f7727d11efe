import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SightlineBus

struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Let many sources and subscribers meet at one address (ZeroMQ's XSUB/XPUB proxy).",
        discussion: """
            Sources publish to the frontend with `run --publish-to`; subscribers (events, record,
            your own services) connect to the backend. Run one per site; to span hosts, bind the
            backend where the others can reach it.

            Example:
              sightline broker &
              sightline run --source /dev/video0 --source-id door --publish-to tcp://127.0.0.1:5561 &
              sightline run --source rtsp://yard/live --source-id yard --publish-to tcp://127.0.0.1:5561 &
              sightline events --connect tcp://127.0.0.1:5560
            """)

    @Option(help: "Where sources connect to publish.")
    var frontend = "tcp://127.0.0.1:5561"

    @Option(help: "Where subscribers connect.")
    var backend = "tcp://127.0.0.1:5560"

    @Flag(help: "Allow binding network addresses without authentication.")
    var insecure = false

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let broker = try Broker(frontend: try Endpoint(frontend), backend: try Endpoint(backend), allowRemote: insecure)
        try broker.start()
        logger.info("broker running", metadata: ["frontend": "\(frontend)", "backend": "\(backend)"])
        try await runServices([UntilShutdown()], logger: logger)
        broker.stop()
        Bus.finish()
        logger.info("broker stopped")
    }
}

/// Waits for the graceful shutdown signal.
private struct UntilShutdown: Service {
    func run() async throws {
        try? await gracefulShutdown()
    }
}
