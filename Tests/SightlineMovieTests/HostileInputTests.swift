import Foundation
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

/// Truncated, corrupted and hostile files give an error or a partial result with a
/// warning: never a crash, a hang or an allocation the file does not justify.
@Suite struct HostileInputTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("hostile") }

    /// A small movie (stand-in H.264 bytes: the reader does not decode) with faces and a
    /// location track, finalised or left as a crash leaves it.
    static func smallMovie(path: String, finish: Bool) throws {
        let format = try VideoTrackFormat(
            configuration: [1, 0x64, 0, 0x1F, 0xFF, 0xE1, 0, 4, 0x67, 0x64, 0, 0x1F, 1, 0, 2, 0x68, 0xEE],
            width: 64, height: 48, timescale: 600)
        let writer = try MovieWriter(
            path: path, video: format, metadataTracks: [.detectedFaces, .locationISO6709],
            configuration: .init(fragmentInterval: MediaTime(value: 1, timescale: 10), syncEachFragment: false))
        for frame in 0..<24 {
            let time = MediaTime(value: Int64(frame * 20), timescale: 600)
            if frame % 3 == 0 {
                let face = FaceObject(
                    faceID: frame / 6, bounds: NormalizedRect(x: 0.1, y: 0.2, width: 0.3, height: 0.4), rollAngle: 0,
                    yawAngle: 45, time: time, duration: nil, score: 1, subDetector: 3)
                try writer.append(
                    TimedMetadataGroup(time: time, items: frame % 9 == 0 ? [] : [.detectedFaces([face, face])]),
                    toMetadataTrack: 0)
            }
            if frame == 0 {
                try writer.append(
                    TimedMetadataGroup(
                        time: time,
                        items: [
                            MetadataItem(
                                identifier: MetadataIdentifier.locationISO6709, dataType: .utf8,
                                value: .string("+1.5-2.25/"))
                        ]),
                    toMetadataTrack: 1)
            }
            try writer.append(
                VideoAccessUnit(
                    storedSample: [0, 0, 0, 4, frame % 4 == 0 ? 0x65 : 0x41, 1, 2, UInt8(frame)], decodeTime: time,
                    presentationTime: time, isKeyFrame: frame % 4 == 0))
        }
        if finish { try writer.finish() }
    }

    /// Reads everything a user can ask for; what matters is that it returns.
    static func readAll(_ path: String) -> Int {
        guard let movie = try? MovieReader(path: path) else { return 0 }
        var items = 0
        for track in movie.tracks where track.metadataFormat != nil {
            items += (try? movie.metadataGroups(track: track.id))?.reduce(0) { $0 + $1.items.count } ?? 0
        }
        for track in movie.tracks { _ = track.samples.prefix(8).map { try? movie.readSample($0) } }
        return items
    }

    func bytes(ofSmallMovie finish: Bool) throws -> [UInt8] {
        let path = directory.file("small-\(finish).mov")
        try Self.smallMovie(path: path, finish: finish)
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes `bytes`, reads them, and returns the reader's error or warnings as text.
    func outcome(_ bytes: [UInt8]) throws -> String {
        let path = directory.file("case.mov")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            let movie = try MovieReader(path: path)
            _ = Self.readAll(path)
            return movie.warnings.joined(separator: "; ")
        } catch {
            return "\(error)"
        }
    }

    /// Sets the big-endian u32 `at` bytes after the last occurrence of the box type `type`
    /// (the last, because a finalised file keeps its first header hidden as `free`).
    func patched(_ original: [UInt8], _ type: String, at offset: Int, _ value: UInt32) -> [UInt8] {
        var bytes = original
        let needle = Array(type.utf8)
        let start = (0..<(bytes.count - 4)).last { Array(bytes[$0..<$0 + 4]) == needle }! + 4 + offset
        for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: value >> UInt32(24 - 8 * index)) }
        return bytes
    }

    @Test func namedAttacksGiveClearErrorsOrWarnings() throws {
        let movie = try bytes(ofSmallMovie: true)
        let path = directory.file("ok.mov")
        try Data(movie).write(to: URL(fileURLWithPath: path))
        #expect(Self.readAll(path) > 0)

        #expect(try outcome([]) == "\(directory.file("case.mov")) is not a readable movie: not a QuickTime or MP4 file")
        #expect(try outcome(Array("just some text, not a movie\n".utf8)).hasSuffix("not a QuickTime or MP4 file"))
        // A child box larger than its parent.
        #expect(try outcome(patched(movie, "trak", at: -8, 0xFFFF_FF00)).contains("outside its parent"))
        // A top-level box claiming more than the file holds: a cut-off file.
        #expect(try outcome(patched(movie, "moov", at: -8, 0x7FFF_FFFF)).contains("not a readable movie"))
        // A box of size 3.
        #expect(try outcome(patched(movie, "wide", at: -8, 3)).contains("has size 3"))
        // Absurd entry counts: they must not be believed, nor allocated.
        #expect(try outcome(patched(movie, "stsz", at: 8, 0xFFFF_FFFF)).contains("'stsz' declares"))
        #expect(
            try outcome(patched(patched(movie, "stsz", at: 4, 1), "stsz", at: 8, 0xFFFF_FFFF)).contains(
                "more than the file holds"))
        #expect(try outcome(patched(movie, "stco", at: 4, 0x4000_0000)).contains("'stco' declares"))
        #expect(try outcome(patched(movie, "stts", at: 4, 0xFFFF_FFFF)).contains("'stts' declares"))
        // A sample offset beyond the end: the table stops there.
        let offsetBeyond = patched(movie, "stco", at: 8, 0xFFFF_FFF0)
        try Data(offsetBeyond).write(to: URL(fileURLWithPath: path))
        #expect(try MovieReader(path: path).tracks.last!.samples.isEmpty)
        // An unknown tkhd version is read as the common layout, not trusted further.
        _ = try outcome(patched(movie, "tkhd", at: 0, 0x0700_0000))
        // A metadata item claiming 4 GB inside a small sample ends the item list.
        let items = try MovieReader(path: directory.file("ok.mov"))
        let faceSample = items.tracks[1].samples.first { $0.size > 8 }!
        var hostileItem = movie
        hostileItem[Int(faceSample.offset)..<Int(faceSample.offset) + 4] = [0xFF, 0xFF, 0xFF, 0xF0]
        #expect(try outcome(hostileItem).isEmpty)
    }

    @Test func fragmentsWithHostileRunsAreRefusedWhole() throws {
        let fragmented = try bytes(ofSmallMovie: false)
        // A trun sample count far beyond its bytes.
        #expect(try outcome(patched(fragmented, "trun", at: 4, 0xFFFF_FFFF)).contains("'trun' declares"))
        // A data offset pointing before the file.
        #expect(try outcome(patched(fragmented, "trun", at: 8, 0x8000_0000)).contains("outside the file"))
        // A fragment header with no tfhd.
        let noTfhd = patched(fragmented, "tfhd", at: -4, FourCC("xxxx").rawValue)
        #expect(try outcome(noTfhd).contains("'traf' without 'tfhd'"))
    }

    @Test func deeplyNestedRecordsStopAtAFixedDepth() throws {
        // crec → cits → item(key 1, detected-face) → crec … 50 levels deep.
        var value: [UInt8] = []
        for _ in 0..<50 {
            let item = u32(UInt32(8 + value.count)) + u32(1) + value
            let cits = u32(UInt32(8 + item.count)) + Array("cits".utf8) + item
            value = u32(UInt32(8 + cits.count)) + Array("crec".utf8) + cits
        }
        let sample = u32(UInt32(8 + value.count)) + u32(1) + value
        let path = directory.file("nested.mov")
        let writer = try MovieWriter(
            path: path,
            video: try VideoTrackFormat(
                configuration: [1, 0x64, 0, 0x1F, 0xFF, 0xE0, 0], width: 8, height: 8, timescale: 600),
            metadataTracks: [.detectedFaces])
        try writer.append(
            TimedMetadataGroup(
                time: .zero,
                items: [
                    MetadataItem(
                        identifier: MetadataIdentifier.detectedFace,
                        dataType: .named("com.apple.quicktime.detected-face"), value: .data(Array(sample.dropFirst(8))))
                ]),
            toMetadataTrack: 0)
        try writer.append(
            VideoAccessUnit(
                storedSample: [0, 0, 0, 1, 0x65], decodeTime: .zero, presentationTime: .zero,
                duration: MediaTime(value: 20, timescale: 600), isKeyFrame: true))
        try writer.finish()
        let groups = try MovieReader(path: path).metadataGroups(track: 2)
        var depth = 0
        var nested = groups.first?.items.first?.value
        while case .records(let records)? = nested {
            depth += 1
            nested = records.first?.first?.value
        }
        #expect(depth == 4)
    }

    private func u32(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> UInt32(24 - 8 * $0)) }
    }

    /// Mutation fuzzing of the reader and of recovery, seeded from the committed corpus.
    /// Short by default; `SIGHTLINE_FUZZ_SECONDS=300` runs it for five minutes.
    @Test func fuzzTheReader() async throws {
        try await onAThreadOfItsOwn {
            let seconds = Double(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SECONDS"] ?? "") ?? 0
            let seeds = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "mov" }.sorted { $0.path < $1.path }
                .map { Array(try Data(contentsOf: $0)) }
            #expect(seeds.count >= 3)
            var random = SplitMix(seed: UInt64(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SEED"] ?? "") ?? 42)
            // A crash leaves the input that caused it here, to be added to the corpus.
            let current = directory.file("current.mov")
            let deadline = Date().addingTimeInterval(seconds)
            var runs = 0
            while runs < 400 || Date() < deadline {
                var bytes = seeds[runs % seeds.count]
                for _ in 0...random.next(below: 4) { mutate(&bytes, &random) }
                try Data(bytes).write(to: URL(fileURLWithPath: current))
                _ = Self.readAll(current)
                if runs % 8 == 0 {
                    _ = try? MovieRecovery.recover(path: current)
                    _ = Self.readAll(current)
                }
                runs += 1
            }
            #expect(runs >= 400)
            if seconds > 0 { print("fuzzed the reader with \(runs) inputs in \(Int(seconds)) s") }
        }
    }

    private func mutate(_ bytes: inout [UInt8], _ random: inout SplitMix) {
        guard !bytes.isEmpty else {
            bytes = [0, 0, 0, 8]
            return
        }
        let at = random.next(below: bytes.count)
        switch random.next(below: 7) {
        case 0: bytes[at] ^= UInt8(1 << random.next(below: 8))
        case 1: bytes[at] = UInt8(truncatingIfNeeded: random.next(below: 256))
        case 2:
            // An interesting 32-bit value where sizes and counts live.
            let values: [UInt32] = [
                0, 1, 7, 8, 9, 16, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FFF8, UInt32(bytes.count),
            ]
            let value = values[random.next(below: values.count)]
            for index in 0..<4 where at + index < bytes.count {
                bytes[at + index] = UInt8(truncatingIfNeeded: value >> UInt32(24 - 8 * index))
            }
        case 3: bytes.removeSubrange(at...)
        case 4:
            let length = min(random.next(below: 64) + 1, bytes.count - at)
            bytes.insert(contentsOf: bytes[at..<at + length], at: random.next(below: bytes.count))
        case 5:
            let length = min(random.next(below: 64) + 1, bytes.count - at)
            bytes.removeSubrange(at..<at + length)
        default:
            // Swap a box type for another real one: "moov" ↔ "moof", "stco" → "co64" …
            let types = [
                "moov", "moof", "mdat", "free", "trak", "stco", "co64", "crec", "cits", "keys", "mebx", "trun", "tfhd",
            ]
            let type = Array(types[random.next(below: types.count)].utf8)
            for index in 0..<4 where at + index < bytes.count { bytes[at + index] = type[index] }
        }
    }
}
