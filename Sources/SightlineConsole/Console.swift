import Hummingbird
import Logging
import ServiceLifecycle
import SightlineHTTP

/// The browser console as services to run in one group: the bus subscriber that follows
/// the sources, and the HTTP server (Hummingbird) that serves the pages, the live streams,
/// the recordings and the API. `sightline console` runs it; so can any command that wants a
/// console beside its other services.
package struct Console: Sendable {
    package let configuration: ConsoleConfiguration
    package let live: LiveSources
    package let library: RecordingLibrary?
    package let events: EventIndex
    /// In the order a service group wants them: it stops them last to first, so the live
    /// streams end before the server drains its connections.
    package let services: [any Service]

    /// Checks the configuration and opens the recordings directories; nothing listens until
    /// the services run. `onListening` gets the port once the server accepts connections.
    package init(
        configuration: ConsoleConfiguration, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        library =
            configuration.recordingDirectories.isEmpty
            ? nil : RecordingLibrary(directories: configuration.recordingDirectories)
        for directory in library?.missing ?? [] {
            logger.warning("recordings directory \(directory) does not exist yet; its files are listed once it does")
        }
        let events = try EventIndex(path: configuration.resolvedEventIndexPath, logger: logger)
        self.events = events
        live = LiveSources(
            endpoints: configuration.endpoints, curve: configuration.curve, silenceLimit: configuration.silenceLimit,
            logger: logger, onEvent: events.record)
        let router = ConsoleRouter(
            live: live, library: library, events: events, clips: ClipJobs(logger: logger), token: configuration.token,
            runningSources: configuration.runningSources, logger: logger
        ).router()
        let host = configuration.host
        let application = Application(
            router: router, server: ServerLimits.standard.server(logger: logger),
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "sightline"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.notice("console listening", metadata: ["url": "http://\(host):\(port)/"])
                await onListening(port)
            },
            logger: logger)
        let indexer = library.map {
            RecordingIndexer(index: events, library: $0, interval: configuration.indexInterval, logger: logger)
        }
        services =
            [ListeningServer(application, host: host, port: configuration.port), live] + (indexer.map { [$0] } ?? [])
    }
}
