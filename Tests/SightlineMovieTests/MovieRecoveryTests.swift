import Foundation
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

@Suite struct MovieRecoveryTests {
    let recording: SampleRecording
    let directory: TemporaryDirectory
    let unfinished: [UInt8]
    let boxes: [(type: FourCC, start: UInt64, size: UInt64)]

    init() throws {
        recording = try SampleRecording()
        directory = try TemporaryDirectory("recovery")
        let path = directory.file("unfinished.mov")
        try recording.write(to: path, fragmentInterval: MediaTime(value: 1, timescale: 1), finish: false)
        unfinished = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        boxes = try MovieReader(path: path).topLevelBoxes
    }

    @Test func aRecordingInProgressIsReadable() throws {
        let path = directory.file("unfinished.mov")
        let movie = try MovieReader(path: path)
        #expect(movie.isFragmented)
        #expect(boxes.map(\.type).prefix(3) == ["ftyp", "wide", "moov"])
        // The clip has a key frame every 2 s: four cuts, and the last 2 s still in memory.
        #expect(boxes.filter { $0.type == "moof" }.count == 4)
        #expect(movie.tracks[0].samples.count == 240)
        let streams = try IndependentReaders.streams(path)
        #expect(streams.map(\.tag) == ["avc1", "mebx", "mebx", "mebx", "mebx"])
        #expect(try IndependentReaders.decodedFrames(path) == movie.tracks[0].samples.count)
    }

    /// Cut the file at many byte offsets, as a killed process or a power cut would, and
    /// recover each copy: every complete fragment comes back, nothing else.
    @Test func aFileCutAnywhereRecoversToItsCompleteFragments() throws {
        let headerEnd = boxes.first { $0.type == "moov" }.map { $0.start + $0.size }!
        var offsets = Set(stride(from: 0, to: UInt64(unfinished.count), by: 9973))
        for box in boxes { offsets.formUnion([box.start, box.start + 1, box.start + 8, box.start + box.size - 1]) }
        offsets.insert(UInt64(unfinished.count))
        let path = directory.file("cut.mov")
        var checkedWithTools = 0
        for offset in offsets.sorted() where offset <= UInt64(unfinished.count) {
            try Data(unfinished.prefix(Int(offset))).write(to: URL(fileURLWithPath: path))
            let complete = boxes.filter { $0.type == "mdat" && $0.start + $0.size <= offset }
            if complete.isEmpty {
                // Cut before its first fragment was whole: no frame to keep, so no file. Too
                // short for a box header, only a file named as a recording is removed.
                if offset < 8 {
                    #expect(throws: MovieError.self) { try MovieRecovery.recover(path: path) }
                }
                #expect(
                    try MovieRecovery.recover(path: path, isRecording: true) == .removedEmpty(bytes: offset),
                    "cut at \(offset)")
                #expect(!FileManager.default.fileExists(atPath: path), "cut at \(offset)")
                continue
            }
            let outcome = try MovieRecovery.recover(path: path)
            let lastEnd = complete.last.map { $0.start + $0.size } ?? headerEnd
            #expect(
                outcome == .recovered(fragments: complete.count, discardedBytes: offset - lastEnd), "cut at \(offset)")
            let movie = try MovieReader(path: path)
            #expect(!movie.isFragmented && movie.warnings.isEmpty, "cut at \(offset)")
            let videoSamples = movie.tracks[0].samples.count
            #expect(videoSamples == expectedVideoSamples(before: lastEnd), "cut at \(offset)")
            // Metadata covers exactly as much time as the video.
            for track in movie.tracks.dropFirst() {
                #expect(track.mediaDuration == movie.tracks[0].mediaDuration, "cut at \(offset), track \(track.id)")
            }
            if complete.count % 4 == 1 && checkedWithTools < complete.count {
                checkedWithTools = complete.count
                #expect(try IndependentReaders.decodedFrames(path) == videoSamples, "cut at \(offset)")
                let faces = try IndependentReaders.exiftoolDocuments(path).values.filter { $0["DetectedFaceID"] != nil }
                #expect(faces.count == (try movie.metadataGroups(track: 2)).filter { !$0.items.isEmpty }.count)
            }
            #expect(try MovieRecovery.recover(path: path) == .alreadyFinalised)
        }
    }

    /// A writer's file is locked: recovery leaves a recording in progress alone, even from
    /// the same process.
    @Test func aRecordingBeingWrittenIsLeftAlone() throws {
        let path = directory.file("in-progress.mov")
        var writer: MovieWriter? = try MovieWriter(
            path: path, video: recording.format, metadataTracks: [],
            configuration: .init(fragmentInterval: MediaTime(value: 1, timescale: 1)))
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! UInt64
        #expect(try MovieRecovery.recover(path: path) == .inUse)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as! UInt64 == size)
        _ = writer
        writer = nil  // as a killed process: the lock goes with the descriptor
        #expect(try MovieRecovery.recover(path: path) == .removedEmpty(bytes: size))
    }

    /// What is not ours is never deleted: another muxer's file (its header at the end) cut
    /// inside its media, or a short file not named as a recording, is refused and kept.
    @Test func filesThatAreNotOurRecordingsAreKept() throws {
        let cut = directory.file("camera-app.mov")
        let ftyp: [UInt8] = [0, 0, 0, 20] + Array("ftypqt  ".utf8) + [0, 0, 2, 0] + Array("qt  ".utf8)
        let mdat: [UInt8] = [0, 1, 0, 0] + Array("mdat".utf8) + Array(repeating: 7, count: 1000)
        try Data(ftyp + mdat).write(to: URL(fileURLWithPath: cut))
        #expect(throws: MovieError.self) { try MovieRecovery.recover(path: cut) }
        let short = directory.file("notes.txt")
        try Data("vm\n".utf8).write(to: URL(fileURLWithPath: short))
        #expect(throws: MovieError.self) { try MovieRecovery.recover(path: short) }
        #expect(FileManager.default.fileExists(atPath: cut) && FileManager.default.fileExists(atPath: short))
    }

    private func expectedVideoSamples(before end: UInt64) -> Int {
        let movie = try! MovieReader(path: directory.file("unfinished.mov"))
        return movie.tracks[0].samples.filter { $0.offset < end }.count
    }

    @Test func aFinaliseCutShortIsCompletedOnRecovery() throws {
        let path = directory.file("half-finalised.mov")
        try recording.write(to: path)
        // Undo the last step of finalising: the fragment headers are visible again.
        let finished = try MovieReader(path: path)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        for box in finished.topLevelBoxes where box.type == "free" {
            try handle.seek(toOffset: box.start + 4)
            let original =
                unfinished.count > box.start + 8 ? Array(unfinished[Int(box.start + 4)..<Int(box.start + 8)]) : []
            try handle.write(contentsOf: original == Array("moov".utf8) ? original : Array("moof".utf8))
        }
        try handle.close()
        let halfway = try MovieReader(path: path)
        #expect(!halfway.isFragmented, "the complete moov wins over the fragmented one")
        #expect(halfway.tracks[0].samples.count == 300)
        #expect(try MovieRecovery.recover(path: path) == .alreadyFinalised)
        let repaired = try MovieReader(path: path)
        #expect(repaired.topLevelBoxes.filter { $0.type == "moov" }.count == 1)
        #expect(!repaired.topLevelBoxes.contains { $0.type == "moof" })
    }
}
