import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SightlineHTTP
import SightlineService

@main
struct Sightline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightline",
        abstract: "Real-time video analytics: faces from cameras, files and streams, published over ZeroMQ.",
        subcommands: [
            RunCommand.self, ServeCommand.self, EventsCommand.self, RecordCommand.self, ConsoleCommand.self,
            ExportCommand.self,
            FacesCommand.self,
            BrokerCommand.self,
            DevicesCommand.self,
            KeysCommand.self,
            InspectCommand.self,
            RecoverCommand.self,
            BenchCommand.self,
        ])

    /// ArgumentParser's own `main`, after raising the open-files limit: idle HTTP clients
    /// and a recorder's files share the descriptors, and systemd's soft limit is 1,024.
    /// SIGPIPE is ignored: a reader of `--print` that goes away (`| head`) must not end
    /// the process, and a recording with it; writes fail with EPIPE instead.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHardLimit()
        var parsed: ParsableCommand.Type?
        do {
            var command = try parseAsRoot()
            parsed = type(of: command)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as ValidationError where parsed != nil {
            // A value refused once the command runs: its one line and where its help is, not
            // the top-level usage that `exit(withError:)` on the root would print.
            let name = commandPath(of: parsed!, under: Sightline.self) ?? "sightline"
            FileHandle.standardError.write(
                Data("Error: \(error.message)\nSee '\(name) --help' for the options.\n".utf8))
            Foundation.exit(ExitCode.validationFailure.rawValue)
        } catch {
            exit(withError: error)
        }
    }
}

/// `sightline faces enroll` for `FacesCommand.Enroll`: the words that reach `command`.
private func commandPath(of command: ParsableCommand.Type, under root: ParsableCommand.Type) -> String? {
    let name = root.configuration.commandName ?? "\(root)"
    if command == root { return name }
    for child in root.configuration.subcommands {
        if let path = commandPath(of: command, under: child) { return "\(name) \(path)" }
    }
    return nil
}

/// Options every command shares.
struct GlobalOptions: ParsableArguments {
    @Option(
        help: "Log level: trace, debug, info, notice, warning, error, critical.",
        transform: {
            guard let level = Logger.Level(rawValue: $0) else {
                throw ValidationError("use trace, debug, info, notice, warning, error or critical")
            }
            return level
        })
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

/// Where to serve Prometheus metrics and health: `run`, `record` (and `serve`'s `metrics:`).
struct MetricsOptions: ParsableArguments {
    @Option(
        help: "Serve Prometheus /metrics and /health at HOST:PORT (127.0.0.1:9560). Beyond loopback it needs a token.")
    var metrics: String?

    @Option(help: "With --metrics: scrapes of /metrics must send this file's token (Authorization: Bearer).")
    var metricsTokenFile: String?

    func endpoint(insecure: Bool) throws -> OperationsEndpoint? {
        guard let metrics else {
            if metricsTokenFile != nil { throw ValidationError("--metrics-token-file goes with --metrics") }
            return nil
        }
        return try OperationsEndpoint(
            listen: metrics, token: try metricsTokenFile.map { try readSecret($0, option: "--metrics-token-file") },
            allowRemote: insecure)
    }
}

/// A token kept in a file (out of the process list), without its surrounding white space.
func readSecret(_ path: String, option: String) throws -> String {
    // Bounded: a path given by mistake (a log, a device) must not be read whole.
    let limit = 64 * 1024
    guard let file = FileHandle(forReadingAtPath: path) else {
        throw ValidationError("\(option) \(path) cannot be read")
    }
    defer { try? file.close() }
    guard let data = try? file.read(upToCount: limit + 1) ?? Data(), let text = String(data: data, encoding: .utf8)
    else { throw ValidationError("\(option) \(path) cannot be read as text") }
    guard data.count <= limit else { throw ValidationError("\(option) \(path) is larger than 64 KiB: not a secret") }
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Runs `services` until one finishes or SIGINT/SIGTERM arrives, then shuts them all down
/// gracefully, last to first.
func runServices(_ services: [any Service], logger: Logger) async throws {
    let group = ServiceGroup(
        configuration: .init(
            services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) },
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
}
