import Foundation
import SightlineBus
import SightlineCore
import SightlinePipeline
import SightlineTesting
import Testing

/// Frames that arrive in NV12 (a camera's usual layout; here raw NV12 in a file, read without
/// conversion) go to x264 as they are, without a conversion of every frame: what the bus
/// carries is their video, H.264 of their size, every frame of it decoding.
@Suite struct NV12VideoTests {
    @Test func nv12FramesAreEncodedAsTheyCome() async throws {
        let directory = try TemporaryDirectory("nv12-video")
        let clip = directory.file("nv12.mkv")
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-frames:v", "30", "-c:v",
                "rawvideo", "-pix_fmt", "nv12", clip,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let endpoint = try Endpoint("inproc://nv12-video")
        var configuration = PipelineConfiguration(source: clip)
        configuration.sourceID = "nv12"
        configuration.bus.publishing = .bind(endpoint)
        configuration.bus.waitForSubscriber = .seconds(20)
        configuration.video.mode = .always
        configuration.detection.detectors = [.codes]
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        #expect(pipeline.input.pixelFormat == "nv12")
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.video], source: "nv12"))
        _ = try await pipeline.runToCompletion()
        let messages = try subscriber.collect { $0.count >= 30 }
        let file = directory.file("video.h264")
        try Data(messages.flatMap { $0.payload ?? [] }).write(to: URL(fileURLWithPath: file))
        let probe = try ExternalTool.run(
            "ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", file])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "h264,640,360", "\(probe.stderr)")
        let decoded = try ExternalTool.run("ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "framemd5", "-"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(decoded.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count == 30)
    }
}
