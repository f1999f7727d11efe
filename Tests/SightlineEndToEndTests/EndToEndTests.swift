import Foundation
import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlinePipeline
import SightlineSamples
import SightlineTesting
import Synchronization
import Testing

let logger = Logger(label: "test")

@Suite struct PipelineTests {
    /// A subscriber on tcp loopback receives the whole run: started, a faces message per
    /// analysed frame with faces, enter/leave pairs, one empty faces message per exit of
    /// the last face, and a stopped status whose counters account for every frame.
    @Test func subscriberReceivesTheRunEndToEnd() async throws {
        let endpoint = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        var configuration = PipelineConfiguration(source: SampleMedia.faces640x480.path)
        configuration.sourceID = "e2e"
        configuration.bus.publishing = .bind(endpoint)
        configuration.detection.discardLateFrames = false  // analyse every frame: the run is deterministic
        configuration.bus.waitForSubscriber = .seconds(20)
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: MessageKind.allCases, source: "e2e"))
        let counters = try await pipeline.runToCompletion()

        let received = try subscriber.collect { $0.last?.message.status?.state == .stopped }
        let messages = received.map(\.message)
        #expect(subscriber.rejected.isEmpty)
        let byKind = Dictionary(grouping: messages, by: \.kind)
        #expect(byKind[.status]?.first?.status?.state == .started)
        #expect(byKind[.status]?.first?.status?.input?.width == 640)
        let stopped = try #require(messages.last?.status)
        #expect(stopped.state == .stopped && stopped.reason == "end of source")
        #expect(stopped.counters == counters)

        // Every frame analysed; every sequence gap-free.
        #expect(counters.framesIn == 300)
        #expect(counters.outputs["detect"] == OutputCounters(delivered: 300))
        #expect(counters.detection?.count == 300)
        for (_, list) in byKind { #expect(list.map(\.seq) == Array(0..<UInt64(list.count))) }
        // The final status counts every message sent before it.
        #expect(counters.messagesPublished == messages.count - 1)

        let faces = byKind[.faces]!
        let withFaces = faces.filter { !$0.faces!.isEmpty }
        #expect(withFaces.count == 294)  // frames where dlib finds a face (Golden/…jsonl, ups0 thr0)
        #expect(faces.allSatisfy { $0.time != nil && $0.wallTimeNs > 0 })
        #expect(withFaces.allSatisfy { message in message.faces!.allSatisfy { $0.time == message.time } })

        let events = byKind[.events]!.map(\.event!)
        let entered = events.filter { $0.change == .enter }.map(\.id)
        let left = events.filter { $0.change == .leave }.map(\.id)
        #expect(entered == [1, 2, 3, 4])
        #expect(Set(left) == Set(entered))
        // Every face object in the stream carries an ID that entered before.
        let ids = Set(withFaces.flatMap { $0.faces!.map(\.faceID) })
        #expect(ids == Set(entered))
        // Boxes are normalised to the frame.
        for face in withFaces.flatMap(\.faces!) {
            #expect(face.bounds.width > 0.1 && face.bounds.width < 0.5)
            #expect(face.bounds.x > -0.2 && face.bounds.x < 1)
        }
        try checkSnapshots(received.filter { $0.message.kind == .snapshots }, faces: withFaces, entered: entered)
    }

    /// Each face is taken as it enters, later only when its score has grown (never more than
    /// four a second); each JPEG shows its frame with the face's box of that frame in green.
    func checkSnapshots(_ snapshots: [ReceivedMessage], faces: [Message], entered: [Int]) throws {
        let taken = try snapshots.map { ($0.message, try #require($0.message.snapshot)) }
        #expect(Set(taken.map(\.1.id)) == Set(entered))
        let times = taken.map { $0.0.time!.seconds }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 0.25 - 1e-9 }, "\(times)")
        let facesAt = Dictionary(faces.map { ($0.time!, $0.faces!) }, uniquingKeysWith: { a, _ in a })
        var lastScore: [Int: (Double, Double)] = [:]
        for (message, snapshot) in taken {
            let face = try #require(facesAt[message.time!]?.first { $0.faceID == snapshot.id })
            #expect(snapshot.bounds == face.bounds && snapshot.score == face.score && snapshot.object == "face")
            #expect(
                message.frame == FrameInfo(format: .jpeg, width: 640, height: 480, sourceWidth: 640, sourceHeight: 480))
            if let (score, time) = lastScore[snapshot.id] {
                #expect(face.score > score + 0.1 * max(abs(score), 0.1) && message.time!.seconds - time >= 1)
            }
            lastScore[snapshot.id] = (face.score, message.time!.seconds)
        }
        // ffmpeg reads the first one: green along the top of its box.
        let (first, payload) = (taken[0].1, try #require(snapshots[0].payload))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("snapshot-\(UUID()).jpg").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(payload).write(to: URL(fileURLWithPath: path))
        let image = try IndependentReaders.rgbFrame(path, at: 0, width: 640, height: 480)
        let top = Int(first.bounds.y * 480) + 1
        let xs = Int(first.bounds.x * 640) + 4..<Int((first.bounds.x + first.bounds.width) * 640) - 4
        #expect(xs.filter { image.isFaceGreen($0, top) }.count > xs.count * 9 / 10)
        #expect(!image.isFaceGreen(xs.lowerBound, top + 20))
    }

    /// The same run from frames held in memory, to a subscriber in the process (inproc: no
    /// port, no file), gives the same faces, IDs and events as the file gives.
    @Test func framesInMemoryGiveTheFilesFaces() async throws {
        let file = try MediaFileSource(url: SampleMedia.faces640x480.path)
        var frames: [VideoFrame] = []
        while case .frame(let frame) = try file.read() { frames.append(frame) }
        #expect(frames.count == 300)

        func run(_ source: PipelineSource, _ name: String) async throws -> [Message] {
            var configuration = PipelineConfiguration(source: source)
            configuration.bus.publishing = .bind(try Endpoint("inproc://memory-\(name)"))
            configuration.detection.discardLateFrames = false
            configuration.video.mode = .off
            configuration.bus.waitForSubscriber = .seconds(20)
            let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
            let subscriber = try Subscriber(
                endpoints: [configuration.bus.endpoint],
                topics: Subscriber.topics(kinds: [.faces, .events, .status], source: nil))
            let counters = try await pipeline.runToCompletion()
            #expect(counters.framesIn == 300 && counters.outputs["detect"] == OutputCounters(delivered: 300))
            return try subscriber.collect { $0.last?.message.status?.state == .stopped }.map(\.message)
        }
        let fromMemory = try await run(.frames(frames, input: file.input), "frames")
        let fromFile = try await run(.named(SampleMedia.faces640x480.path), "file")
        func faces(_ messages: [Message]) -> [[FaceObject]] { messages.compactMap(\.faces).filter { !$0.isEmpty } }
        #expect(faces(fromMemory).count == 294)
        #expect(faces(fromMemory) == faces(fromFile))
        #expect(fromMemory.compactMap(\.event) == fromFile.compactMap(\.event))
        #expect(fromMemory.first?.status?.input?.url == SampleMedia.faces640x480.path)
    }

    @Test func failsFastOnBadInput() throws {
        var configuration = PipelineConfiguration(source: "/no/such/file.mp4")
        configuration.bus.publishing = .bind(try Endpoint("inproc://bad-input"))
        #expect(throws: SightlineError.sourceUnavailable(source: "/no/such/file.mp4", reason: "no such file")) {
            try AnalysisPipeline(configuration: configuration, logger: logger)
        }
        configuration.source = .named(SampleMedia.faces640x480.path)
        configuration.sourceID = "a/b"
        #expect(throws: SightlineError.self) { try AnalysisPipeline(configuration: configuration, logger: logger) }
    }
}

/// The `sightline` executable run as a user would: one clear line on stderr and a
/// non-zero exit for each kind of bad input, never a crash or a stack trace.
@Suite struct CommandLineTests {
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("sightline")
    }

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderrLines: [String]
    }

    /// Runs sightline; `signal` is sent once, if given, `after` seconds counted from its
    /// first output (a busy machine can take seconds to start it). `interruptWhen`: SIGINT
    /// is sent once, when a line of stderr contains that text.
    /// `stdoutReadAfter`: standard output is left unread for that long, as a slow reader would.
    /// `stdoutClosedAfter`: its reader closes it after that many bytes, as `| head -c` does.
    /// `timeout` only ends a run that hangs: a whole clip analysed and recorded by a debug
    /// build beside the other suites on a loaded CI machine took over 30 s.
    func sightline(
        _ arguments: [String], timeout: TimeInterval = 300, signal: (Int32, after: TimeInterval)? = nil,
        interruptWhen: String? = nil, stdoutReadAfter: TimeInterval = 0, stdoutClosedAfter: Int = .max
    ) throws -> Outcome {
        let process = Process()
        var url = Self.executable
        // In `swift test` the test runner's argv[0] is the xctest bundle or swift-testing helper.
        if !FileManager.default.isExecutableFile(atPath: url.path) {
            url = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("sightline")
        }
        process.executableURL = url
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes while the process runs, or a full pipe would stall it.
        let stdoutData = Collected()
        let stderrData = Collected()
        let readers = DispatchGroup()
        for (pipe, sink, delay, limit) in [
            (out, stdoutData, stdoutReadAfter, stdoutClosedAfter), (err, stderrData, 0, .max),
        ] {
            DispatchQueue.global().async(group: readers) {
                if delay > 0 { Thread.sleep(forTimeInterval: delay) }
                while case let data = pipe.fileHandleForReading.availableData, !data.isEmpty {
                    let count = sink.data.withLock {
                        $0.append(data.prefix(limit - $0.count))
                        return $0.count
                    }
                    if count >= limit {
                        try? pipe.fileHandleForReading.close()
                        return
                    }
                }
            }
        }
        let started = Date()
        var firstOutput: Date?
        var signalled = false
        while process.isRunning && Date() < started.addingTimeInterval(timeout) {
            if firstOutput == nil, !stdoutData.data.withLock(\.isEmpty) || !stderrData.data.withLock(\.isEmpty) {
                firstOutput = Date()
            }
            if let signal, !signalled, let firstOutput, Date() > firstOutput.addingTimeInterval(signal.after) {
                kill(process.processIdentifier, signal.0)
                signalled = true
            }
            if let interruptWhen, !signalled,
                String(decoding: stderrData.data.withLock { $0 }, as: UTF8.self).contains(interruptWhen)
            {
                kill(process.processIdentifier, SIGINT)
                signalled = true
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        if process.isRunning {
            Issue.record("sightline \(arguments) still running after \(timeout) s")
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        readers.wait()
        let stderr = String(decoding: stderrData.data.withLock { $0 }, as: UTF8.self)
        return Outcome(
            status: process.terminationStatus,
            stdout: String(decoding: stdoutData.data.withLock { $0 }, as: UTF8.self),
            stderrLines: stderr.split(separator: "\n").map(String.init).filter { !$0.isEmpty })
    }

    func expectOneLineError(_ arguments: [String], mentioning text: String) throws {
        let outcome = try sightline(arguments)
        #expect(outcome.status != 0, "\(arguments)")
        #expect(outcome.status != 6 && outcome.status < 128, "crashed: \(arguments)")  // SIGABRT, signals
        let errors = outcome.stderrLines.filter { $0.hasPrefix("Error:") }
        #expect(errors.count == 1, "\(arguments): \(outcome.stderrLines)")
        #expect(errors.first?.contains(text) == true, "\(arguments): \(outcome.stderrLines)")
        #expect(!outcome.stderrLines.contains { $0.contains("Fatal error") || $0.contains("Stack dump") })
    }

    @Test func missingFile() throws {
        try expectOneLineError(
            ["run", "--source", "/no/such/file.mp4"], mentioning: "cannot open /no/such/file.mp4: no such file")
    }

    @Test func corruptVideo() throws {
        let garbage = FileManager.default.temporaryDirectory.appendingPathComponent("garbage-\(UUID()).mp4")
        try Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }).write(to: garbage)
        defer { try? FileManager.default.removeItem(at: garbage) }
        try expectOneLineError(["run", "--source", garbage.path], mentioning: "cannot open \(garbage.path)")
    }

    @Test func unreachableURL() throws {
        try expectOneLineError(
            ["run", "--source", "rtsp://127.0.0.1:\(Endpoint.freeLoopbackPort())/live"],
            mentioning: "cannot open rtsp://")
    }

    @Test func endpointInUse() throws {
        let endpoint = "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"
        let holder = try Publisher(endpoint: try Endpoint(endpoint), logger: logger)
        try expectOneLineError(["run", "--publish", endpoint], mentioning: "already in use")
        _ = holder
    }

    @Test(arguments: [
        (["run", "--publish", "nonsense"], "invalid endpoint 'nonsense'"),
        (["run", "--publish", "tcp://127.0.0.1:99999"], "invalid endpoint"),
        (["run", "--publish", "tcp://0.0.0.0:5999"], "--insecure"),
        (["events", "--connect", "udp://x"], "invalid endpoint"),
        (["run", "--upsample", "9"], "--upsample 9 must be from 0 to 3"),
        (["run", "--upsample", "-1"], "--upsample -1 must be from 0 to 3"),
        (["run", "--threshold", "-200"], "--threshold"),
        (["run", "--record", "/tmp/sightline-recording.mov"], "that is a file name; recordings go into a directory"),
        (["record", "--source-id", "cam1", "--out", SampleMedia.faces640x480.path], "it is a file"),
        (["export", SampleMedia.faces640x480.path, "-o", "/tmp/x.avi"], "export writes .mov"),
        (["run", "--control", "brightness=1"], "--control goes with a camera"),
        (["run", "--upsample", "many"], "--upsample"),
        (["run", "--threshold", "nan"], "threshold"),
        (["run", "--detector-threads", "0"], "--detector-threads 0 must be from 1 to 64"),
        (["run", "--detector-threads", "65"], "--detector-threads 65 must be from 1 to 64"),
        (["run", "--full-scan-interval", "0"], "--full-scan-interval 0 must be from 1 to 300"),
        (["run", "--full-scan-interval", "301"], "--full-scan-interval 301 must be from 1 to 300"),
        (["run", "--source-id", "a/b"], "source ID 'a/b'"),
        (["run", "--status-interval", "0"], "--status-interval"),
        (["run", "--status-interval", "1e308"], "--status-interval"),
        (["run", "--segment", "9999999999999h"], "--segment"),
        (["run", "--max-total", "9999999999T"], "--max-total"),
        (["run", "--fps", "nan"], "--fps"),
        (["run", "--source-id", String(repeating: "x", count: 10_000)], "(10000 bytes)"),
        (["events", "--idle-timeout", "1e300"], "--idle-timeout"),
        (["console", "--stale-after", "inf"], "--stale-after"),
        (["events", "--kind", "fish"], "unknown --kind 'fish'"),
        (["run", "--detect", "cats"], "--detect 'cats' is not one of: faces, barcodes"),
        (["run", "--detect", "face"], "--detect 'face' is not one of: faces, barcodes"),
        (["run", "--detect", "barcodes", "--code-types", "qr,bogus"], "unknown code type 'bogus'"),
        (["run", "--frames", "png"], "png"),
        (["run", "--publish", "inproc://bad2", "--frames", "gray8", "--frames-size", "10x10"], "at least 16x16"),
        (["run", "--publish", "inproc://bad", "--metadata-in", "tcp://0.0.0.0:5599"], "needs CURVE keys"),
        (
            ["record", "--source-id", "cam1", "--out", "/tmp/x", "--metadata-track", "udta/x=utf8"],
            "unknown identifier"
        ),
        (
            ["record", "--source-id", "cam1", "--out", "/tmp/x", "--metadata-track", "mdta/x.y=utf16"],
            "unknown data type"
        ),
        (["broker", "--curve-key", "/nonexistent.key"], "--curve-key and --allow go together"),
        (["export", "/no/such.mov", "-o", "/tmp/x.mov"], "/no/such.mov"),
        (["export", "README.md", "-o", "/tmp/x.mov"], "not a readable movie"),
        (["export", SampleMedia.faces640x480.path, "-o", "/tmp/x.mov", "--from", "5", "--to", "4"], "must come after"),
        (["export", SampleMedia.faces640x480.path, "-o", "/tmp/x.mov", "--from", "30"], "outside the movie"),
        (["export", SampleMedia.faces640x480.path, "-o", "/tmp/x.mov", "--from", "1:xx"], "is not a time"),
        (["export", SampleMedia.faces640x480.path, "-o", "/tmp/x.mov", "--around-face", "3"], "no face 3"),
        (["export", SampleMedia.faces640x480.path, "-o", "/no/such/dir/x.mov"], "not a writable directory"),
        (["export", SampleMedia.faces640x480.path, "-o", SampleMedia.faces640x480.path], "pass --overwrite"),
    ])
    func badOptions(arguments: [String], text: String) throws {
        try expectOneLineError(arguments, mentioning: text)
    }

    /// A subscriber connected where nothing publishes says so instead of waiting in silence.
    @Test func aSilentWaitIsSaid() throws {
        let endpoint = "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"
        let outcome = try sightline(["events", "--connect", endpoint, "--idle-timeout", "6"])
        #expect(outcome.status == 0)
        #expect(
            outcome.stderrLines.contains {
                $0.contains("waiting for messages: nothing yet after ") && $0.contains("connect=\(endpoint)")
            }, "\(outcome.stderrLines)")
    }

    /// A value refused once `run` runs points at `run`'s help, not the top-level usage.
    @Test func aRefusedValuePointsAtItsCommandsHelp() throws {
        let outcome = try sightline(["run", "--detect", "face"])
        #expect(
            outcome.stderrLines == [
                "Error: --detect 'face' is not one of: faces, barcodes", "See 'sightline run --help' for the options.",
            ])
    }

    /// An option of one kind of source given to another is refused before anything opens:
    /// one line naming both, exit 1 (a camera that does not exist is not even looked for).
    @Test(arguments: [
        (["--size", "1280x720"], "--size goes with a camera (/dev/video…), not with /"),
        (["--fps", "15"], "--fps goes with a camera"),
        (["--pixel-format", "mjpeg"], "--pixel-format goes with a camera"),
        (["--reconnect-timeout", "5"], "--reconnect-timeout goes with a camera"),
        (["--source", "/dev/video-none", "--realtime"], "--realtime goes with a file, not with /dev/video-none"),
        (["--source", "/dev/video-none", "--loop"], "--loop goes with a file, not with /dev/video-none"),
        (["--source", "/dev/video-none", "--network-timeout", "2"], "--network-timeout goes with a file, not with"),
        (["--source", "/dev/video-none", "--audio", "aac"], "--audio aac: /dev/video-none is a camera"),
    ])
    func optionsOfAnotherKindOfSource(arguments: [String], text: String) throws {
        let outcome = try sightline(["run", "--publish", "inproc://mismatch"] + arguments)
        #expect(outcome.status == 1)
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderrLines)")
        #expect(outcome.stderrLines.first?.contains(text) == true, "\(outcome.stderrLines)")
    }

    /// SIGINT and SIGTERM stop a live run gracefully: exit 0 and a final status whose
    /// counters account for every frame.
    @Test(arguments: [SIGINT, SIGTERM])
    func signalStopsGracefully(signal: Int32) throws {
        let outcome = try sightline(
            ["run", "--realtime", "--loop", "--print", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"],
            timeout: 20, signal: (signal, after: 2))
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        let last = try JSONDecoder().decode(Message.self, from: Data(outcome.stdout.split(separator: "\n").last!.utf8))
        let status = try #require(last.status)
        #expect(status.state == .stopped && status.reason == "stopped")
        let counters = try #require(status.counters)
        let detect = try #require(counters.outputs["detect"])
        #expect(counters.framesIn > 5)  // it was running when the signal came
        #expect(detect.delivered + detect.droppedTotal == counters.framesIn)
    }

    /// A run stopped before its first frame (here while it waits for a subscriber) stopped as
    /// asked: at once, not when the wait runs out (which it says), exit 0, no frame counted,
    /// and no error that none could be decoded.
    @Test func aRunStoppedBeforeItsFirstFrameIsNoFailure() throws {
        let outcome = try sightline(
            [
                "run", "--wait-for-subscriber", "20", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ], timeout: 60, signal: (SIGINT, after: 2))
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        #expect(!outcome.stderrLines.contains { $0.contains("no frame could be decoded") })
        #expect(!outcome.stderrLines.contains { $0.contains("no subscriber after") })
        #expect(outcome.stderrLines.contains { $0.contains("framesIn=0") && $0.contains("reason=stopped") })
    }

    /// The main command on the bundled sample, printing what it publishes, all of it even to
    /// a reader that leaves it waiting longer than the run takes (the pipe fills after about
    /// 80 messages).
    @Test(arguments: [0, 6] as [TimeInterval])
    func runPrintsItsEvents(readAfter: TimeInterval) throws {
        let outcome = try sightline(
            ["run", "--print", "--every-frame", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"],
            timeout: 60, stdoutReadAfter: readAfter)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        let lines = outcome.stdout.split(separator: "\n")
        let messages = try lines.map { try JSONDecoder().decode(Message.self, from: Data($0.utf8)) }
        #expect(messages.first?.status?.state == .started)
        #expect(messages.last?.status?.state == .stopped)
        #expect(messages.filter { $0.event?.change == .enter }.count == 4)
        #expect(messages.filter { $0.kind == .faces && !$0.faces!.isEmpty }.count == 294)
    }

    /// Region tracking from the command line: the same faces, exactly, on this sample (a full
    /// scan every 5 frames, only around the faces between), and the mode in the start line.
    @Test func runWithRegionTrackingPublishesTheSameFaces() throws {
        func faces(_ extra: [String]) throws -> (faces: [[FaceObject]], stderr: [String]) {
            let outcome = try sightline(
                ["run", "--print", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"] + extra, timeout: 90)
            #expect(outcome.status == 0, "\(outcome.stderrLines)")
            let messages = try outcome.stdout.split(separator: "\n").map {
                try JSONDecoder().decode(Message.self, from: Data($0.utf8))
            }
            return (messages.filter { $0.kind == .faces }.map { $0.faces ?? [] }, outcome.stderrLines)
        }
        let whole = try faces([])
        let tracked = try faces(["--full-scan-interval", "5", "--motion-gate"])
        #expect(tracked.stderr.contains { $0.contains("full-scan-interval=5") && $0.contains("motion-gate=true") })
        let boxes = { (frames: [[FaceObject]]) in frames.map { $0.map(\.bounds) } }
        let same = zip(boxes(whole.faces), boxes(tracked.faces)).filter { $0 == $1 }.count
        #expect(whole.faces.count == tracked.faces.count)
        #expect(Double(same) >= 0.98 * Double(whole.faces.count), "\(same) of \(whole.faces.count) frames the same")
    }

    /// A live source (a file paced in real time) that tracks makes its full scans beside the
    /// tracking detector: the start line says so, and every box it publishes is one the full
    /// scan of that frame has (a frame dropped late on a busy machine publishes nothing).
    @Test func aLiveSourceTrackingPublishesOnlyFullScanBoxes() throws {
        func faces(_ extra: [String]) throws -> (faces: [Int64: [NormalizedRect]], stderr: [String]) {
            let outcome = try sightline(
                ["run", "--print", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"] + extra, timeout: 120)
            #expect(outcome.status == 0, "\(outcome.stderrLines)")
            var faces: [Int64: [NormalizedRect]] = [:]
            for line in outcome.stdout.split(separator: "\n") {
                let message = try JSONDecoder().decode(Message.self, from: Data(line.utf8))
                if message.kind == .faces, let time = message.time { faces[time.value] = message.faces?.map(\.bounds) }
            }
            return (faces, outcome.stderrLines)
        }
        let whole = try faces([])
        let live = try faces(["--realtime", "--full-scan-interval", "5"])
        #expect(live.stderr.contains { $0.contains("full-scans-beside=true") && $0.contains("analysis=dropLate") })
        #expect(whole.stderr.contains { $0.contains("full-scans-beside=false") })
        #expect(live.faces.values.reduce(0) { $0 + $1.count } > 100)
        for (time, boxes) in live.faces {
            #expect(boxes.allSatisfy { whole.faces[time]?.contains($0) == true }, "at \(time): \(boxes)")
        }
    }

    /// A file analysed whole detects successive frames at the same time, one per detector
    /// thread, and tracking it makes its full scans ahead on a thread of their own: what it
    /// publishes is exactly what one thread publishes (boxes, landmarks, IDs, events,
    /// times), in the same order; the start line says which.
    @Test(arguments: [1, 5])
    func framesDetectedAtOnceArePublishedAsOneThreadPublishesThem(fullScanInterval: Int) throws {
        func run(threads: Int) throws -> (messages: [Message], stderr: [String]) {
            let outcome = try sightline(
                [
                    "run", "--print", "--detector-threads", "\(threads)", "--full-scan-interval",
                    "\(fullScanInterval)", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
                ], timeout: 120)
            #expect(outcome.status == 0, "\(outcome.stderrLines)")
            let messages = try outcome.stdout.split(separator: "\n").map {
                try JSONDecoder().decode(Message.self, from: Data($0.utf8))
            }
            // Wall times are when each run decoded the frame; everything else must match.
            let published = messages.filter { $0.kind == .faces || $0.kind == .events }.map {
                var message = $0
                message.wallTimeNs = 0
                return message
            }
            return (published, outcome.stderrLines)
        }
        let one = try run(threads: 1)
        let three = try run(threads: 3)
        let tracking = fullScanInterval > 1
        #expect(one.stderr.contains { $0.contains("frames-at-once=1") && $0.contains("full-scans-ahead=false") })
        #expect(
            three.stderr.contains {
                $0.contains("frames-at-once=\(tracking ? 1 : 3)") && $0.contains("full-scans-ahead=\(tracking)")
            })
        let withFaces = one.messages.filter { $0.kind == .faces && !$0.faces!.isEmpty }.count
        #expect(tracking ? withFaces > 280 : withFaces == 294)
        #expect(one.messages.count == three.messages.count)
        let differing = zip(one.messages, three.messages).enumerated().filter { $1.0 != $1.1 }.map(\.offset)
        #expect(differing.isEmpty, "messages \(differing.prefix(5)) of \(one.messages.count) differ")
    }

    static let movieTests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SightlineMovieTests")

    /// `inspect` on the iPhone-layout fixture: the track list, then every group as JSON.
    @Test func inspectPrintsTracksAndMetadata() throws {
        let fixture = Self.movieTests.appendingPathComponent("Fixtures/iphone-layout.mov").path
        let summary = try sightline(["inspect", fixture])
        #expect(summary.status == 0)
        #expect(summary.stdout.contains("3 tracks, finalised"))
        #expect(summary.stdout.contains("track 3: meta mebx, 101 samples, 4.000 s, timescale 600, describes track 2"))
        #expect(
            summary.stdout.contains("key 1: mdta/com.apple.quicktime.detected-face (com.apple.quicktime.detected-face)")
        )

        let metadata = try sightline(["inspect", fixture, "--metadata"])
        let lines = try metadata.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.count == 102)
        #expect(lines.map { $0["track"] as? Int } == Array(repeating: 3, count: 101) + [4])
        #expect((lines[0]["items"] as? [Any])?.isEmpty == true)
        #expect(lines[1]["time"] as? Double == 1.0 / 30)
        let face = ((lines[1]["items"] as? [[String: Any]])?.first?["value"] as? [[[String: Any]]])?.first
        #expect(
            face?.first { $0["identifier"] as? String == "fiel/com.apple.quicktime.detected-face.bounds" }?["value"]
                as? [Double]
                == [0.26, 0.3764, 0.3704, 0.3764, 0.3704, 0.5756, 0.26, 0.5756])
        #expect(
            face?.first { $0["identifier"] as? String == "fiel/com.apple.quicktime.detected-face.face-id" }?["value"]
                as? Int == 1)
        #expect((lines[101]["items"] as? [[String: Any]])?.first?["value"] as? Int == 6)

        try expectOneLineError(["inspect", fixture, "--metadata", "--track", "9"], mentioning: "no metadata track 9")
        try expectOneLineError(
            ["inspect", "/etc/hostname"],
            mentioning: "/etc/hostname is not a readable movie: not a QuickTime or MP4 file")
        try expectOneLineError(
            ["inspect", "/no/such.mov"], mentioning: "opening /no/such.mov failed: No such file or directory")
    }

    @Test func recordingToAnUnwritableDirectory() throws {
        try expectOneLineError(
            ["record", "--out", "/proc/sightline-recordings"],
            mentioning: "cannot record to /proc/sightline-recordings:")
        // Said even when the port to publish on is busy: the directory is checked first.
        let busy = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        try withExtendedLifetime(try Publisher(endpoint: busy, logger: logger)) {
            try expectOneLineError(
                ["run", "--record", "/proc/sightline-recordings", "--publish", busy.string],
                mentioning: "cannot record to /proc/sightline-recordings:")
        }
        try expectOneLineError(["record", "--segment", "ten"], mentioning: "--segment 'ten' is not a duration")
    }

    /// `recover` on a recording cut off in its third fragment.
    @Test func recoverFinalisesACutRecording() throws {
        let fragmented = Self.movieTests.appendingPathComponent("Corpus/small-fragmented.mov")
        let bytes = try Data(contentsOf: fragmented)
        let cut = FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID()).mov")
        defer { try? FileManager.default.removeItem(at: cut) }
        try bytes.prefix(bytes.count - 100).write(to: cut)
        #expect(try sightline(["inspect", cut.path]).stdout.contains("fragmented"))
        let recovered = try sightline(["recover", cut.path])
        #expect(recovered.status == 0)
        #expect(recovered.stdout.hasPrefix("\(cut.path): recovered "))
        #expect(try sightline(["inspect", cut.path]).stdout.contains("finalised"))
        #expect(try sightline(["recover", cut.path]).stdout == "\(cut.path): already finalised\n")
        try expectOneLineError(["recover", "/etc/hostname"], mentioning: "not a QuickTime or MP4 file")
    }
}

final class Collected: Sendable {
    let data = Mutex(Data())
}
