import Foundation
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlinePipeline
import SightlineService
import SightlineTesting
import Synchronization
import Testing

@testable import SightlineCapture

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `sightline run` on a real V4L2 device (vivid inside vivid-run, or a camera): the status
/// messages a subscriber sees across an unplug.
@Suite(
    .serialized,
    .enabled(if: FileManager.default.fileExists(atPath: "/dev/video0"), "needs /dev/video0 (vivid-run or a camera)"))
struct V4L2PipelineTests {
    /// The camera at 640x360, 30 fps. Codes rather than faces: dlib takes seconds a frame in
    /// the emulated VM, and the camera is what these tests are about.
    private func cameraConfiguration(publish: String) throws -> PipelineConfiguration {
        var camera = V4L2Source.Options()
        camera.width = 640
        camera.height = 360
        camera.frameRate = 30
        camera.pixelFormat = .yuyv
        var configuration = PipelineConfiguration(source: .camera(path: "/dev/video0", options: camera))
        configuration.sourceID = "webcam"
        configuration.bus.publishing = .bind(try Endpoint(publish))
        configuration.video.mode = .off
        configuration.detection.detectors = [.codes]
        return configuration
    }

    @Test func anUnplugIsPublishedAsInterruptedThenResumed() async throws {
        let endpoint = try Endpoint("inproc://v4l2-pipeline")
        let configuration = try cameraConfiguration(publish: endpoint.string)
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

    /// `/health` over real HTTP, as a probe sees it: 503 naming the interruption while the
    /// camera is unplugged, 200 once it is back. vivid keeps a disconnected device away until
    /// every handle to it is closed: the test holds one, so the unplug lasts until it lets go.
    @Test func healthIsUnavailableWhileTheCameraIsUnplugged() async throws {
        var configuration = ServicesConfiguration()
        configuration.sources = [
            .init(id: "webcam", pipeline: try cameraConfiguration(publish: "inproc://v4l2-health"), recording: nil)
        ]
        configuration.metrics = OperationsEndpoint(host: "127.0.0.1", port: 0)
        let port = Mutex<Int?>(nil)
        let services = try SightlineServices(configuration: configuration, logger: logger) { listening in
            port.withLock { $0 = listening }
        }
        let run = Task { try await services.run() }
        func get(_ path: String) async -> (status: Int, body: String) {
            guard let port = port.withLock({ $0 }),
                let (body, response) = try? await URLSession.shared.data(
                    from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            else { return (0, "") }
            return ((response as! HTTPURLResponse).statusCode, String(decoding: body, as: UTF8.self))
        }
        let deadline = Date().addingTimeInterval(120)
        func waitFor(_ condition: () async -> Bool) async throws -> Bool {
            while Date() < deadline {
                if await condition() { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }
        let pipeline = services.runners[0]
        #expect(try await waitFor { await get("/health").status == 200 && pipeline.pipeline!.counters.framesIn > 10 })

        let holder = open("/dev/video0", O_RDWR)
        #expect(holder >= 0)
        #expect(try ExternalTool.run("v4l2-ctl", ["-d", "/dev/video0", "-c", "disconnect=1"]).status == 0)
        var unavailable = ""
        #expect(
            try await waitFor {
                let answer = await get("/health")
                if answer.status == 503 { unavailable = answer.body }
                return answer.status == 503 && answer.body.contains("webcam: interrupted: /dev/video0")
            })
        #expect(unavailable.contains("\"status\":\"unhealthy\""), "\(unavailable)")
        close(holder)
        #expect(try await waitFor { await get("/health").status == 200 })
        let metrics = await get("/metrics").body
        #expect(metrics.contains("sightline_source_up{source=\"webcam\"} 1.0"), "\(metrics)")
        #expect(!metrics.contains("sightline_interruptions_total{source=\"webcam\"} 0\n"), "\(metrics)")

        pipeline.pipeline?.stop()
        try await run.value
    }
}
