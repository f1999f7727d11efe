import Foundation
import Logging
import SightlineCapture
import SightlineCore
import SightlineSamples
import SightlineTesting
import Synchronization
import Testing

let logger = Logger(label: "test")

/// Records what it is given, taking `delay` over each frame: a deliberately slow output.
final class RecordingDelegate: FrameDataOutputDelegate {
    let delay: Duration
    let received = Mutex<[Int]>([])
    init(delay: Duration = .zero) { self.delay = delay }
    func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        if delay > .zero { Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18) }
        received.withLock { $0.append(frame.index) }
    }
}

/// Holds its first frame until opened, then takes `delay` over each.
final class GatedDelegate: FrameDataOutputDelegate {
    let delay: Duration
    private let gate = DispatchSemaphore(value: 0)
    private let opened = Atomic<Bool>(false)
    init(delay: Duration) { self.delay = delay }
    func open() { gate.signal() }
    func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        if !opened.exchange(true, ordering: .acquiringAndReleasing) { gate.wait() }
        Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18)
    }
}

@Suite struct MediaFileSourceTests {
    @Test func decodesEveryFrameWithItsTime() throws {
        let source = try MediaFileSource(url: SampleMedia.faces640x480.path)
        #expect(source.input.width == 640 && source.input.height == 480)
        #expect(source.input.frameRate == 30)
        var times: [MediaTime] = []
        while case .frame(let frame) = try source.read() {
            #expect(frame.pixels.format == .yuv420p)
            #expect(frame.index == times.count)
            times.append(frame.time)
        }
        #expect(times.count == 300)
        #expect(times.enumerated().allSatisfy { $0.element == MediaTime(value: Int64($0.offset), timescale: 30) })
    }

    @Test func loopsWithIncreasingTimes() throws {
        let source = try MediaFileSource(url: SampleMedia.faces640x480.path, options: .init(loop: true))
        var last = MediaTime(value: -1, timescale: 1)
        for n in 0..<330 {
            guard case .frame(let frame) = try source.read() else {
                Issue.record("ended at \(n)")
                return
            }
            #expect(frame.time > last)
            last = frame.time
        }
        #expect(last == MediaTime(value: 329, timescale: 30))
    }

    @Test func pacesToRealTime() throws {
        let source = try MediaFileSource(url: SampleMedia.faces640x480.path, options: .init(realtime: true))
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<16 { _ = try source.read() }
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(490))  // frame 15 is due 0.5 s after frame 0
    }

    @Test func skipsCorruptFramesAndGoesOn() throws {
        let copy = try corruptedCopyOfSample()
        let source = try MediaFileSource(url: copy.path)
        var frames = 0
        var skipped = 0
        loop: while true {
            switch try source.read() {
            case .frame: frames += 1
            case .skipped: skipped += 1
            case .end: break loop
            case .interrupted, .resumed: Issue.record("a file is never interrupted")
            }
        }
        #expect(skipped > 0)
        #expect(frames > 200)  // the frames after the damage still decode
    }

    @Test func explainsWhyASourceCannotOpen() throws {
        #expect(throws: SightlineError.sourceUnavailable(source: "/no/such.mp4", reason: "no such file")) {
            try MediaFileSource(url: "/no/such.mp4")
        }
        let garbage = FileManager.default.temporaryDirectory.appendingPathComponent("garbage-\(UUID()).mp4")
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: garbage)
        defer { try? FileManager.default.removeItem(at: garbage) }
        #expect(throws: SightlineError.self) { try MediaFileSource(url: garbage.path) }
        #expect(throws: SightlineError.self) { try MediaFileSource(url: "rtsp://127.0.0.1:1/nothing") }
    }
}

/// The sample with a run of bytes in the middle of the media data overwritten.
func corruptedCopyOfSample() throws -> URL {
    var bytes = try Data(contentsOf: SampleMedia.faces640x480)
    let middle = bytes.count / 2
    for i in middle..<(middle + 6000) { bytes[i] = UInt8(truncatingIfNeeded: i &* 31) }
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("corrupt-\(UUID()).mp4")
    try bytes.write(to: url)
    return url
}

@Suite struct CaptureSessionTests {
    /// A slow output on a fast source: it sees the newest frames, every other frame is
    /// counted as late, and capture is not held up.
    @Test func slowOutputGetsNewestFramesAndDropsAreCounted() async throws {
        let slow = RecordingDelegate(delay: .milliseconds(20))
        let fast = RecordingDelegate()
        let slowOutput = FrameDataOutput(name: "slow", delegate: slow)
        let everyFrame = FrameDataOutput(name: "all", delegate: fast, alwaysDiscardsLateFrames: false)
        let session = CaptureSession(
            source: try MediaFileSource(url: SampleMedia.faces640x480.path), outputs: [slowOutput, everyFrame],
            logger: logger)
        #expect(try await session.run() == .endOfSource)

        let counters = session.counters
        #expect(counters.framesIn == 300)
        let slowCounters = counters.outputs["slow"]!
        #expect(slowCounters.delivered + slowCounters.dropped["late", default: 0] == 300)
        #expect(slowCounters.dropped["late", default: 0] > 100)
        let seen = slow.received.withLock { $0 }
        #expect(seen.count == slowCounters.delivered)
        #expect(seen == seen.sorted() && Set(seen).count == seen.count)
        #expect(seen.last == 299)  // the newest frame is delivered at the end
        #expect(slowOutput.maxBacklog <= 1)

        #expect(counters.outputs["all"] == OutputCounters(delivered: 300))
        #expect(fast.received.withLock { $0 } == Array(0..<300))
    }

    /// An every-frame output with a bound holds the source back instead of queueing the file.
    @Test func boundedOutputHoldsTheSourceBack() async throws {
        let slow = RecordingDelegate(delay: .milliseconds(2))
        let output = FrameDataOutput(
            name: "all", delegate: slow, alwaysDiscardsLateFrames: false, maximumFramesInFlight: 3)
        let session = CaptureSession(
            source: try MediaFileSource(url: SampleMedia.faces640x480.path), outputs: [output], logger: logger)
        #expect(try await session.run() == .endOfSource)
        #expect(output.maxBacklog <= 2)  // one in the delegate, at most two waiting
        #expect(session.counters.outputs["all"] == OutputCounters(delivered: 300))
        #expect(slow.received.withLock { $0 } == Array(0..<300))
    }

    /// Frames waiting when the session stops are dropped as `shutdown`, not delivered. The
    /// delegate holds its first frame until the output's queue is full, so frames are
    /// waiting whatever the machine's load (a stop after a fixed time once found none); the
    /// output is bounded, as a looping file decodes far faster than the delegate takes frames.
    /// They are dropped as the stop is asked for: dropped only once the capture thread had
    /// ended, on a loaded machine they had all been delivered by then.
    @Test func stopDropsWaitingFramesAsShutdown() async throws {
        let slow = GatedDelegate(delay: .milliseconds(100))
        let output = FrameDataOutput(
            name: "slow", delegate: slow, alwaysDiscardsLateFrames: false, maximumFramesInFlight: 30)
        let session = CaptureSession(
            source: try MediaFileSource(url: SampleMedia.faces640x480.path, options: .init(loop: true)),
            outputs: [output],
            logger: logger)
        Task {
            while output.maxBacklog < 29 { try await Task.sleep(for: .milliseconds(10)) }
            session.stop()
            slow.open()
        }
        #expect(try await session.run() == .stopped)
        let counters = session.counters
        let out = counters.outputs["slow"]!
        #expect(out.delivered + out.droppedTotal == counters.framesIn)
        #expect(out.dropped["shutdown", default: 0] > 0)
    }

    /// An output says when its delegate starts each frame and when it is done with it, as
    /// often one as the other and never two starts in a row: the scans beside a live
    /// source's tracking give way in between, and an output left saying "started" would hold
    /// them back for good.
    @Test func delegateStartsAndEndsAreToldInPairs() async throws {
        let told = Mutex<[Bool]>([])
        let output = FrameDataOutput(
            name: "slow", delegate: RecordingDelegate(delay: .milliseconds(5)),
            onDelegate: { started in told.withLock { $0.append(started) } })
        let session = CaptureSession(
            source: try MediaFileSource(url: SampleMedia.faces640x480.path), outputs: [output], logger: logger)
        #expect(try await session.run() == .endOfSource)
        await output.drain()
        let changes = told.withLock { $0 }
        #expect(output.counters.dropped["late", default: 0] > 0)
        #expect(changes.count == 2 * output.counters.delivered)
        #expect(changes == Array(repeating: [true, false], count: output.counters.delivered).flatMap { $0 })
    }

    /// Cancelling the task that runs a session stops it as `stop()` does, including a file
    /// paced in real time that is waiting for its next frame.
    @Test func cancellingTheTaskStopsCapture() async throws {
        let delegate = RecordingDelegate()
        let output = FrameDataOutput(name: "all", delegate: delegate)
        let session = CaptureSession(
            source: try MediaFileSource(
                url: SampleMedia.faces640x480.path, options: .init(realtime: true, loop: true)),
            outputs: [output], logger: logger)
        let running = Task { try await session.run() }
        while delegate.received.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(10)) }
        running.cancel()
        #expect(try await running.value == .stopped)
        let counters = session.counters
        #expect(counters.framesIn >= 3)
        #expect(counters.outputs["all"].map { $0.delivered + $0.droppedTotal } == counters.framesIn)
    }

    @Test func countsCorruptFramesAndRunsToTheEnd() async throws {
        let copy = try corruptedCopyOfSample()
        defer { try? FileManager.default.removeItem(at: copy) }
        let output = FrameDataOutput(name: "all", delegate: RecordingDelegate(), alwaysDiscardsLateFrames: false)
        let session = CaptureSession(source: try MediaFileSource(url: copy.path), outputs: [output], logger: logger)
        #expect(try await session.run() == .endOfSource)
        #expect(session.counters.sourceSkipped["corrupt", default: 0] > 0)
        #expect(session.counters.framesIn > 200)
    }
}

/// A network source for real: Python's HTTP server on loopback serves the sample.
@Suite struct NetworkSourceTests {
    @Test func decodesAnHTTPStream() throws {
        let port = 20000 + Int.random(in: 0..<20000)
        // The interpreter itself, not a launcher in front of it (pyenv's shim), so that the
        // server is the process killed below.
        let python = try ExternalTool.run("python3", ["-c", "import sys; print(sys.executable)"])
        let server = Process()
        server.executableURL = URL(fileURLWithPath: python.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        server.arguments = ["-m", "http.server", "--bind", "127.0.0.1", "\(port)"]
        server.currentDirectoryURL = SampleMedia.faces640x480.deletingLastPathComponent()
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // SIGKILL: a process Foundation starts from a Dispatch thread inherits that thread's
        // blocked SIGTERM (swift-corelibs-foundation#4772), and `terminate()` left the server
        // running after the test.
        defer { kill(server.processIdentifier, SIGKILL) }
        let url = "http://127.0.0.1:\(port)/faces_640x480.mp4"
        var source: MediaFileSource?
        for _ in 0..<50 where source == nil {  // until the server listens
            source = try? MediaFileSource(url: url)
            if source == nil { Thread.sleep(forTimeInterval: 0.1) }
        }
        let opened = try #require(source)
        var frames = 0
        while case .frame(let frame) = try opened.read() {
            #expect(frame.time == MediaTime(value: Int64(frames), timescale: 30))
            frames += 1
        }
        #expect(frames == 300)
    }
}
