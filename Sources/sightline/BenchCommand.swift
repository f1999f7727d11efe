import ArgumentParser

/// `sightline bench <what>`: every benchmark, each printing its figures beside a baseline
/// measured in the same run; `sightline bench` alone measures the pipeline.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Sightline on the sample media, each part against a baseline in the same run.",
        discussion: "Run a release build: swift run -c release sightline bench [what]",
        subcommands: [
            PipelineBenchCommand.self, FacesBenchCommand.self, CodesBenchCommand.self, CaptureBenchCommand.self,
            RecordBenchCommand.self, MovieBenchCommand.self, ExportBenchCommand.self, BrokerBenchCommand.self,
            EventsBenchCommand.self,
        ],
        defaultSubcommand: PipelineBenchCommand.self)
}

extension CommandConfiguration {
    /// One benchmark's command: its name, what it measures, and what it prints. Every bench is
    /// run the same way, so that line of its help is written here once.
    static func bench(_ name: String, abstract: String, prints: String) -> CommandConfiguration {
        CommandConfiguration(
            commandName: name,
            abstract: abstract,
            discussion: "Run a release build: swift run -c release sightline bench \(name)\n" + prints)
    }
}
