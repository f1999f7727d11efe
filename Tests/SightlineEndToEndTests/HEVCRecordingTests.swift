import Foundation
import SightlineCore
import SightlineMovie
import SightlineSamples
import SightlineTesting
import Testing

/// An H.265 source recorded as it comes, as a user runs it: `sightline run --record` on a
/// libx265 clip (B-frames, a key frame a second), read back by FFmpeg, exiftool and our
/// reader, then trimmed and burned in.
@Suite struct HEVCRecordingTests {
    /// Each video frame's MD5 as FFmpeg decodes it (`-xerror`: none may fail).
    static func pictureHashes(_ path: String) throws -> [Substring] {
        let output = try ExternalTool.run(
            "ffmpeg", ["-v", "error", "-xerror", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
        #expect(output.status == 0, "\(path)")
        return output.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last
        }
    }

    static func videoTrack(_ path: String) throws -> MovieTrack {
        try #require(try MovieReader(path: path).tracks.first { $0.mediaType == "vide" })
    }

    @Test func anH265SourceIsRecordedWithoutReEncoding() async throws {
        try await onAThreadOfItsOwn {
            let directory = try TemporaryDirectory("hevc")
            let clip = directory.file("faces-hevc.mp4")
            let made = try ExternalTool.run(
                "ffmpeg",
                [
                    "-v", "error", "-y", "-i", SampleMedia.faces640x480.path, "-t", "4", "-c:v", "libx265",
                    "-x265-params", "log-level=error:keyint=30:bframes=3", "-tag:v", "hvc1", "-an", clip,
                ])
            try #require(made.status == 0, "\(made.stderr)")
            let recordings = directory.file("rec")
            let run = try CommandLineTests().sightline(
                ["run", "--source", clip, "--record", recordings, "--log-level", "warning"])
            #expect(run.status == 0, "\(run.stderrLines)")
            let names = try FileManager.default.contentsOfDirectory(atPath: recordings).filter { $0.hasSuffix(".mov") }
            try #require(names.count == 1, "\(names)")
            let file = recordings + "/" + names[0]

            // An hvc1 track beside the faces' track, every frame of the clip in it.
            let streams = try IndependentReaders.streams(file)
            #expect(streams.map(\.tag) == ["hvc1", "mebx"] && streams.first?.frames == 120, "\(streams)")
            // Passed through: FFmpeg decodes the same pictures from both, frame for frame.
            let pictures = try Self.pictureHashes(clip)
            #expect(pictures.count == 120)
            #expect(try Self.pictureHashes(file) == pictures)

            // The record says what FFmpeg's own says of libx265's stream: profile, tier, level,
            // chroma, bit depths, temporal layers and length size, and the same parameter sets.
            let ours = try #require(try Self.videoTrack(file).codecConfiguration)
            let theirs = try #require(try Self.videoTrack(clip).codecConfiguration)
            #expect(try Self.videoTrack(file).videoCodec == .hevc)
            #expect(ours[1..<13] == theirs[1..<13] && ours[16..<19] == theirs[16..<19])
            #expect(ours[21] & 0x3F == theirs[21] & 0x3F)
            let sets = { (record: [UInt8]) in
                (H265.parameterSets(hvcC: record)?.units ?? []).filter { VideoCodec.hevc.isParameterSet($0) }
                    .map(Array.init)
            }
            #expect(!sets(ours).isEmpty && sets(ours) == sets(theirs))

            // The faces found are in the file, as exiftool reads them.
            let documents = try IndependentReaders.exiftoolDocuments(file).values
            #expect(documents.filter { $0["DetectedFaceBounds"] != nil }.count >= 60, "\(documents.count) samples")
            let inspect = try CommandLineTests().sightline(["inspect", file]).stdout
            #expect(inspect.contains("vide hvc1 640x480, 120 samples"), "\(inspect)")

            // Trimmed without re-encoding: H.265 still, the pictures of its span; burned in: H.264.
            let trimmed = directory.file("trimmed.mov")
            let trim = try CommandLineTests().sightline(
                ["export", file, "--output", trimmed, "--from", "1", "--to", "3", "--quiet"])
            #expect(trim.status == 0, "\(trim.stderrLines)")
            #expect(try IndependentReaders.streams(trimmed).map(\.tag) == ["hvc1", "mebx"])
            let kept = try Self.pictureHashes(trimmed)
            #expect(kept.count >= 60 && pictures.indices.contains { pictures[$0...].starts(with: kept) })
            let burned = directory.file("burned.mp4")
            let burn = try CommandLineTests().sightline(
                ["export", file, "--output", burned, "--burn-in", "--from", "1", "--to", "2", "--quiet"])
            #expect(burn.status == 0, "\(burn.stderrLines)")
            #expect(try IndependentReaders.streams(burned).first?.tag == "avc1")
            #expect(try IndependentReaders.decodedFrames(burned) == 30)
        }
    }
}
