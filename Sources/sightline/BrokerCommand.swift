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
            Sources publish to the frontend with `run --publish-to`; subscribers (events, record, \
            your own services) connect to the backend. Run one per site; to span hosts, bind the \
            backend where the others can reach it.

            Example:
              sightline broker &
              sightline run --source /dev/video0 --source-id door --publish-to tcp://127.0.0.1:5561 &
              sightline run --source rtsp://yard/live --source-id yard --publish-to tcp://127.0.0.1:5561 &
              sightline events --connect tcp://127.0.0.1:5560

            Across hosts, with keys (see `sightline keys generate`):
              sightline broker --frontend tcp://0.0.0.0:5561 --backend tcp://0.0.0.0:5560 \\
                --curve-key broker.key --allow clients/
              sightline run --publish-to tcp://broker:5561 --curve-key door.key --server-key broker.pub
              sightline events --connect tcp://broker:5560 --curve-key me.key --server-key broker.pub
            """)

    @Option(help: "Where sources connect to publish.")
    var frontend = "tcp://127.0.0.1:5561"

    @Option(help: "Where subscribers connect.")
    var backend = "tcp://127.0.0.1:5560"

    @Flag(help: "Allow binding network addresses without authentication.")
    var insecure = false

    @Option(help: "The broker's CURVE key pair (.key): sources and subscribers must present an allowed key.")
    var curveKey: String?

    @Option(help: "Allowed source and subscriber keys: a .pub file or a directory of them (with --curve-key).")
    var allow: String?

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        var curve: CurveServer?
        switch (curveKey, allow) {
        case (nil, nil): break
        case (let key?, let allowed?):
            curve = try CurveServer(keyFile: key, allow: allowed)
        default: throw ValidationError("--curve-key and --allow go together")
        }
        let broker = try Broker(
            frontend: try Endpoint(frontend), backend: try Endpoint(backend), allowRemote: insecure, curve: curve)
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
