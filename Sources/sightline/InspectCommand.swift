import ArgumentParser
import Foundation
import SightlineCore
import SightlineMovie
import SightlineRecorder

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a movie's tracks, or print its timed metadata as JSON lines.",
        discussion: """
            Reads QuickTime and MP4 files, finalised or still fragmented (a recording in \
            progress or cut off), ours and Apple's.

            Examples:
              sightline inspect recording.mov
              sightline inspect recording.mov --metadata
              sightline inspect recording.mov --metadata --track 2 | jq .items
            """)

    @Argument(help: "The movie file.")
    var file: String

    @Flag(help: "Print every timed metadata group as one JSON object per line.")
    var metadata = false

    @Option(help: "Only this metadata track (with --metadata).")
    var track: UInt32?

    @Flag(help: "Print the track list as JSON.")
    var json = false

    func run() throws {
        let movie = try MovieReader(path: file)
        for warning in movie.warnings { FileHandle.standardError.write(Data("warning: \(file): \(warning)\n".utf8)) }
        if metadata {
            try printMetadata(movie)
        } else if json {
            let tracks = movie.tracks.map(Self.trackJSON).joined(separator: ",")
            print("{\"file\":\(JSONText.string(file)),\"fragmented\":\(movie.isFragmented),\"tracks\":[\(tracks)]}")
        } else {
            printSummary(movie)
        }
    }

    private func printMetadata(_ movie: MovieReader) throws {
        let tracks = movie.tracks.filter { $0.metadataFormat != nil && (track == nil || $0.id == track) }
        if let track, tracks.isEmpty { throw ValidationError("\(file) has no metadata track \(track)") }
        var output = ""
        output.reserveCapacity(1 << 16)
        for metadataTrack in tracks {
            let groups = try movie.metadataGroupReader(track: metadataTrack.id)
            while let group = try groups.next() {
                output += "{\"track\":\(metadataTrack.id),\"time\":\(JSONText.seconds(group.time)),"
                output += "\"duration\":\(group.duration.map(JSONText.seconds) ?? "null"),\"items\":["
                output += group.items.map(JSONText.item).joined(separator: ",")
                output += "]}\n"
                if output.utf8.count > 1 << 16 {
                    FileHandle.standardOutput.write(Data(output.utf8))
                    output.removeAll(keepingCapacity: true)
                }
            }
        }
        FileHandle.standardOutput.write(Data(output.utf8))
    }

    private func printSummary(_ movie: MovieReader) {
        // As players and ffprobe give it: what the edit lists show (a trimmed clip's media
        // starts at the key frame before its start).
        let duration = movie.tracks.map { $0.presentedDuration.seconds }.max() ?? 0
        let state =
            movie.isFragmented
            ? "fragmented (recording in progress or cut off: `sightline recover` finalises it)" : "finalised"
        print(
            "\(file): \(movie.fileSize) bytes, \(String(format: "%.3f", duration)) s, \(movie.tracks.count) tracks, \(state)"
        )
        for track in movie.tracks {
            var line = "  track \(track.id): \(track.mediaType) \(track.format)"
            if track.width > 0 { line += " \(track.width)x\(track.height)" }
            line +=
                ", \(track.samples.count) samples, \(String(format: "%.3f", track.presentedDuration.seconds)) s, timescale \(track.timescale)"
            if track.mediaType == "vide" {
                line += ", \(track.samples.filter(\.isSync).count) key frames"
                if track.orientation != 1 { line += ", matrix orientation \(track.orientation)" }
            }
            if !track.describes.isEmpty {
                line += ", describes track \(track.describes.map(String.init).joined(separator: ","))"
            }
            print(line)
            for key in track.metadataFormat?.keys ?? [] {
                print("      key \(key.localID): \(key.identifier) (\(key.dataType))")
            }
        }
    }

    private static func trackJSON(_ track: MovieTrack) -> String {
        let keys = (track.metadataFormat?.keys ?? []).map {
            "{\"localID\":\($0.localID),\"identifier\":\(JSONText.string($0.identifier)),\"dataType\":\(JSONText.string($0.dataType.description))}"
        }
        return "{\"id\":\(track.id),\"mediaType\":\(JSONText.string(track.mediaType.description)),"
            + "\"format\":\(JSONText.string(track.format.description)),\"width\":\(track.width),\"height\":\(track.height),"
            + "\"samples\":\(track.samples.count),\"keyFrames\":\(track.samples.filter(\.isSync).count),"
            + "\"duration\":\(JSONText.seconds(track.presentedDuration)),"
            + "\"mediaDuration\":\(JSONText.seconds(track.mediaDuration)),\"timescale\":\(track.timescale),"
            + "\"describes\":[\(track.describes.map(String.init).joined(separator: ","))],\"keys\":[\(keys.joined(separator: ","))]}"
    }
}

struct RecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Finalise recordings cut off by a crash, keeping every complete fragment.",
        discussion: """
            A recording is written in fragments that are synced to disk every few seconds; a \
            killed process or a power cut leaves a file that only some players read. This \
            drops the incomplete tail and writes the movie header, in place. A recording cut \
            off before its first fragment was complete holds no frame: it is removed. Finalised \
            files, and files another process is recording, are left alone.

            Example:
              sightline recover recordings/*.mov
            """)

    @Argument(help: "The movie files.")
    var files: [String]

    func run() throws {
        var failed = 0
        for file in files {
            do {
                let isRecording = RecordingName.sourceID(of: URL(fileURLWithPath: file).lastPathComponent) != nil
                print(
                    "\(file): \(MovieRecovery.describe(try MovieRecovery.recover(path: file, isRecording: isRecording)))"
                )
            } catch {
                FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
                failed += 1
            }
        }
        if failed > 0 { throw ExitCode.failure }
    }
}

/// Just enough JSON writing for metadata lines, fast enough for long recordings.
enum JSONText {
    static func string(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C }) { return "\"" + text + "\"" }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func seconds(_ time: MediaTime) -> String { number(time.seconds) }

    static func number(_ value: Double) -> String {
        value.isFinite ? (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)") : "null"
    }

    static func item(_ item: MetadataItem) -> String {
        "{\"identifier\":\(string(item.identifier)),\"dataType\":\(string(item.dataType.description)),\"value\":\(value(item.value, single: isSinglePrecision(item.dataType)))}"
    }

    /// float32 values print as float32, so 0.26 stays 0.26 rather than 0.25999999046325684.
    private static func isSinglePrecision(_ type: MetadataDataType) -> Bool {
        if case .wellKnown(let code) = type { return [23, 70, 71, 72, 80].contains(code) }
        return false
    }

    static func value(_ value: MetadataValue, single: Bool) -> String {
        func float(_ v: Double) -> String { single && v.isFinite ? "\(Float(v))" : number(v) }
        switch value {
        case .string(let text): return string(text)
        case .int(let v): return String(v)
        case .uint(let v): return String(v)
        case .float(let v): return float(v)
        case .floats(let values): return "[" + values.map(float).joined(separator: ",") + "]"
        case .records(let records):
            return "[" + records.map { "[" + $0.map(item).joined(separator: ",") + "]" }.joined(separator: ",") + "]"
        case .data(let bytes): return "{\"base64\":\(string(Data(bytes).base64EncodedString()))}"
        }
    }
}
