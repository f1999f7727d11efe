import Foundation
import SightlineCore
import SightlineExport
import SightlineMovie
import SightlineSamples
import SightlineTesting
import Testing

/// Clips of a recording with a known script (`SampleRecording`: 300 frames at 30 fps, key
/// frames every 2 s, B-frames; faces 1–3, a code, two positions), checked with our reader
/// and with ffprobe, ffmpeg and exiftool.
@Suite struct ExportTests {
    let directory: TemporaryDirectory
    let recording: SampleRecording
    let source: String

    init() throws {
        directory = try TemporaryDirectory("export")
        recording = try SampleRecording()
        source = directory.file("cam1.mov")
        try recording.write(to: source)
    }

    /// Frame numbers of the source (30 fps) shown in a range of seconds.
    func frames(_ range: Range<Double>) -> Range<Int> {
        Int((range.lowerBound * 30).rounded(.up))..<Int((range.upperBound * 30).rounded(.up))
    }

    @Test func aTrimKeepsTheRangeAndItsMetadataTimedFromZero() throws {
        let output = directory.file("clip.mov")
        let range = 3.2..<6.5
        let summary = try ClipTrimmer.trim(ClipSource(path: source), range: range, to: output, overwrite: false)
        #expect(summary.mode == .trim && summary.from == 3.2 && summary.to == 6.5)
        #expect(summary.frames >= frames(range).count)  // from the key frame at 2 s, plus frames to decode

        // ffmpeg applies the edit list: exactly the frames of the range, from 0.
        let probe = try ExternalTool.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", output,
            ])
        let times = probe.stdout.split(separator: "\n").compactMap {
            $0.split(separator: ",").first.flatMap { Double($0) }
        }
        #expect(times.count == frames(range).count)
        #expect(abs((times.first ?? -1) - 0) < 1e-3)
        #expect(abs((times.last ?? -1) - Double(frames(range).count - 1) / 30) < 1e-3)
        #expect(try IndependentReaders.decodedFrames(output) == frames(range).count)

        // The faces of every frame, as the source has them, 3.2 s earlier.
        let movie = try MovieReader(path: output)
        let faceTrack = try #require(
            movie.tracks.first {
                $0.metadataFormat?.keys.contains { $0.identifier == MetadataIdentifier.detectedFace } == true
            })
        let groups = try movie.metadataGroups(track: faceTrack.id)
        for frame in frames(range) {
            let time = Double(frame - frames(range).lowerBound) / 30 + 1e-4
            let group = groups.last { $0.time.seconds <= time }
            let written = group.flatMap { $0.items.first?.detectedFaceRecords } ?? []
            let expected = SampleRecording.faces(onFrame: frame)
            #expect(written.map(\.faceID) == expected.map(\.faceID), "frame \(frame)")
            #expect(written.map(\.identity?.name) == expected.map(\.identity?.name), "frame \(frame)")
            for (face, want) in zip(written, expected) {
                #expect(abs(face.bounds.x - want.bounds.x) < 1e-6 && abs(face.bounds.y - want.bounds.y) < 1e-6)
            }
        }
        // A group that straddles the cut is clipped to it: the last one ends with the clip.
        let last = try #require(groups.last { !$0.items.isEmpty })
        #expect(abs((last.time + last.duration!).seconds - (range.upperBound - range.lowerBound)) < 1e-3)
        // The position changes at the source's 5 s, 1.8 s into the clip.
        let locationTrack = try #require(
            movie.tracks.first { $0.metadataFormat?.keys.first?.identifier == MetadataIdentifier.locationISO6709 })
        let positions = try movie.metadataGroups(track: locationTrack.id).filter { !$0.items.isEmpty }
        #expect(positions.first?.items.first?.value == .string(SampleRecording.location1))
        let change = try #require(positions.first { $0.items.first?.value == .string(SampleRecording.location2) })
        #expect(abs(change.time.seconds - 1.8) < 1e-3)

        // exiftool reads the same faces, sample by sample.
        let documents = try IndependentReaders.exiftoolDocuments(output).values.filter { $0["DetectedFaceID"] != nil }
        #expect(documents.count == frames(range).count)
        for document in documents {
            let frame = frames(range).lowerBound + Int((Double(document["SampleTime"]![0])! * 30).rounded())
            #expect(document["DetectedFaceID"]! == SampleRecording.faces(onFrame: frame).map { String($0.faceID) })
        }
    }

    @Test func aClipAcrossCutsJoinsTheFilesWithTheirMetadataContinuous() throws {
        // Three recordings of one source, 10 s each, one after another (named 10 s apart).
        let starts = [1_795_515_300.0, 1_795_515_310, 1_795_515_320]
        let sources = try starts.map { start in
            let path = directory.file("cam1-\(Int(start)).mov")
            try recording.write(to: path)
            return (source: try ClipSource(path: path), start: start)
        }
        let parts = ClipPart.joined(sources)
        #expect(parts.map(\.offset) == [0, 10, 20])
        // 5 s to 25 s: the second half of the first, all of the second, the first half of the third.
        let output = directory.file("joined.mov")
        let summary = try ClipTrimmer.trim(parts, range: 5..<25, to: output, overwrite: false)
        #expect(summary.from == 5 && summary.to == 25)
        #expect(try IndependentReaders.decodedFrames(output) == 600)
        let movie = try MovieReader(path: output)
        let faceTracks = movie.tracks.filter {
            $0.metadataFormat?.keys.contains { $0.identifier == MetadataIdentifier.detectedFace } == true
        }
        #expect(faceTracks.count == 1)
        let groups = try movie.metadataGroups(track: try #require(faceTracks.first).id)
        // Every frame's faces are its own file's, over both joins.
        for frame in 0..<600 {
            let time = Double(frame) / 30 + 1e-4
            let group = groups.last { $0.time.seconds <= time }
            let written = group.flatMap { $0.items.first?.detectedFaceRecords } ?? []
            let expected = SampleRecording.faces(onFrame: (frame + 150) % 300)
            #expect(written.map(\.faceID) == expected.map(\.faceID), "frame \(frame)")
            for (face, want) in zip(written, expected) {
                #expect(abs(face.bounds.x - want.bounds.x) < 1e-6, "frame \(frame)")
            }
        }
        // A gap of more than 2 s between files stays a gap.
        let late = [sources[0], (source: sources[1].source, start: starts[0] + 30)]
        #expect(ClipPart.joined(late).map(\.offset) == [0, 30])
    }

    /// The bundled clip with a 1 kHz tone as AAC, muxed by ffmpeg.
    func movieWithAudio() throws -> String {
        let path = directory.file("with-audio.mov")
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-i", SampleMedia.faces640x480.path, "-f", "lavfi", "-i",
                "sine=frequency=1000:sample_rate=48000:duration=10", "-map", "0:v", "-map", "1:a", "-c:v", "copy",
                "-c:a", "aac", "-shortest", path,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        return path
    }

    func audioStream(_ path: String) throws -> (codec: String, duration: Double) {
        let probe = try ExternalTool.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "a", "-show_entries", "stream=codec_name,duration", "-of", "csv=p=0",
                path,
            ])
        let fields = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        return (fields.first.map(String.init) ?? "", fields.count > 1 ? Double(fields[1]) ?? -1 : -1)
    }

    @Test func audioIsCopiedOnTrimAndBurnIn() throws {
        let input = try movieWithAudio()
        let clip = try ClipSource(path: input)
        let trimmed = directory.file("audio.mov")
        _ = try ClipTrimmer.trim(clip, range: 3.2..<6.5, to: trimmed, overwrite: false)
        let trimmedAudio = try audioStream(trimmed)
        #expect(trimmedAudio.codec == "aac" && abs(trimmedAudio.duration - 3.3) < 0.03, "\(trimmedAudio)")
        #expect(
            try ExternalTool.run("ffmpeg", ["-v", "error", "-xerror", "-i", trimmed, "-f", "null", "-"]).status == 0)
        // The samples are the source's own bytes.
        let source = try #require(clip.soundTracks.first)
        let copy = try #require(try MovieReader(path: trimmed).tracks.first { $0.mediaType == "soun" })
        let first = try #require(
            source.samples.firstIndex {
                source.presentationTime(of: $0).value + Int64($0.duration) > Int64(3.2 * Double(source.timescale))
            })
        for (index, sample) in copy.samples.enumerated() {
            #expect(
                try MovieReader(path: trimmed).readSample(sample)
                    == clip.movie.readSample(source.samples[first + index]))
        }

        let burned = directory.file("audio.mp4")
        _ = try BurnIn.export(clip, range: 3.2..<6.5, to: burned, overwrite: false, options: .init(preset: "ultrafast"))
        let burnedAudio = try audioStream(burned)
        #expect(burnedAudio.codec == "aac" && abs(burnedAudio.duration - 3.3) < 0.03, "\(burnedAudio)")
        #expect(
            try ExternalTool.run("ffmpeg", ["-v", "error", "-xerror", "-i", burned, "-f", "null", "-"]).status == 0)
    }

    @Test func aRotatedMovieKeepsItsMatrixAndOrientationTrack() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../SightlineMovieTests/Fixtures/iphone-layout.mov").standardized.path
        let output = directory.file("turned.mov")
        _ = try ClipTrimmer.trim(ClipSource(path: fixture), range: 1.0..<3.0, to: output, overwrite: false)
        let movie = try MovieReader(path: output)
        #expect(movie.tracks.first?.orientation == 6)
        let rotation = try ExternalTool.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "side_data=rotation", "-of", "csv=p=0", output])
        #expect(rotation.stdout.contains("-90"))
        let orientation = try #require(
            movie.tracks.first { $0.metadataFormat?.keys.first?.identifier == MetadataIdentifier.videoOrientation })
        #expect(try movie.metadataGroups(track: orientation.id).first?.items.first?.value == .int(6))
    }

    @Test func aroundAFaceCutsWhereItIsInView() throws {
        let clip = try ClipSource(path: source)
        let presence = try clip.presence(ofFace: 2)
        #expect(abs(presence.lowerBound - 3.0) < 1e-3 && abs(presence.upperBound - 200.0 / 30) < 1e-3)
        #expect(throws: ExportError.unknownFace(9, known: [1, 2, 3])) { try clip.presence(ofFace: 9) }
    }

    @Test func badRequestsAreOneLineAndTouchNothing() throws {
        let clip = try ClipSource(path: source)
        let before = try Data(contentsOf: URL(fileURLWithPath: source))
        #expect(throws: ExportError.emptyRange(from: 5, to: 4)) { try clip.checkedRange(from: 5, to: 4) }
        #expect(throws: ExportError.rangeOutside(from: 12, to: 20, duration: 10)) {
            try clip.checkedRange(from: 12, to: 20)
        }
        let existing = directory.file("exists.mov")
        _ = FileManager.default.createFile(atPath: existing, contents: Data("keep me".utf8))
        #expect(throws: ExportError.outputExists(existing)) {
            try ClipTrimmer.trim(clip, range: 0..<1, to: existing, overwrite: false)
        }
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")
        _ = try ClipTrimmer.trim(clip, range: 0..<1, to: existing, overwrite: true)
        #expect(try MovieReader(path: existing).tracks.count == 5)
        #expect(throws: ExportError.self) {
            try ClipTrimmer.trim(clip, range: 0..<1, to: "/proc/sightline/clip.mov", overwrite: false)
        }
        let garbage = directory.file("garbage.mov")
        _ = FileManager.default.createFile(atPath: garbage, contents: Data("not a movie".utf8))
        #expect(throws: ExportError.self) { try ClipSource(path: garbage) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: source)) == before)
    }

    @Test(.enabled(if: SmallFileSystem.canMount, "mounting a tmpfs needs root"))
    func aFullDiskLeavesNoPartialFile() throws {
        let disk = try SmallFileSystem(kilobytes: 100)
        let output = disk.path + "/clip.mov"
        #expect(throws: ExportError.self) {
            try ClipTrimmer.trim(ClipSource(path: source), range: 0..<10, to: output, overwrite: false)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).isEmpty)
    }

    @Test func aRecordingStillBeingWrittenExportsWhatIsComplete() throws {
        let unfinished = directory.file("unfinished.mov")
        try recording.write(to: unfinished, finish: false)
        let clip = try ClipSource(path: unfinished)
        #expect(clip.isIncomplete)
        let output = directory.file("partial.mov")
        let summary = try ClipTrimmer.trim(
            clip, range: try clip.checkedRange(from: 1, to: nil), to: output, overwrite: false)
        #expect(summary.sourceIncomplete)
        #expect(summary.to <= 10 && summary.to >= 6)  // whole fragments of 2 s
        #expect(try IndependentReaders.decodedFrames(output) == frames(1..<summary.to).count)
    }

    @Test func aBurnInDrawsTheBoxesWhereTheFacesAre() throws {
        let output = directory.file("burned.mp4")
        let summary = try BurnIn.export(
            ClipSource(path: source), range: 3.0..<5.0, to: output, overwrite: false,
            options: .init(crf: 18, preset: "ultrafast"))
        #expect(summary.frames == 60)
        #expect(try IndependentReaders.decodedFrames(output) == 60)
        // Every frame at its own time, 1/30 s apart, from 0.
        let probe = try ExternalTool.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", output])
        let times = probe.stdout.split(separator: "\n").compactMap {
            $0.split(separator: ",").first.flatMap { Double($0) }
        }
        #expect(times.count == 60)
        #expect(zip(times, times.indices).allSatisfy { abs($0 - Double($1) / 30) < 1e-3 })
        // Frame 30 of the clip is frame 120 of the source.
        let pixels = try IndependentReaders.rgbFrame(output, at: 1.0, width: 640, height: 480)
        for face in SampleRecording.faces(onFrame: 120) {
            let b = face.bounds
            let (left, top) = (Int(b.x * 640), Int(b.y * 480))
            let (right, bottom) = (Int((b.x + b.width) * 640), Int((b.y + b.height) * 480))
            #expect(pixels.isFaceGreen((left + right) / 2, top + 1), "face \(face.faceID) top edge")
            #expect(pixels.isFaceGreen(left + 1, (top + bottom) / 2), "face \(face.faceID) left edge")
            #expect(!pixels.isFaceGreen((left + right) / 2, (top + bottom) / 2), "face \(face.faceID) middle")
        }
        #expect(!pixels.isFaceGreen(600, 460))
    }

    @Test func aBurnInTurnsTheRotatedMovieUprightWithItsBoxes() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../SightlineMovieTests/Fixtures/iphone-layout.mov").standardized.path
        let output = directory.file("upright.mp4")
        _ = try BurnIn.export(
            ClipSource(path: fixture), range: 0.5..<2.0, to: output, overwrite: false,
            options: .init(preset: "ultrafast"))
        let size = try ExternalTool.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0", output])
        #expect(size.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "48,64")
        // The fixture's face (0.26, 0.3764, 0.1104 x 0.1992 of the stored 64x48) lands, turned
        // a quarter clockwise, at x 0.4244…0.6236, y 0.26…0.3704 of the upright 48x64.
        let pixels = try IndependentReaders.rgbFrame(output, at: 0.5, width: 48, height: 64)
        #expect(pixels.isFaceGreen(25, 17), "the box's top edge")
        #expect(!pixels.isFaceGreen(5, 60))
    }
}
