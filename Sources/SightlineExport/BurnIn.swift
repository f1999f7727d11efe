import Foundation
import SightlineCapture
import SightlineCore
import SightlineMovie

/// Exports a clip that any player shows with its boxes: each frame is decoded, turned upright
/// by the orientation track (or the video's matrix), drawn on (face boxes with their IDs,
/// code outlines with their text, the position from the location track as a caption),
/// encoded again with libx264, and written as an MP4 by `MovieWriter`; audio is copied, not
/// encoded again.
///
/// Boxes and text are drawn here rather than with libavfilter's drawbox and drawtext: the
/// boxes change every frame, which a filter graph can only follow with a filter per box and
/// commands per frame, while drawing a rectangle into the planes is a few row fills
/// (`sightline bench export` measures it against `ffmpeg -vf drawbox`; docs/export.md).
package enum BurnIn {
    package struct Options: Sendable {
        package var crf = 20
        package var preset = "veryfast"

        package init(crf: Int = 20, preset: String = "veryfast") {
            self.crf = crf
            self.preset = preset
        }
    }

    package static func export(
        _ source: ClipSource, range: Range<Double>, to output: String, overwrite: Bool, options: Options,
        progress: ExportProgress? = nil
    ) throws -> ExportSummary {
        let started = ContinuousClock.now
        let file = try OutputFile(path: output, overwrite: overwrite)
        let script = try OverlayScript(source)
        var framesWritten = 0
        let bytes = try file.produce { path in
            let cores = ProcessInfo.processInfo.activeProcessorCount
            let decoder = try VideoSampleDecoder(
                codec: source.format.codec, configuration: source.format.configuration, threads: cores)
            let rendering = Rendering(
                source, range: range, script: script, options: options, cores: cores, to: path, progress: progress)
            for index in source.sampleIndices(for: range) {
                let sample = source.video.samples[index]
                try rendering.show(
                    try decoder.decode(
                        try source.movie.readSample(sample), presentationTime: source.presentationTimes[index]))
            }
            try rendering.show(try decoder.flush())
            try rendering.finish()
            framesWritten = rendering.framesWritten
        }
        return ExportSummary(
            output: output, mode: .burnIn, from: range.lowerBound, to: range.upperBound, frames: framesWritten,
            metadataGroups: [:], bytes: bytes, seconds: (ContinuousClock.now - started).milliseconds / 1000,
            sourceIncomplete: source.isIncomplete)
    }

    /// One export's pictures on their way into the file: turned upright, drawn on, encoded
    /// and written; the painter, the encoder and the writer are made for the first picture.
    private final class Rendering {
        private let source: ClipSource
        private let range: Range<Double>
        private let script: OverlayScript
        private let options: Options
        private let cores: Int
        private let path: String
        private let progress: ExportProgress?
        private let timescale: Int32
        /// The clip's span in the video's ticks.
        private let start: Int64
        private let end: Int64
        private let started = ContinuousClock.now
        private var reported = ContinuousClock.now
        private var painter: OverlayPainter?
        private var encoder: VideoEncoder?
        private var writer: MovieWriter?
        private(set) var framesWritten = 0

        init(
            _ source: ClipSource, range: Range<Double>, script: OverlayScript, options: Options, cores: Int,
            to path: String, progress: ExportProgress?
        ) {
            (self.source, self.range, self.script, self.options) = (source, range, script, options)
            (self.cores, self.path, self.progress) = (cores, path, progress)
            timescale = Int32(clamping: source.video.timescale)
            start = Int64((range.lowerBound * Double(timescale)).rounded())
            end = Int64((range.upperBound * Double(timescale)).rounded())
        }

        /// Draws, encodes and writes the decoded pictures within the clip, in presentation order.
        func show(_ pictures: [VideoSampleDecoder.Picture]) throws {
            for (time, stored) in pictures.sorted(by: { $0.time < $1.time }) where time >= start && time < end {
                let seconds = Double(time) / Double(timescale)
                let upright = stored.oriented(script.orientation(at: seconds))
                if painter == nil { painter = try OverlayPainter(width: upright.width, height: upright.height) }
                painter!.draw(script, at: seconds, on: upright)
                let encoder = try self.encoder ?? makeEncoder(width: upright.width, height: upright.height)
                let frame = VideoFrame(
                    pixels: upright, time: MediaTime(value: time - start, timescale: timescale),
                    duration: nil, wallClockNanoseconds: 0, index: framesWritten)
                try write(try encoder.encode(frame))
                framesWritten += 1
                if let progress, ContinuousClock.now - reported > .milliseconds(200) {
                    reported = .now
                    let elapsed = (ContinuousClock.now - started).milliseconds / 1000
                    progress(
                        min(1, Double(time - start) / Double(max(1, end - start))),
                        Double(framesWritten) / max(elapsed, 1e-3))
                }
            }
        }

        /// Writes what the encoder still holds and finishes the file.
        func finish() throws {
            if let encoder { try write(try encoder.flush()) }
            guard let writer else { throw ExportError.emptyRange(from: range.lowerBound, to: range.upperBound) }
            try writer.finish()
        }

        private func makeEncoder(width: Int, height: Int) throws -> VideoEncoder {
            var settings = VideoEncoder.Options()
            (settings.crf, settings.preset, settings.tune) = (options.crf, options.preset, nil)
            settings.threads = cores
            let frameRate = Double(source.video.samples.count) / max(source.duration, 1e-3)
            let encoder = try VideoEncoder(
                width: width, height: height, timescale: timescale, frameRate: frameRate, options: settings)
            self.encoder = encoder
            return encoder
        }

        private func write(_ packets: [VideoAccessUnit]) throws {
            for packet in packets {
                let writer = try self.writer ?? makeWriter(parameterSets: packet.parameterSets)
                try writer.append(packet)
            }
        }

        /// The MP4, from the first packet's parameter sets, with the clip's audio copied as it
        /// is, timed from the clip's start.
        private func makeWriter(parameterSets: [ArraySlice<UInt8>]) throws -> MovieWriter {
            let format = try VideoTrackFormat(
                annexBParameterSets: H264.annexB(parameterSets), width: encoder!.width, height: encoder!.height,
                timescale: timescale)
            let writer = try MovieWriter(
                path: path, video: format, passthroughTracks: source.soundTracks.map(ClipSource.passthroughFormat),
                configuration: .init(fragmentInterval: nil, syncEachFragment: false, brand: .mp4))
            for (index, track) in source.soundTracks.enumerated() {
                for sample in try source.passthroughSamples(of: track, during: range, shift: range.lowerBound) {
                    try writer.append(sample, toPassthroughTrack: index)
                }
            }
            self.writer = writer
            return writer
        }
    }
}

extension BurnIn {
    /// What drawing costs, for `bench export`: two face boxes with their IDs drawn into a
    /// `width` x `height` picture `frames` times, in milliseconds a frame.
    package static func drawingMilliseconds(width: Int, height: Int, frames: Int) throws -> Double {
        let picture = PixelBuffer(format: .yuv420p, width: width, height: height) { bases in
            for (index, base) in bases.enumerated() {
                let geometry = PixelFormat.yuv420p.planeGeometry(width: width, height: height)[index]
                base.initializeMemory(as: UInt8.self, repeating: 128, count: geometry.bytesPerRow * geometry.rows)
            }
        }
        var script = OverlayScript()
        script.objects = [
            (
                .faces,
                [
                    .init(
                        start: 0, end: 1,
                        value: [
                            DrawnObject(id: 1, bounds: NormalizedRect(x: 0.1, y: 0.3, width: 0.2, height: 0.3)),
                            DrawnObject(id: 2, bounds: NormalizedRect(x: 0.5, y: 0.3, width: 0.2, height: 0.3)),
                        ])
                ]
            )
        ]
        let painter = try OverlayPainter(width: width, height: height)
        let started = ContinuousClock.now
        for _ in 0..<frames { painter.draw(script, at: 0.5, on: picture) }
        return (ContinuousClock.now - started).milliseconds / Double(max(1, frames))
    }
}

/// What a burn-in draws when: the movie's objects of each kind (faces, codes), positions and
/// orientations as spans of movie time.
struct OverlayScript {
    struct Span<Value> {
        var start: Double
        var end: Double
        var value: Value
    }

    /// Each track's spans with its kind, in the order of `ObjectKind.all` (a kind may have a
    /// track per detector).
    var objects: [(kind: ObjectKind, spans: [Span<[DrawnObject]>])] = []
    var positions: [Span<String>] = []
    var orientations: [Span<Int>] = []
    /// The video's matrix, for a movie without an orientation track.
    let matrixOrientation: Int

    init(matrixOrientation: Int = 1) { self.matrixOrientation = matrixOrientation }

    init(_ source: ClipSource) throws {
        matrixOrientation = source.video.orientation
        for track in source.metadataTracks {
            let kind = track.metadataFormat.flatMap(ObjectKind.recorded(in:))
            var spans: [Span<[DrawnObject]>] = []
            let groups = try source.movie.metadataGroups(track: track.id)
            for (index, group) in groups.enumerated() {
                let start = group.time.seconds
                let end =
                    group.duration.map { start + $0.seconds }
                    ?? (index + 1 < groups.count ? groups[index + 1].time.seconds : source.duration)
                if let drawn = kind?.drawn(group.items) { spans.append(Span(start: start, end: end, value: drawn)) }
                for item in group.items where ObjectKind.tracked(by: item.identifier) == nil {
                    if item.identifier == MetadataIdentifier.locationISO6709, case .string(let text) = item.value {
                        positions.append(Span(start: start, end: end, value: text))
                    } else if item.identifier == MetadataIdentifier.videoOrientation, case .int(let value) = item.value,
                        (1...8).contains(value)
                    {
                        orientations.append(Span(start: start, end: end, value: Int(value)))
                    }
                }
            }
            if let kind { objects.append((kind, spans)) }
        }
        objects = ObjectKind.all.flatMap { kind in objects.filter { $0.kind.name == kind.name } }
    }

    static func value<Value>(_ spans: [Span<Value>], at seconds: Double) -> Value? {
        guard let span = spans.last(startingAtOrBefore: seconds, start: \.start), seconds < span.end - 1e-6 else {
            return nil
        }
        return span.value
    }

    func orientation(at seconds: Double) -> Int { Self.value(orientations, at: seconds) ?? matrixOrientation }
}

/// Draws a frame's boxes, labels and caption, sized to the picture.
struct OverlayPainter {
    let text: TextRenderer
    let thickness: Int

    init(width: Int, height: Int) throws {
        let shorter = min(width, height)
        text = try TextRenderer(pixelSize: max(10, shorter / 28))
        thickness = max(2, shorter / 180)
    }

    func draw(_ script: OverlayScript, at seconds: Double, on picture: PixelBuffer) {
        let orientation = script.orientation(at: seconds)
        for (kind, spans) in script.objects {
            for object in OverlayScript.value(spans, at: seconds) ?? [] {
                let colour = kind.colour(of: object).ycbcr
                let rect = object.rect.oriented(orientation)
                picture.strokeRect(rect, colour: colour, thickness: thickness)
                label(kind.label(object), above: rect, colour: colour, on: picture)
            }
        }
        if let position = OverlayScript.value(script.positions, at: seconds) {
            let caption = ISO6709.readable(position)
            let height = text.ascent + text.descent
            text.draw(
                caption, x: thickness * 4, y: picture.height - height - thickness * 4, colour: .white,
                background: .black, on: picture)
        }
    }

    private func label(_ string: String, above rect: NormalizedRect, colour: YCbCrColour, on picture: PixelBuffer) {
        let height = text.ascent + text.descent
        let x = Int(rect.x * Double(picture.width))
        let top = Int(rect.y * Double(picture.height)) - height - thickness * 2
        text.draw(
            string, x: x, y: top >= 0 ? top : Int((rect.y + rect.height) * Double(picture.height)) + thickness * 2,
            colour: colour, background: .black, on: picture)
    }
}

/// ISO 6709 positions (`+48.8577+002.2950+035.000/`) as people read them.
enum ISO6709 {
    static func readable(_ text: String) -> String {
        let pattern = #"^([+-]\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)?"#
        guard let match = text.range(of: pattern, options: .regularExpression) else { return text }
        let body = String(text[match])
        var numbers: [Double] = []
        var current = ""
        for character in body {
            if character == "+" || character == "-", !current.isEmpty {
                numbers.append(Double(current) ?? 0)
                current = ""
            }
            current.append(character)
        }
        if !current.isEmpty { numbers.append(Double(current) ?? 0) }
        guard numbers.count >= 2 else { return text }
        var out = String(
            format: "%.5f° %@, %.5f° %@", abs(numbers[0]), numbers[0] >= 0 ? "N" : "S", abs(numbers[1]),
            numbers[1] >= 0 ? "E" : "W")
        if numbers.count > 2 { out += String(format: ", %.1f m", numbers[2]) }
        return out
    }
}
