import ArgumentParser
import Logging
import ServiceLifecycle

@main
struct Sightline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightline",
        abstract: "Real-time video analytics: faces from cameras, files and streams, published over ZeroMQ.",
        subcommands: [
            RunCommand.self, EventsCommand.self, RecordCommand.self, ConsoleCommand.self, ExportCommand.self,
            FacesCommand.self,
            BrokerCommand.self,
            DevicesCommand.self,
            KeysCommand.self,
            InspectCommand.self,
            RecoverCommand.self,
            BenchCommand.self,
            MovieBenchCommand.self, ExportBenchCommand.self, RecordBenchCommand.self, CaptureBenchCommand.self,
            CodesBenchCommand.self, FacesBenchCommand.self,
            BrokerBenchCommand.self,
        ])
}

/// Options every command shares.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    /// Logs go to stderr, so stdout stays for data (JSON lines).
    func makeLogger() -> Logger {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "sightline")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Runs `services` until one finishes or SIGINT/SIGTERM arrives, then shuts them all down
/// gracefully, last to first.
func runServices(_ services: [any Service], logger: Logger) async throws {
    let group = ServiceGroup(
        configuration: .init(
            services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) },
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
}
