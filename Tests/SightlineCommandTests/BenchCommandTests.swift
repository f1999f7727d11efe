import ArgumentParser
import Testing

@testable import sightline

/// `sightline bench <what>` groups the benches; `bench` alone, with or without options, is
/// the pipeline bench it always was.
@Suite struct BenchCommandTests {
    @Test func benchAloneIsThePipelineBench() throws {
        #expect(try Sightline.parseAsRoot(["bench"]) is PipelineBenchCommand)
        let command = try #require(
            try Sightline.parseAsRoot(["bench", "--frames", "120", "--latency-rounds", "0"]) as? PipelineBenchCommand)
        #expect(command.frames == 120)
        #expect(command.latencyRounds == 0)
    }

    @Test func eachBenchByName() throws {
        let expected: [(String, ParsableCommand.Type)] = [
            ("pipeline", PipelineBenchCommand.self), ("faces", FacesBenchCommand.self),
            ("codes", CodesBenchCommand.self), ("capture", CaptureBenchCommand.self),
            ("record", RecordBenchCommand.self), ("movie", MovieBenchCommand.self),
            ("export", ExportBenchCommand.self), ("broker", BrokerBenchCommand.self),
        ]
        for (name, type) in expected {
            let parsed = try Sightline.parseAsRoot(["bench", name])
            #expect(Swift.type(of: parsed) == type, "bench \(name)")
        }
        // The old flat names are gone from the top level.
        #expect(throws: (any Error).self) { try Sightline.parseAsRoot(["bench-faces"]) }
    }
}
