import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore
import SightlineRecorder
import SightlineService

/// Recording options shared by `record` and `run --record`.
struct RecordingOptions: ParsableArguments {
    @Option(help: "Start a new file at the first key frame after this long (90s, 10m, 1h).")
    var segment: String?

    @Option(help: "Start a new file at the first key frame after this size (500M, 2G).")
    var maxSize: String?

    @Option(help: "Pause recording while free space is below this: the last guard behind --keep and --max-total.")
    var minFree = "512M"

    @Option(help: "Seconds between fragments synced to disk: at most this much is lost in a crash.")
    var fragment = 2.0

    @Option(help: "Delete this source's finished recordings older than this (90s, 10m, 12h, 7d).")
    var keep: String?

    @Option(help: "Delete this source's oldest finished recordings while together they take more than this (50G).")
    var maxTotal: String?

    @Option(
        help: """
            A client metadata track every file has from its start, IDENTIFIER=TYPE \
            (mdta/com.example.gps=com.apple.quicktime.location.ISO6709); repeatable.
            """)
    var metadataTrack: [String] = []

    func configuration(sourceID: String, directory: String) throws -> RecorderConfiguration {
        // Recordings are files a segment each: the option names a directory, and a file there
        // would otherwise fail only at the first write.
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw SightlineError.invalidArgument(
                "cannot record to \(OptionValues.cut(directory)): it is a file; recordings go into a directory (for example recordings/)"
            )
        }
        if !FileManager.default.fileExists(atPath: directory),
            ["mov", "mp4", "m4v", "mkv", "avi"].contains((directory as NSString).pathExtension.lowercased())
        {
            throw SightlineError.invalidArgument(
                "cannot record to \(OptionValues.cut(directory)): that is a file name; recordings go into a directory, one file a segment (for example recordings/)"
            )
        }
        var configuration = RecorderConfiguration(sourceID: sourceID, directory: directory)
        let fragment = try OptionValues.duration(fragment, option: "--fragment")
        configuration.fragmentInterval = MediaTime(seconds: fragment.seconds, timescale: 1000)
        configuration.segmentDuration = try segment.map {
            MediaTime(seconds: try Self.seconds($0, option: "--segment"), timescale: 1000)
        }
        configuration.maximumFileSize = try maxSize.map { try Self.bytes($0, option: "--max-size") }
        configuration.minimumFreeSpace = try Self.bytes(minFree, option: "--min-free")
        configuration.retention = try Self.retention(keep: keep, maxTotal: maxTotal)
        configuration.metadataTracks = try metadataTrack.map { text in
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ValidationError("--metadata-track '\(text)' is not IDENTIFIER=TYPE") }
            do {
                return (parts[0], try ClientMetadataItem.checkedType(identifier: parts[0], dataType: parts[1]))
            } catch {
                throw ValidationError("--metadata-track '\(text)': \(error)")
            }
        }
        return configuration
    }

    /// `--keep` and `--max-total`, as the config file's `keep` and `max-total` also give them.
    static func retention(keep: String?, maxTotal: String?) throws -> RetentionPolicy {
        RetentionPolicy(
            keep: try keep.map { .milliseconds(Int64(try seconds($0, option: "--keep") * 1000)) },
            maximumTotal: try maxTotal.map { try bytes($0, option: "--max-total") })
    }

    /// A duration such as 90s, 10m, 1h or 7d, in seconds: more than 0, at most 100 years.
    static func seconds(_ text: String, option: String) throws -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        let unit = text.last.flatMap { units[$0] }
        guard let value = Double(unit == nil ? text : String(text.dropLast())).map({ $0 * (unit ?? 1) }),
            value.isFinite, value > 0, value <= OptionValues.maximumSeconds
        else {
            throw ValidationError(
                "\(option) \(OptionValues.shown(text)) is not a duration such as 90s, 10m, 1h or 7d (at most 100 years)"
            )
        }
        return value
    }

    /// A size such as 500M or 2G, in bytes: at most 1 EiB.
    static func bytes(_ text: String, option: String) throws -> UInt64 {
        let units: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        let unit = text.last.flatMap { units[Character($0.uppercased())] }
        guard let value = Double(unit == nil ? text : String(text.dropLast())).map({ $0 * Double(unit ?? 1) }),
            value.isFinite, value >= 0, value <= OptionValues.maximumBytes
        else {
            throw ValidationError(
                "\(option) \(OptionValues.shown(text)) is not a size such as 500M or 2G (at most 1024P)")
        }
        return UInt64(value)
    }
}

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record a source's video and detected faces into QuickTime files.",
        discussion: """
            Subscribes to one source's video, faces and status and writes .mov files named \
            <source>-<UTC start>.mov, in fragments synced every 2 s. SIGINT or SIGTERM \
            finalises the current file; files a crash left unfinished are recovered on start. \
            The source publishes video while someone subscribes to it.

            Examples:
              sightline record --source-id cam1 --out recordings/
              sightline record --connect tcp://10.0.0.5:5560 --source-id door --out /srv/rec --segment 10m
            """)

    @Option(help: "Endpoint to connect to; repeat for several.")
    var connect: [String] = [Endpoint.defaultPublish.string]

    @Option(help: "The source to record.")
    var sourceID = "cam1"

    @Option(help: "Directory for the recordings.")
    var out = "recordings"

    @Flag(help: "Stop when the source publishes its final status (stopped or failed).")
    var untilStopped = false

    @OptionGroup var recording: RecordingOptions
    @OptionGroup var keys: ClientKeyOptions
    @OptionGroup var metrics: MetricsOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        var configuration = ServicesConfiguration()
        configuration.sources = [
            .init(
                id: sourceID, pipeline: nil, recording: try recording.configuration(sourceID: sourceID, directory: out))
        ]
        configuration.bus = .remote(try connect.map(Endpoint.init), curve: try keys.client())
        configuration.recordUntilSourceStops = untilStopped
        configuration.metrics = try metrics.endpoint(insecure: false)
        let services = try SightlineServices(configuration: configuration, logger: logger)
        try await services.run()
        for file in services.recorders[0].snapshot.counters.files { print(file) }
    }
}
