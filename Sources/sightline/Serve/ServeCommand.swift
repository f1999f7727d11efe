import ArgumentParser
import Foundation
import ServiceLifecycle
import SightlineBus
import SightlineConsole
import SightlineService

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run every source of a config file: analysis, recording, retention, metrics and the console.",
        discussion: """
            One process for many cameras, files and streams (docs/configuration.md). Each source \
            has its own pipeline and recorder: one that fails (unreachable, unplugged) is opened \
            again with backoff and shows in /health while the others go on. SIGTERM finalises \
            every recording.

            Examples:
              sightline serve --config /etc/sightline/sightline.yml
              sightline serve --check --config sightline.yml      # every problem, one line each
            """)

    @Option(help: "The configuration file (YAML).")
    var config: String

    @Flag(help: "Check the file and exit: every problem on a line of its own, naming its line.")
    var check = false

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let file = ServeFile(path: config)
        guard file.problems.isEmpty else {
            for problem in file.problems { FileHandle.standardError.write(Data("Error: \(problem)\n".utf8)) }
            throw ExitCode.failure
        }
        if check {
            let recorded = file.services.sources.filter { $0.recording != nil }.count
            print("\(config): \(file.services.sources.count) sources, \(recorded) recorded: ok")
            return
        }
        let logger = global.makeLogger()
        var configuration = file.services
        configuration.reopenFailedSources = true
        let services = try SightlineServices(configuration: configuration, logger: logger)
        var extra: [any Service] = []
        if var console = file.console {
            console.endpoints = [services.localEndpoint]
            console.runningSources = services.runningSources
            extra = try Console(configuration: console, logger: logger).services
        }
        var failure: (any Error)?
        do { try await services.run(extra: extra) } catch { failure = error }
        Bus.finish()
        if let failure { throw failure }
        for recorder in services.recorders {
            for file in recorder.snapshot.counters.files { logger.notice("recording: \(file)") }
        }
    }
}
