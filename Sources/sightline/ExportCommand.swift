import ArgumentParser
import Foundation
import SightlineCore
import SightlineExport
import Synchronization

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a clip of a recording: trimmed with its metadata, or with the boxes burned in.",
        discussion: """
            A .mov output is trimmed without re-encoding: the video from the key frame at or \
            before --from, an edit list so it plays from --from exactly, and every metadata \
            track cut to the range and timed from 0. An .mp4 output (or --burn-in) is decoded, \
            turned upright by the orientation track, drawn on (face boxes and IDs, code \
            outlines and text, the GPS position) and encoded with libx264, for any player. \
            Times are seconds (12.5) or [HH:]MM:SS.mmm.

            With --recordings instead of a file, the clip is a wall-clock range of one \
            source's recordings (--from-time, --to-time: UTC as 2026-11-28T00:17:12Z, or \
            seconds since 1970): the files it spans are joined without re-encoding, one after \
            another (a gap of more than 2 s between them stays a gap), every metadata track \
            continuous across the join. File starts come from their names, to the second.

            Examples:
              sightline export rec.mov -o visitor.mov --from 1:05 --to 1:35
              sightline export rec.mov -o visitor.mp4 --around-face 3 --padding 5s
              sightline export rec.mov -o all.mp4 --burn-in --crf 20 --json
              sightline export --recordings rec --source-id door -o visit.mov \\
                --from-time 2026-11-28T00:17:12Z --to-time 2026-11-28T00:18:00Z
            """)

    @Argument(help: "The recording (or give --recordings).")
    var input: String?

    @Option(help: "A directory of recordings: export a wall-clock range of one source's files, joined.")
    var recordings: String?

    @Option(help: "With --recordings: the source whose files to join.")
    var sourceID = "cam1"

    @Option(help: "With --recordings: the start, UTC (2026-11-28T00:17:12Z) or seconds since 1970.")
    var fromTime: String?

    @Option(help: "With --recordings: the end, UTC or seconds since 1970.")
    var toTime: String?

    @Option(name: .shortAndLong, help: "The clip to write (.mov: trimmed; .mp4: boxes burned in).")
    var output: String

    @Option(help: "Start, seconds or [HH:]MM:SS.mmm (default: the beginning).")
    var from: String?

    @Option(help: "End, seconds or [HH:]MM:SS.mmm (default: the end).")
    var to: String?

    @Option(help: "Cut around the time face ID is in view (instead of --from/--to).")
    var aroundFace: Int?

    @Option(help: "With --around-face: time kept before and after (5s, 2.5).")
    var padding = "5s"

    @Flag(help: "Draw the boxes into the picture and encode again (the default for .mp4).")
    var burnIn = false

    @Option(help: "x264 constant quality for --burn-in, 0-51 (lower is better).")
    var crf = 20

    @Option(help: "x264 preset for --burn-in (ultrafast … veryslow).")
    var preset = "veryfast"

    @Flag(help: "Replace the output if it exists.")
    var overwrite = false

    @Flag(help: "No progress on the terminal.")
    var quiet = false

    @Flag(help: "Print one JSON line summing up what was written.")
    var json = false

    func run() throws {
        // What is written is what the name says: a QuickTime file named .avi would mislead
        // every player that trusts the extension.
        let written = (output as NSString).pathExtension.lowercased()
        guard ["mov", "mp4"].contains(written) else {
            throw ExportError.badOption(
                "-o \(output.count <= 80 ? output : "\(output.prefix(80))…"): export writes .mov (trimmed, with the detections as metadata tracks) or .mp4 (boxes burned in); name the output so"
            )
        }
        if let recordings { return try exportJoined(recordings) }
        guard let input else {
            throw ExportError.badOption("give a recording, or --recordings with --from-time and --to-time")
        }
        if aroundFace != nil, from != nil || to != nil {
            throw ExportError.badOption("--around-face sets the range itself; leave out --from and --to")
        }
        guard (0...51).contains(crf) else { throw ExportError.badOption("--crf must be 0 to 51, not \(crf)") }
        let source = try ClipSource(path: input)
        let range: Range<Double>
        if let aroundFace {
            let presence = try source.presence(ofFace: aroundFace)
            let pad = try Self.seconds(padding, option: "--padding")
            range = try source.checkedRange(
                from: max(0, presence.lowerBound - pad), to: min(source.duration, presence.upperBound + pad))
        } else {
            range = try source.checkedRange(
                from: try from.map { try Self.seconds($0, option: "--from") },
                to: try to.map { try Self.seconds($0, option: "--to") })
        }
        if source.isIncomplete {
            FileHandle.standardError.write(
                Data(
                    "note: \(input) is still being written or was cut off; exporting what is complete (\(String(format: "%.3f", source.duration)) s)\n"
                        .utf8))
        }
        let progress = quiet ? nil : TerminalProgress(label: "export")
        let summary: ExportSummary
        if burnIn || output.lowercased().hasSuffix(".mp4") {
            summary = try BurnIn.export(
                source, range: range, to: output, overwrite: overwrite,
                options: .init(crf: crf, preset: preset), progress: progress?.report)
        } else {
            summary = try ClipTrimmer.trim(
                source, range: range, to: output, overwrite: overwrite, progress: progress?.report)
        }
        progress?.finish()
        try report(summary, joined: 1)
    }

    /// The `--json` line, or one line for a person.
    private func report(_ summary: ExportSummary, joined: Int) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            _ = printLine(Array(try encoder.encode(summary)))
        } else if !quiet {
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "%@: %@ %.3f–%.3f s%@, %d frames, %.1f MB in %.2f s\n", output, summary.mode.rawValue,
                        summary.from, summary.to, joined > 1 ? " of \(joined) recordings joined" : "", summary.frames,
                        Double(summary.bytes) / 1e6, summary.seconds
                    ).utf8))
        }
    }

    /// A wall-clock range of one source's recordings, joined into one `.mov`.
    private func exportJoined(_ directory: String) throws {
        guard input == nil, from == nil, to == nil, aroundFace == nil, !burnIn, !output.lowercased().hasSuffix(".mp4")
        else {
            throw ExportError.badOption(
                "--recordings joins files into a .mov with --from-time and --to-time; give no recording, --from, --to, --around-face or --burn-in"
            )
        }
        guard let fromTime, let toTime else {
            throw ExportError.badOption("--recordings needs --from-time and --to-time")
        }
        let (start, end) = (
            try Self.wallTime(fromTime, option: "--from-time"), try Self.wallTime(toTime, option: "--to-time")
        )
        guard end > start else { throw ExportError.emptyRange(from: start, to: end) }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap {
            name -> (name: String, start: Double)? in
            guard RecordingName.sourceID(of: name) == sourceID, let start = RecordingName.startTime(of: name) else {
                return nil
            }
            return (name, start)
        }.sorted { ($0.start, $0.name) < ($1.start, $1.name) }
        // The files that may hold part of the range: from the last one started by its start.
        let firstIndex = names.lastIndex { $0.start <= start } ?? 0
        let candidates = names[firstIndex...].filter { $0.start < end }
        let sources = try candidates.map { (source: try ClipSource(path: directory + "/" + $0.name), start: $0.start) }
        guard !sources.isEmpty else {
            throw ExportError.badOption("no recording of \(sourceID) in \(directory) between \(fromTime) and \(toTime)")
        }
        let parts = ClipPart.joined(sources)
        let starts = sources.map(\.start)
        let range =
            ClipPart.joinedTime(
                of: start, in: parts, starts: starts)..<ClipPart.joinedTime(
                of: end, in: parts, starts: starts)
        guard !range.isEmpty else {
            throw ExportError.badOption("the recordings of \(sourceID) do not reach from \(fromTime) to \(toTime)")
        }
        let progress = quiet ? nil : TerminalProgress(label: "export")
        let summary = try ClipTrimmer.trim(
            parts, range: range, to: output, overwrite: overwrite, progress: progress?.report)
        progress?.finish()
        try report(summary, joined: parts.count)
    }

    /// UTC as ISO 8601 (`2026-11-28T00:17:12Z`, fractions allowed) or seconds since 1970.
    static func wallTime(_ text: String, option: String) throws -> Double {
        if let seconds = Double(text), seconds.isFinite, (0...1e11).contains(seconds) { return seconds }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions.insert(.withFractionalSeconds)
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        throw ExportError.badOption("\(option) '\(text)' is not a UTC time such as 2026-11-28T00:17:12Z")
    }

    /// Seconds as `12.5`, `90s`, `MM:SS.mmm` or `HH:MM:SS.mmm`.
    static func seconds(_ text: String, option: String) throws -> Double {
        let trimmed = text.hasSuffix("s") ? String(text.dropLast()) : text
        let parts = trimmed.split(separator: ":", omittingEmptySubsequences: false).map { Double($0) }
        guard (1...3).contains(parts.count), parts.allSatisfy({ $0 != nil && $0! >= 0 && $0!.isFinite }),
            parts.dropLast().allSatisfy({ $0! == $0!.rounded() }), parts.count == 1 || parts.last!! < 60
        else {
            throw ExportError.badOption("\(option) '\(text)' is not a time such as 12.5 or 00:01:05.250")
        }
        return parts.reduce(0) { $0 * 60 + $1! }
    }
}

/// Progress on stderr for work that takes longer than a second: a line redrawn in place on
/// a terminal, a line a second otherwise.
final class TerminalProgress: Sendable {
    private let label: String
    private let started = ContinuousClock.now
    /// When the last line was written, and whether any was.
    private let written = Mutex((last: ContinuousClock.now, any: false))
    private let interactive = isatty(2) != 0

    init(label: String) { self.label = label }

    func report(_ fraction: Double, _ framesPerSecond: Double) {
        written.withLock { written in
            let elapsed = ContinuousClock.now - started
            guard elapsed > .seconds(1), interactive || ContinuousClock.now - written.last >= .seconds(1) else {
                return
            }
            written = (.now, true)
            let seconds = elapsed.milliseconds / 1000
            let left = fraction > 0 ? seconds * (1 - fraction) / fraction : 0
            let line = String(
                format: "%@ %3.0f%%  %.0f frames/s  %.0f s left", label, fraction * 100, framesPerSecond, left)
            FileHandle.standardError.write(Data((interactive ? "\r\(line)" : "\(line)\n").utf8))
        }
    }

    func finish() {
        written.withLock { if $0.any && interactive { FileHandle.standardError.write(Data("\n".utf8)) } }
    }
}
