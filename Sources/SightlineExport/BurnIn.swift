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
        let indices = source.sampleIndices(for: range)
        let timescale = Int32(clamping: source.video.timescale)
        let start = Int64((range.lowerBound * Double(timescale)).rounded())
        let end = Int64((range.upperBound * Double(timescale)).rounded())
        let frameRate = Double(source.video.samples.count) / max(source.duration, 1e-3)
        var framesWritten = 0
        let bytes = try file.produce { path in
            let cores = ProcessInfo.processInfo.activeProcessorCount
            let decoder = try H264SampleDecoder(avcConfiguration: source.format.avcConfiguration, threads: cores)
            var painter: OverlayPainter?
            var encoder: VideoEncoder?
            var writer: MovieWriter?
            var last = ContinuousClock.now

            func write(_ packets: [EncodedVideoPacket]) throws {
                for packet in packets {
                    let accessUnit = H264.AccessUnit(annexB: packet.data)
                    if writer == nil {
                        let format = try VideoTrackFormat(
                            annexBParameterSets: H264.annexB(accessUnit.parameterSets), width: encoder!.width,
                            height: encoder!.height,
                            timescale: timescale)
                        writer = try MovieWriter(
                            path: path, video: format,
                            passthroughTracks: source.soundTracks.map(ClipSource.passthroughFormat),
                            configuration: .init(fragmentInterval: nil, syncEachFragment: false, brand: .mp4))
                        // The audio is copied as it is, timed from the clip's start.
                        for (index, track) in source.soundTracks.enumerated() {
                            for sample in try source.passthroughSamples(
                                of: track, during: range, shift: range.lowerBound)
                            {
                                try writer!.append(sample, toPassthroughTrack: index)
                            }
                        }
                    }
                    try writer!.append(
                        VideoSample(
                            accessUnit, decodeTime: packet.decodeTime,
                            presentationTime: packet.presentationTime,
                            duration: packet.duration, isSync: packet.isKeyFrame))
                }
            }

            func show(_ pictures: [H264SampleDecoder.Picture]) throws {
                for (time, stored) in pictures.sorted(by: { $0.time < $1.time }) where time >= start && time < end {
                    let seconds = Double(time) / Double(timescale)
                    let upright = stored.oriented(script.orientation(at: seconds))
                    if painter == nil { painter = try OverlayPainter(width: upright.width, height: upright.height) }
                    painter!.draw(script, at: seconds, on: upright)
                    if encoder == nil {
                        var settings = VideoEncoder.Options()
                        (settings.crf, settings.preset, settings.tune) = (options.crf, options.preset, nil)
                        settings.threads = cores
                        encoder = try VideoEncoder(
                            width: upright.width, height: upright.height, timescale: timescale,
                            frameRate: frameRate, options: settings)
                    }
                    let frame = VideoFrame(
                        pixels: upright, time: MediaTime(value: time - start, timescale: timescale),
                        duration: nil, wallClockNanoseconds: 0, index: framesWritten)
                    try write(try encoder!.encode(frame))
                    framesWritten += 1
                    if let progress, ContinuousClock.now - last > .milliseconds(200) {
                        last = .now
                        let elapsed = (ContinuousClock.now - started).milliseconds / 1000
                        progress(
                            min(1, Double(time - start) / Double(max(1, end - start))),
                            Double(framesWritten) / max(elapsed, 1e-3))
                    }
                }
            }

            for index in indices {
                let sample = source.video.samples[index]
                try show(
                    try decoder.decode(
                        try source.movie.readSample(sample), presentationTime: source.presentationTimes[index]))
            }
            try show(try decoder.flush())
            if let encoder { try write(try encoder.flush()) }
            guard let writer else { throw ExportError.emptyRange(from: range.lowerBound, to: range.upperBound) }
            try writer.finish()
        }
        return ExportSummary(
            output: output, mode: .burnIn, from: range.lowerBound, to: range.upperBound, frames: framesWritten,
            metadataGroups: [:], bytes: bytes, seconds: (ContinuousClock.now - started).milliseconds / 1000,
            sourceIncomplete: source.isIncomplete)
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

    /// Each kind's spans, in the order of `ObjectKind.all`.
    var objects: [(kind: ObjectKind, spans: [Span<[DrawnObject]>])] = ObjectKind.all.map { ($0, []) }
    var positions: [Span<String>] = []
    var orientations: [Span<Int>] = []
    /// The video's matrix, for a movie without an orientation track.
    let matrixOrientation: Int

    init(matrixOrientation: Int = 1) { self.matrixOrientation = matrixOrientation }

    init(_ source: ClipSource) throws {
        matrixOrientation = source.video.orientation
        for track in source.metadataTracks {
            let groups = try source.movie.metadataGroups(track: track.id)
            for (index, group) in groups.enumerated() {
                let start = group.time.seconds
                let end =
                    group.duration.map { start + $0.seconds }
                    ?? (index + 1 < groups.count ? groups[index + 1].time.seconds : source.duration)
                for item in group.items {
                    if let index = objects.firstIndex(where: { $0.kind.trackIdentifier == item.identifier }) {
                        let drawn = objects[index].kind.drawn(item) ?? []
                        objects[index].spans.append(Span(start: start, end: end, value: drawn))
                    } else if item.identifier == MetadataIdentifier.locationISO6709, case .string(let text) = item.value
                    {
                        positions.append(Span(start: start, end: end, value: text))
                    } else if item.identifier == MetadataIdentifier.videoOrientation, case .int(let value) = item.value,
                        (1...8).contains(value)
                    {
                        orientations.append(Span(start: start, end: end, value: Int(value)))
                    }
                }
            }
        }
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
                let rect = object.rect.oriented(orientation)
                picture.strokeRect(rect, colour: kind.colour, thickness: thickness)
                label(kind.label(object), above: rect, colour: kind.colour, on: picture)
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
