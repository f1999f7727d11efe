import Foundation
import SightlineBus
import SightlineCore
import SightlineMovie
import SightlineRecorder
import SightlineTesting
import Testing

/// What anyone who may publish on the bus can send a recorder: generated messages of every
/// kind with each number at its extremes, and the single messages that used to stop it.
/// None traps; each is refused (counted by reason) or handled; and the recorder records the
/// next run of its source in full afterwards.
extension RecorderTests {
    /// JSON numbers a field may be set to: zero, -1, the ends of the integer types, huge
    /// and tiny floats (JSON has no NaN or infinity: a message cannot carry them).
    static var extremes: [Any] {
        [0, -1, 1, Int64.min, Int64.max, UInt64.max, 1e308, -1e308, 0.5, 2_147_483_647, -2_147_483_648, 1 << 53]
    }

    /// The single messages of the issue that killed `record`, as JSON for source `probe`.
    static let probes: [(kind: MessageKind, json: String)] = [
        (
            .video,
            #"{"v":1,"kind":"video","source":"probe","seq":18446744073709551615,"time":{"value":0,"timescale":30},"wallTimeNs":1,"video":{"codec":"h264","keyFrame":true,"decodeTime":{"value":0,"timescale":30},"width":640,"height":480}}"#
        ),
        (
            .faces,
            #"{"v":1,"kind":"faces","source":"probe","seq":0,"time":{"value":1,"timescale":0},"wallTimeNs":1,"faces":[]}"#
        ),
        (
            .faces,
            #"{"v":1,"kind":"faces","source":"probe","seq":0,"time":{"value":1,"timescale":-30},"wallTimeNs":1,"faces":[]}"#
        ),
        (
            .faces,
            #"{"v":1,"kind":"faces","source":"probe","seq":0,"time":{"value":-9223372036854775808,"timescale":30},"wallTimeNs":1,"faces":[]}"#
        ),
        (
            .codes,
            #"{"v":1,"kind":"codes","source":"probe","seq":0,"time":{"value":1,"timescale":0},"wallTimeNs":1,"codes":[]}"#
        ),
        (
            .codes,
            #"{"v":1,"kind":"codes","source":"probe","seq":0,"time":{"value":1,"timescale":-1},"wallTimeNs":1,"codes":[]}"#
        ),
        (
            .codes,
            #"{"v":1,"kind":"codes","source":"probe","seq":0,"time":{"value":-9223372036854775808,"timescale":1},"wallTimeNs":1,"codes":[]}"#
        ),
    ]

    @Test func singleMessagesThatStoppedARecorderAreRefused() throws {
        for probe in Self.probes {
            let frames = [Array("\(probe.kind.rawValue)/probe/".utf8), Array(probe.json.utf8), [0, 0, 0, 1, 0x65]]
            switch Subscriber.decode(frames) {
            case .success: Issue.record("accepted: \(probe.json)")
            case .failure(let error): #expect(["outOfRange", "badFields"].contains(error.reason), "\(error)")
            }
        }
    }

    @Test func generatedMessagesNeverStopARecorder() async throws {
        let received = try await publishedMessages(source: "gen")
        let perKind = Int(ProcessInfo.processInfo.environment["SIGHTLINE_GENERATED_MESSAGES"] ?? "") ?? 10_000
        let templates = Self.templates(from: received)
        #expect(Set(templates.map(\.kind)) == Set(MessageKind.allCases))
        // The flood runs on a thread of its own; the recorder is made and used on it.
        try await onAThreadOfItsOwn {
            let recorder = try Recorder(
                configuration: RecorderConfiguration(sourceID: "gen", directory: directory.file("gen")), logger: logger)
            var random = SplitMix(seed: 32)
            var (accepted, refused) = ([MessageKind: Int](), [String: Int]())
            for template in templates {
                for _ in 0..<perKind {
                    var object = template.object
                    for _ in 0...random.next(below: 3) { Self.mutate(&object, &random) }
                    guard let json = try? JSONSerialization.data(withJSONObject: object) else { continue }
                    let frames = [Array("\(template.kind.rawValue)/gen/".utf8), Array(json), template.payload]
                    switch Subscriber.decode(frames.compactMap { $0 }) {
                    case .success(let message):
                        accepted[template.kind, default: 0] += 1
                        recorder.handle(message)
                    case .failure(let error):
                        refused[error.reason, default: 0] += 1
                    }
                }
            }
            #expect(refused["outOfRange", default: 0] > 0, "\(refused)")
            for kind in MessageKind.allCases { #expect(accepted[kind, default: 0] > 0, "no \(kind) accepted") }
            print("generated \(perKind) messages per kind: accepted \(accepted), refused \(refused)")

            // The source's next run is recorded whole after all that.
            var stopped = Message(
                kind: .status, source: "gen", time: nil, wallTimeNs: 1, status: SourceStatus(state: .stopped))
            stopped.seq = 0
            recorder.handle(ReceivedMessage(topic: "status/gen/", message: stopped, json: [], payload: nil))
            let before = recorder.counters.files.count
            for message in received { recorder.handle(message) }
            recorder.finish()
            let last = try #require(recorder.counters.files.last)
            #expect(recorder.counters.files.count == before + 1)
            #expect(try MovieReader(path: last).tracks[0].samples.count == 300)
            #expect(try decodedFrames(last) == 300)
        }
    }

    /// A run's H.264 labelled H.265, then labelled a codec Sightline does not carry: no file
    /// starts from parameter sets that are not H.265's, every frame is dropped and counted,
    /// and the same run labelled right is recorded whole afterwards.
    @Test func mislabelledVideoIsDroppedAndTheNextRunRecorded() async throws {
        let received = try await publishedMessages(source: "label")
        try await onAThreadOfItsOwn {
            let recorder = try Recorder(
                configuration: RecorderConfiguration(sourceID: "label", directory: directory.file("label")),
                logger: logger)
            let videos = received.filter { $0.message.kind == .video }
            #expect(videos.count == 300)
            for codec in ["hevc", "vp9"] {
                for received in received {
                    var message = received.message
                    message.video?.codec = codec
                    recorder.handle(
                        ReceivedMessage(
                            topic: received.topic, message: message, json: received.json, payload: received.payload))
                }
            }
            #expect(recorder.counters.files.isEmpty, "\(recorder.counters.files)")
            #expect(recorder.counters.framesDropped.values.reduce(0, +) == 600, "\(recorder.counters.framesDropped)")
            var stopped = Message(
                kind: .status, source: "label", time: nil, wallTimeNs: 1, status: SourceStatus(state: .stopped))
            stopped.seq = 0
            recorder.handle(ReceivedMessage(topic: "status/label/", message: stopped, json: [], payload: nil))
            for message in received { recorder.handle(message) }
            recorder.finish()
            let file = try #require(recorder.counters.files.last)
            #expect(recorder.counters.files.count == 1)
            #expect(try decodedFrames(file) == 300)
        }
    }

    /// One message of each kind as JSON objects to mutate: the run's own video, faces and
    /// status, and the others made here.
    static func templates(from received: [ReceivedMessage]) -> [(kind: MessageKind, object: Any, payload: [UInt8]?)] {
        var messages: [(Message, [UInt8]?)] = []
        for kind in [MessageKind.video, .faces] {
            if let found = received.first(where: { $0.message.kind == kind && $0.message.faces?.isEmpty != true }) {
                messages.append((found.message, found.payload))
            }
        }
        let time = MediaTime(value: 30, timescale: 30)
        let code = MachineReadableCodeObject(
            codeID: 1, type: .qr, stringValue: "x",
            corners: [.init(x: 0.1, y: 0.1), .init(x: 0.2, y: 0.1), .init(x: 0.2, y: 0.2), .init(x: 0.1, y: 0.2)],
            time: time, duration: nil)
        let format = AudioFormat(sampleRate: 48_000, channels: 2, config: [0x11, 0x90])
        var counters = PipelineCounters()
        counters.outputs["detect"] = OutputCounters(delivered: 3, dropped: ["late": 1])
        counters.detection = TimingCounters()
        let person = DetectedObject(
            type: "humanBody", bounds: NormalizedRect(x: 0.1, y: 0.2, width: 0.15, height: 0.5), confidence: 0.9,
            label: "person", id: 4, objectID: 1)
        let others: [Message] = [
            Message(kind: .codes, source: "gen", time: time, wallTimeNs: 1, codes: [code]),
            Message(
                kind: .objects, source: "gen", time: time, wallTimeNs: 1,
                objects: DetectedObjectGroup(detector: "people", items: [person, person])),
            Message(
                kind: .events, source: "gen", time: time, wallTimeNs: 1,
                event: .init(change: .enter, object: "code", id: 1, code: code)),
            Message(
                kind: .status, source: "gen", time: nil, wallTimeNs: 1,
                status: SourceStatus(
                    state: .running,
                    input: InputDescription(
                        url: "x", width: 640, height: 480, pixelFormat: "yuv420p", frameRate: 30, orientation: 6),
                    counters: counters, detections: ["faces", "barcodes"])),
            Message(
                kind: .audio, source: "gen", time: time, wallTimeNs: 1,
                audio: AudioPacketInfo(format: format, duration: MediaTime(value: 1024, timescale: 48_000))),
            Message(
                kind: .metadata, source: "gen", time: time, wallTimeNs: 1,
                metadata: ClientMetadataGroup(
                    input: "gps",
                    items: [.init(identifier: "mdta/com.example.speed", dataType: "float64", value: .number(1.5))],
                    duration: MediaTime(value: 1, timescale: 1))),
            Message(
                kind: .frames, source: "gen", time: time, wallTimeNs: 1,
                frame: FrameInfo(format: .gray8, width: 4, height: 2, sourceWidth: 640, sourceHeight: 480)),
            Message(
                kind: .snapshots, source: "gen", time: time, wallTimeNs: 1,
                frame: FrameInfo(format: .jpeg, width: 640, height: 480, sourceWidth: 640, sourceHeight: 480),
                snapshot: ObjectSnapshot(object: "code", id: 1, score: 1.5, bounds: person.bounds)),
        ]
        let payloads: [MessageKind: [UInt8]] = [
            .audio: [0x21, 0x10], .frames: Array(repeating: 0, count: 8), .snapshots: [0xFF, 0xD8, 0xFF, 0xD9],
        ]
        messages += others.map { ($0, payloads[$0.kind]) }
        return messages.compactMap { message, payload in
            guard let data = try? JSONEncoder().encode(message),
                let object = try? JSONSerialization.jsonObject(with: data)
            else { return nil }
            return (message.kind, object, payload)
        }
    }

    /// Sets one number somewhere in the object to an extreme, or drops one key.
    static func mutate(_ value: inout Any, _ random: inout SplitMix) {
        if var object = value as? [String: Any], !object.isEmpty {
            let key = object.keys.sorted()[random.next(below: object.count)]
            if key == "v" || key == "kind" || key == "source" { return }
            if random.next(below: 20) == 0 {
                object[key] = nil
            } else {
                var child = object[key]!
                mutate(&child, &random)
                object[key] = child
            }
            value = object
        } else if var array = value as? [Any], !array.isEmpty {
            let index = random.next(below: array.count)
            mutate(&array[index], &random)
            value = array
        } else if value is NSNumber, !(value is Bool) || random.next(below: 2) == 0 {
            value = extremes[random.next(below: extremes.count)]
        }
    }
}

extension RecorderTests {
    /// A disk that fills up under a recorder that was told not to pause (`--min-free 0`):
    /// the write fails, the file is finished as far as it got, and once space is back the
    /// recorder opens a new file by itself at a key frame after its back-off; the frames in
    /// between are counted, and every file plays.
    @Test(.enabled(if: SmallFileSystem.canMount)) func recordingHealsAfterTheDiskWasFull() async throws {
        let received = try await publishedMessages(source: "heal")
        let disk = try SmallFileSystem(kilobytes: 160)  // full after about 100 of the 300 frames
        var configuration = RecorderConfiguration(sourceID: "heal", directory: disk.path)
        configuration.minimumFreeSpace = 0
        configuration.fragmentInterval = MediaTime(value: 1, timescale: 2)
        let recorder = try Recorder(configuration: configuration, logger: logger)
        var moved: [String] = []
        var freedAt: ContinuousClock.Instant?
        var resumedAfter: Duration?
        let elsewhere = try TemporaryDirectory("healed")
        for message in received {
            // The back-off runs on the clock: a key frame waits for it, as a live source's
            // frames would take that long to come.
            if freedAt != nil, message.message.video?.keyFrame == true, let attempt = recorder.nextAttempt {
                try await Task.sleep(until: attempt, clock: .continuous)
            }
            recorder.handle(message)
            if recorder.failureReason != nil, moved.isEmpty {
                // What an operator or retention does: the files go elsewhere, space is back.
                for file in try recordings(in: disk.path) {
                    let target = elsewhere.file((file as NSString).lastPathComponent)
                    try FileManager.default.moveItem(atPath: file, toPath: target)
                    moved.append(target)
                }
                freedAt = .now
            }
            if let freedAt, resumedAfter == nil, recorder.failureReason == nil { resumedAfter = .now - freedAt }
        }
        recorder.finish()
        #expect(!moved.isEmpty, "the disk never filled")
        #expect(recorder.counters.writeFailures == 1)
        #expect(recorder.counters.framesDropped["writeFailed", default: 0] > 0, "\(recorder.counters.framesDropped)")
        #expect(recorder.failureReason == nil)
        let healed = try recordings(in: disk.path)
        #expect(healed.count >= 1, "no file after the disk had room again")
        for file in moved + healed {
            let movie = try MovieReader(path: file)
            #expect(movie.tracks[0].samples.count > 0)
            #expect(try decodedFrames(file) == movie.tracks[0].samples.count, "\(file)")
        }
        print("recording resumed \(resumedAfter.map { "\($0)" } ?? "never") after space came back")
    }
}
