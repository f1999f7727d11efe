import Foundation
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlinePipeline
import SightlineTesting
import Testing

@testable import SightlineCapture

/// `sightline run` on a real V4L2 device (vivid inside vivid-run, or a camera): the status
/// messages a subscriber sees across an unplug.
@Suite(
    .serialized,
    .enabled(if: FileManager.default.fileExists(atPath: "/dev/video0"), "needs /dev/video0 (vivid-run or a camera)"))
struct V4L2PipelineTests {
    @Test func anUnplugIsPublishedAsInterruptedThenResumed() async throws {
        let endpoint = try Endpoint("inproc://v4l2-pipeline")
        var configuration = PipelineConfiguration(source: "/dev/video0")
        configuration.sourceID = "webcam"
        configuration.publish = endpoint
        configuration.video = .off
        configuration.camera.width = 640
        configuration.camera.height = 360
        configuration.camera.frameRate = 30
        configuration.camera.pixelFormat = .yuyv
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        #expect(pipeline.input.url == "/dev/video0" && pipeline.input.width == 640 && pipeline.input.frameRate == 30)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.status], source: "webcam"))
        let run = Task { try await pipeline.runToCompletion() }

        var states: [SourceStatus] = []
        let deadline = Date().addingTimeInterval(60)
        var unplugged = false
        while Date() < deadline, !states.contains(where: { $0.state == .resumed }) {
            if !unplugged, pipeline.counters.framesIn > 10 {
                unplugged = true
                let control = try ExternalTool.run("v4l2-ctl", ["-d", "/dev/video0", "-c", "disconnect=1"])
                #expect(control.status == 0)
            }
            if let received = try subscriber.receive(timeout: .milliseconds(100)) {
                states.append(received.message.status!)
            }
        }
        // Frames flow again after the resume.
        let framesAtResume = pipeline.counters.framesIn
        while pipeline.counters.framesIn < framesAtResume + 5, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        pipeline.stop()
        let counters = try await run.value
        #expect(states.map(\.state) == [.started, .interrupted, .resumed])
        #expect(
            states.first { $0.state == .interrupted }?.reason?.hasPrefix("/dev/video0: the device disappeared") == true,
            "\(states)")
        #expect(counters.interruptions == 1)
        #expect(counters.framesIn >= framesAtResume + 5)
    }
}
