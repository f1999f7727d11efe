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
        // Codes rather than faces: dlib takes seconds a frame in the emulated VM, and the
        // camera is what this test is about.
        configuration.detect = [.barcodes]
        configuration.camera.width = 640
        configuration.camera.height = 360
        configuration.camera.frameRate = 30
        configuration.camera.pixelFormat = .yuyv
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        #expect(pipeline.input.url == "/dev/video0" && pipeline.input.width == 640 && pipeline.input.frameRate == 30)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.status], source: "webcam"))
        let run = Task { try await pipeline.runToCompletion() }

        // On a loaded machine the emulated camera can also stall for 2 s before or after the
        // unplug: each stall is an interrupted/resumed pair of its own. What must be there is
        // the unplug's interruption, with its reason, and a resume after it.
        func disappeared(_ status: SourceStatus) -> Bool {
            status.state == .interrupted && status.reason?.hasPrefix("/dev/video0: the device disappeared") == true
        }
        func resumedAfterUnplug(_ states: [SourceStatus]) -> Bool {
            guard let index = states.firstIndex(where: disappeared) else { return false }
            return states[(index + 1)...].contains { $0.state == .resumed }
        }
        var states: [SourceStatus] = []
        let deadline = Date().addingTimeInterval(120)
        var unplugged = false
        while Date() < deadline, !resumedAfterUnplug(states) {
            // Unplug while frames flow, not while the source reconnects after a stall.
            if !unplugged, pipeline.counters.framesIn > 10, states.last?.state != .interrupted {
                unplugged = true
                let control = try ExternalTool.run("v4l2-ctl", ["-d", "/dev/video0", "-c", "disconnect=1"])
                #expect(control.status == 0)
            }
            if let received = try subscriber.receive(timeout: .milliseconds(100)) {
                states.append(received.message.status!)
                // A stall that began just before the unplug closed the device first: vivid
                // reconnects it once no one holds it, and the source never saw it go. Again.
                if received.message.status?.state == .resumed, !states.contains(where: disappeared) {
                    unplugged = false
                }
            }
        }
        // Frames flow again after the resume.
        let framesAtResume = pipeline.counters.framesIn
        while pipeline.counters.framesIn < framesAtResume + 5, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        pipeline.stop()
        let counters = try await run.value
        #expect(states.first?.state == .started, "\(states)")
        #expect(resumedAfterUnplug(states), "\(states)")
        let interruptions = states.filter { $0.state == .interrupted }.count
        #expect(interruptions == states.filter { $0.state == .resumed }.count, "\(states)")
        #expect(counters.interruptions == interruptions)
        #expect(counters.framesIn >= framesAtResume + 5)
    }
}
