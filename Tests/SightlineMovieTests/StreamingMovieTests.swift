import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineMovie

/// The live view's fragmented MP4, read back by ffprobe and ffmpeg: every frame, with the
/// source's own times, from a stream that starts mid-way through a source's life.
@Suite struct StreamingMovieTests {
    @Test func eachAccessUnitIsAFragmentAtItsSourcesTime() throws {
        let sample = try SampleRecording()
        var movie = StreamingMovie(format: sample.format)
        #expect(movie.codec.hasPrefix("avc1.") && movie.codec.count == 11)
        // As if the viewer joined an hour into the source.
        let offset = MediaTime(value: 3600, timescale: 1).converted(to: sample.format.timescale)
        var bytes = movie.initialization
        for packet in sample.packets {
            let unit = VideoAccessUnit(
                storedSample: packet.data, decodeTime: packet.decodeTime + offset,
                presentationTime: packet.presentationTime + offset, duration: nil, isKeyFrame: packet.isKeyFrame)
            let fragment = movie.fragment(unit)
            bytes += try #require(fragment)
        }
        // A unit that goes back in time is refused, not written.
        let again = try #require(sample.packets.first)
        let refused = movie.fragment(
            VideoAccessUnit(
                storedSample: again.data, decodeTime: again.decodeTime, presentationTime: again.presentationTime,
                isKeyFrame: true))
        #expect(refused == nil)

        let directory = try TemporaryDirectory("streaming")
        let path = directory.file("live.mp4")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(try IndependentReaders.decodedFrames(path) == sample.packets.count)
        let json = try ExternalTool.json(
            "ffprobe", ["-v", "error", "-show_entries", "packet=pts_time,flags", "-of", "json", path])
        let packets = (json as? [String: Any])?["packets"] as? [[String: Any]] ?? []
        let times = packets.compactMap { ($0["pts_time"] as? String).flatMap(Double.init) }
        let expected = sample.packets.map { ($0.presentationTime + offset).seconds }
        #expect(times.count == expected.count)
        #expect(zip(times, expected).allSatisfy { abs($0 - $1) < 1e-4 }, "\(times.prefix(3)) vs \(expected.prefix(3))")
        let keys = packets.map { ($0["flags"] as? String ?? "").hasPrefix("K") }
        #expect(keys == sample.packets.map(\.isKeyFrame))
    }
}
