import Foundation
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

/// Files over 4 GiB: a fragment whose media data needs a 64-bit `mdat` header and run
/// offsets past 32 bits, and a finalised `moov` with `co64`. Writes about 9 GB in total, so it
/// runs only with SIGHTLINE_LONG_TESTS=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SIGHTLINE_LONG_TESTS"] == "1"))
struct LargeMovieTests {
    static let sampleSize = 50 << 20
    static let bigFrames = 90

    /// 90 frames of 50 MiB (stand-in bytes; FFmpeg refuses single packets near 1 GiB), ten a
    /// second, in one 4.4 GiB fragment, a faces group on each, then ten small frames in a second
    /// fragment written by `finish`.
    func write(_ path: String, finish: Bool) throws {
        let format = try VideoTrackFormat(
            configuration: [1, 0x64, 0, 0x1F, 0xFF, 0xE1, 0, 4, 0x67, 0x64, 0, 0x1F, 1, 0, 2, 0x68, 0xEE],
            width: 1920, height: 1080, timescale: 30)
        let writer = try MovieWriter(
            path: path, video: format, metadataTracks: [.detectedFaces],
            configuration: .init(fragmentInterval: MediaTime(value: 9, timescale: 1), syncEachFragment: false))
        var big = [UInt8](repeating: 0xAB, count: Self.sampleSize)
        big.replaceSubrange(
            0..<5,
            with: [
                UInt8(((Self.sampleSize - 4) >> 24) & 0xFF), UInt8(((Self.sampleSize - 4) >> 16) & 0xFF),
                UInt8(((Self.sampleSize - 4) >> 8) & 0xFF), UInt8((Self.sampleSize - 4) & 0xFF), 0x65,
            ])
        for frame in 0..<(Self.bigFrames + 10) {
            let time = MediaTime(value: Int64(frame), timescale: 10)
            let face = FaceObject(
                faceID: frame, bounds: NormalizedRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2), rollAngle: 0,
                yawAngle: 0,
                time: time, duration: nil, score: 1, subDetector: 0)
            try writer.append(TimedMetadataGroup(time: time, items: [.detectedFaces([face])]), toMetadataTrack: 0)
            let data = frame < Self.bigFrames ? big : [0, 0, 0, 2, 0x41, 0]
            try writer.append(
                VideoAccessUnit(
                    storedSample: data, decodeTime: time, presentationTime: time, isKeyFrame: frame % 10 == 0))
        }
        if finish { try writer.finish() }
    }

    func check(_ path: String) throws {
        let movie = try MovieReader(path: path)
        #expect(!movie.isFragmented)
        let video = movie.tracks[0]
        let frames = Self.bigFrames + 10
        #expect(video.samples.count == frames)
        #expect(video.samples.prefix(Self.bigFrames).allSatisfy { $0.size == UInt32(Self.sampleSize) })
        #expect(video.samples[Self.bigFrames - 1].offset > UInt64(UInt32.max))
        let faces = try movie.metadataGroups(track: 2)
        #expect(faces.count == frames)
        #expect(
            faces.compactMap { group -> UInt64? in
                guard case .records(let records)? = group.items.first?.value,
                    case .uint(let id)? = records.first?.first?.value
                else { return nil }
                return id
            } == Array(0..<UInt64(frames)))
        // ffprobe sees the same packets at the same positions.
        let output = try ExternalTool.run(
            "ffprobe", ["-v", "quiet", "-show_entries", "packet=stream_index,pos,size", "-of", "json", path])
        let json = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let packets = (json?["packets"] as? [[String: Any]] ?? []).filter { $0["stream_index"] as? Int == 0 }
        #expect(packets.map { UInt64($0["pos"] as? String ?? "") } == video.samples.map(\.offset))
        #expect(packets.map { UInt32($0["size"] as? String ?? "") } == video.samples.map(\.size))
        let documents = try ExternalTool.run(
            "exiftool", ["-api", "LargeFileSupport=1", "-ee", "-n", "-DetectedFaceID", "-a", "-s3", path])
        #expect(documents.stdout.split(separator: "\n") == (0..<frames).map { "\($0)"[...] })
    }

    @Test func aMovieOver4GiBIsWrittenReadAndRecovered() throws {
        let directory = try TemporaryDirectory("large")
        let finished = directory.file("finished.mov")
        try write(finished, finish: true)
        #expect(try FileManager.default.attributesOfItem(atPath: finished)[.size] as! UInt64 > 4 << 30)
        let boxes = try MovieReader(path: finished).topLevelBoxes
        #expect(boxes.contains { $0.type == "mdat" && $0.size > UInt64(UInt32.max) })
        try check(finished)
        try FileManager.default.removeItem(atPath: finished)

        let crashed = directory.file("crashed.mov")
        try write(crashed, finish: false)
        #expect(try MovieRecovery.recover(path: crashed) == .recovered(fragments: 1, discardedBytes: 0))
        let movie = try MovieReader(path: crashed)
        #expect(movie.tracks[0].samples.count == Self.bigFrames)
        #expect(try MovieReader(path: crashed).metadataGroups(track: 2).count == Self.bigFrames)
    }
}
