import CZMQ
import Foundation
import SightlineCapture
import SightlineCore
import SightlineMovie
import SightlinePipeline
import SightlineRecorder
import SightlineSamples
import SightlineTesting
import Synchronization
import Testing

@testable import SightlineBus

/// Barcodes, client metadata in and frames out, end to end: a real pipeline on a real clip,
/// real sockets, a real recording checked with the reader and exiftool.
@Suite struct DetectorsAndMetadataTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("detectors") }

    /// Runs `configuration` while `during` runs, and returns what a subscriber to `kinds`
    /// received, up to the final status.
    func run(
        _ configuration: PipelineConfiguration, kinds: [MessageKind],
        during: @Sendable @escaping (AnalysisPipeline) async throws -> Void = { _ in }
    ) async throws -> (messages: [ReceivedMessage], counters: PipelineCounters) {
        var configuration = configuration
        configuration.bus.waitForSubscriber = .seconds(20)
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [configuration.bus.endpoint], topics: Subscriber.topics(kinds: kinds + [.status], source: "cam1")
        )
        async let counters = pipeline.runToCompletion()
        try await during(pipeline)
        let final = try await counters
        let messages = try subscriber.collect { $0.last?.message.status?.state == .stopped }
        return (messages, final)
    }

    func record(
        _ messages: [ReceivedMessage], name: String,
        tracks: [(identifier: String, dataType: MetadataDataType)] = []
    ) throws -> String {
        var configuration = RecorderConfiguration(sourceID: "cam1", directory: directory.file(name))
        configuration.metadataTracks = tracks
        let recorder = try Recorder(configuration: configuration, logger: logger)
        for message in messages { recorder.handle(message) }
        recorder.finish()
        #expect(recorder.counters.files.count == 1)
        return try #require(recorder.counters.files.first)
    }

    /// Every code on exactly its frames, one ID each, entering and leaving once, and the
    /// codes recorded as a track exiftool reads.
    @Test func barcodesArePublishedOnTheirFramesAndRecorded() async throws {
        let truth = try BarcodeTruth.load()
        var configuration = PipelineConfiguration(source: SampleMedia.barcodes640x480.path)
        configuration.bus.publishing = .bind(try Endpoint("inproc://codes-e2e"))
        configuration.detection.detectors = [.codes]
        configuration.detection.discardLateFrames = false
        configuration.video.mode = .always
        let (messages, counters) = try await run(configuration, kinds: [.codes, .events, .video])
        #expect(counters.framesIn == truth.frames)
        #expect(counters.outputs["codes"]?.delivered == truth.frames)
        #expect((counters.codeDetection?.count ?? 0) == truth.frames)

        let frameOf = { (time: MediaTime) in Int((time.seconds * Double(truth.fps)).rounded()) }
        var seen: [Int: Set<String>] = [:]
        var ids: [String: Set<Int>] = [:]
        for message in messages where message.message.kind == .codes {
            let codes = try #require(message.message.codes)
            seen[frameOf(try #require(message.message.time))] = Set(
                codes.map { "\($0.type.rawValue):\($0.stringValue)" })
            for code in codes { ids[code.stringValue, default: []].insert(code.codeID) }
        }
        for n in 0..<truth.frames {
            #expect((seen[n] ?? []) == truth.codes(onFrame: n), "frame \(n)")
        }
        #expect(ids.values.allSatisfy { $0.count == 1 } && ids.count == 4)

        let events = messages.compactMap(\.message.event)
        #expect(events.allSatisfy { $0.object == "code" })
        for code in truth.codes {
            let mine = events.filter { $0.code?.stringValue == code.text }
            #expect(mine.map(\.change) == [.enter, .leave], "\(code.text)")
            #expect(mine.first.flatMap { $0.code.map { frameOf($0.time) } } == code.first)
            #expect(mine.last.flatMap { $0.code.map { frameOf($0.time) } } == code.last)
        }

        // Recorded: the codes track holds the codes of each frame, as JSON text.
        let file = try record(messages, name: "codes")
        let movie = try MovieReader(path: file)
        let track = try #require(
            movie.tracks.first {
                $0.metadataFormat?.keys.first?.identifier == MetadataIdentifier.detectedMachineReadableCodes
            })
        let groups = try movie.metadataGroups(track: track.id)
        let atFrame130 = try #require(groups.last { frameOf($0.time) <= 130 })
        guard case .string(let json) = atFrame130.items.first?.value else {
            Issue.record("no codes at frame 130")
            return
        }
        let recorded = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]
        #expect(
            Set(recorded?.compactMap { $0["stringValue"] as? String } ?? []) == [
                "https://sightline.example/qr/1", "5901234123457", "96385074",
            ])
        let exif = try ExternalTool.run("exiftool", ["-ee", "-a", "-s", file]).stdout
        #expect(exif.contains("SIGHTLINE-0042") && exif.contains("5901234123457"))
    }

    /// Groups from another service, good and bad, over a real socket: the good ones are
    /// placed on the source's timeline and recorded one track per identifier; the bad ones
    /// are counted by reason, and the run goes on.
    @Test func clientMetadataIsCheckedPlacedAndRecorded() async throws {
        let input = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        // Looped until the client is done: on a loaded machine, sending can take longer than
        // the clip.
        var configuration = PipelineConfiguration(
            source: .media(url: SampleMedia.barcodes640x480.path, options: .init(realtime: true, loop: true)))
        configuration.bus.publishing = .bind(try Endpoint("inproc://metadata-e2e"))
        configuration.detection.detectors = [.codes]
        configuration.video.mode = .always
        configuration.bus.metadataIn = input
        configuration.bus.metadataInRate = 50
        let detected = Mutex(0)  // the frame the detector's group is timed at
        // How long the flood took from the first send until the input had taken it all in:
        // the bucket refills for at most that long.
        let floodTook = Mutex(Duration.zero)
        let (messages, counters) = try await run(configuration, kinds: [.metadata, .video]) { pipeline in
            /// Groups the input has taken in so far, accepted or rejected.
            func takenIn() -> Int {
                let counters = pipeline.counters.metadataIn
                return (counters?.accepted ?? 0) + (counters?.rejected.values.reduce(0, +) ?? 0)
            }
            /// Waits until `done`, a minute at most: a group lost on the way then fails the
            /// counts below instead of hanging the run.
            func waitUntil(_ done: () -> Bool) async throws {
                let deadline = ContinuousClock.now + .seconds(60)
                while !done() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            }
            let client = try Socket(type: ZMQ_PUB)
            try client.connect(input)
            let topic = Array("metadata/cam1/".utf8)
            func send(_ json: String) throws { _ = try client.send([topic, Array(json.utf8)]) }
            func group(_ input: String, _ items: String, time: String = "") -> String {
                let now = WallClock.nowNanoseconds()
                return
                    #"{"v":1,"kind":"metadata","source":"cam1","seq":0,\#(time)"wallTimeNs":\#(now),"metadata":{"input":"\#(input)","items":[\#(items)]}}"#
            }
            let location =
                #""identifier":"mdta/com.apple.quicktime.location.ISO6709","dataType":"com.apple.quicktime.location.ISO6709""#
            // The first position until the source has taken one in: a publisher drops what it
            // sends before the input's subscription reaches it, and the source places groups
            // by wall time only once it has a frame. Early enough that the recording, which
            // opens when its first frame leaves the 1 s metadata delay, gets every track.
            while (pipeline.counters.metadataIn?.accepted ?? 0) == 0 {
                try send(group("gps", "{\(location),\"value\":\"+48.8580+002.2945+035.000/\"}"))
                try await Task.sleep(for: .milliseconds(20))
            }
            // A detector's result, timed at a frame it saw: half a second past the newest one,
            // so it comes before that frame leaves the recorder's 1 s delay even when this
            // task gets little time on a busy machine.
            let detectedFrame = pipeline.counters.framesIn + 15
            detected.withLock { $0 = detectedFrame }
            try send(
                group(
                    "haar",
                    #"{"identifier":"mdta/com.example.haar-faces","dataType":"utf8","value":"[[0.1,0.2,0.3,0.4]]"}"#,
                    time: #""time":{"value":\#(detectedFrame),"timescale":30},"#))
            for step in 0..<4 {
                try send(group("gps", "{\(location),\"value\":\"+48.858\(step)+002.2945+035.000/\"}"))
                try await Task.sleep(for: .milliseconds(300))
            }
            try send(group("gps", ""))  // ends the position
            // What must be refused, each for its own reason.
            try send("{not json")
            try send(#"{"v":99}"#)
            _ = try client.send([topic, [0xff, 0x00, 0xfe], [1, 2, 3], [4]])
            try send(group("bad", #"{"identifier":"udta/com.example.x","dataType":"utf8","value":"x"}"#))
            try send(group("bad", #"{"identifier":"mdta/com.example.x","dataType":"com.example.mine","value":"x"}"#))
            try send(group("bad", #"{"identifier":"mdta/com.example.x","dataType":"int8","value":1000}"#))
            try send(
                group(
                    "bad",
                    "{\"identifier\":\"mdta/com.example.x\",\"dataType\":\"utf8\",\"value\":\"\(String(repeating: "x", count: 300_000))\"}"
                ))
            // Each of those refused: the input has taken in everything sent so far (it reads
            // one connection in order).
            let refused = [
                "notJSON", "unsupportedVersion", "wrongFrameCount", "unknownIdentifier", "unknownDataType",
                "malformed", "oversized",
            ]
            try await waitUntil { refused.allSatisfy { (pipeline.counters.metadataIn?.rejected[$0] ?? 0) > 0 } }
            try await Task.sleep(for: .milliseconds(1100))  // a full bucket for the flood
            let beforeFlood = takenIn()
            let floodStart = ContinuousClock.now
            for index in 0..<300 {
                try send(
                    group(
                        "flood",
                        "{\"identifier\":\"mdta/com.example.haar-faces\",\"dataType\":\"utf8\",\"value\":\"\(index)\"}")
                )
            }
            // All of the flood taken in before the client goes and the run stops: on a loaded
            // machine, groups still queued then were lost (closing drops what has not left
            // once its linger is over, and a stopped input takes nothing more in).
            try await waitUntil { takenIn() >= beforeFlood + 300 }
            floodTook.withLock { $0 = ContinuousClock.now - floodStart }
            client.close()
            // Past the detector's group, however slowly this machine got here; then stop.
            while pipeline.counters.framesIn < max(200, detectedFrame + 60) {
                try await Task.sleep(for: .milliseconds(50))
            }
            pipeline.stop()
        }
        #expect(counters.framesIn >= 200)
        let metadataIn = try #require(counters.metadataIn)
        let rejected = metadataIn.rejected
        #expect(rejected["notJSON"] == 1, "\(rejected)")
        #expect(rejected["unsupportedVersion"] == 1)
        #expect(rejected["wrongFrameCount"] == 1)
        #expect(rejected["unknownIdentifier"] == 1 && rejected["unknownDataType"] == 1)
        #expect(rejected["malformed"] == 1)
        #expect(rejected["oversized"] == 1)
        // The bucket (50 groups, 50 a second) was full when the flood began, and refilled
        // for no longer than the flood took to be taken in, which a loaded machine makes long:
        // the bounds follow from that time, not from a speed.
        let flooded = rejected["flood"] ?? 0
        let refilled = Int((50 * floodTook.withLock { $0 }.milliseconds / 1000).rounded(.up))
        #expect(flooded <= 250 && flooded >= 300 - 50 - refilled, "\(rejected), refilled \(refilled)")
        let republished = messages.filter { $0.message.kind == .metadata }
        #expect(republished.count == metadataIn.accepted)
        #expect(republished.filter { $0.message.metadata?.input == "flood" }.count == 300 - flooded)
        let haar = try #require(republished.first { $0.message.metadata?.input == "haar" })
        let detectedAt = MediaTime(value: Int64(detected.withLock { $0 }), timescale: 30)
        #expect(haar.message.time == detectedAt)

        // Recorded: the location track says where, exiftool shows GPS; the detector's own
        // track holds its value at its frame's time.
        // The tracks are declared up front (`--metadata-track`), as on a loaded machine the
        // first values can come after the file started (RecorderTests covers that case).
        let file = try record(
            messages, name: "metadata",
            tracks: [
                ("mdta/com.example.haar-faces", .utf8),
                (MetadataIdentifier.locationISO6709, .named("com.apple.quicktime.location.ISO6709")),
            ])
        let movie = try MovieReader(path: file)
        func track(_ identifier: String) throws -> UInt32 {
            try #require(movie.tracks.first { $0.metadataFormat?.keys.first?.identifier == identifier }).id
        }
        let positions = try movie.metadataGroups(track: try track(MetadataIdentifier.locationISO6709))
            .compactMap { group -> String? in
                if case .string(let text) = group.items.first?.value { return text }
                return nil
            }
        #expect(positions.removingAdjacentDuplicates() == (0..<4).map { "+48.858\($0)+002.2945+035.000/" })
        let exif = try ExternalTool.run("exiftool", ["-ee", "-a", "-s", "-GPSCoordinates", file]).stdout
        #expect(exif.contains("48 deg 51' 28.80\" N") && exif.contains("2 deg 17' 40.20\" E"), "\(exif)")
        let detections = try movie.metadataGroups(track: try track("mdta/com.example.haar-faces"))
        let detection = try #require(detections.first { $0.items.first?.value == .string("[[0.1,0.2,0.3,0.4]]") })
        #expect(detection.time == detectedAt)
        let inspect = try CommandLineTests().sightline(["inspect", file]).stdout
        #expect(inspect.contains("mdta/com.example.haar-faces (utf8)"))
    }

    /// The frames output: downscaled, at the configured rate, only while subscribed; gray8
    /// rows that match the source's luma, or a JPEG ffprobe decodes.
    @Test(arguments: [FrameInfo.Format.gray8, .jpeg])
    func framesArePublishedDownscaled(format: FrameInfo.Format) async throws {
        var configuration = PipelineConfiguration(source: SampleMedia.barcodes640x480.path)
        configuration.bus.publishing = .bind(try Endpoint("inproc://frames-e2e-\(format)"))
        configuration.detection.detectors = [.codes]
        configuration.source = .media(url: configuration.source.name, options: .init(realtime: true))
        var frames = FramesConfiguration(format: format)
        frames.rate = 5
        configuration.video.frames = frames
        let (messages, counters) = try await run(configuration, kinds: [.frames])
        let published = messages.filter { $0.message.kind == .frames }
        // 8 s at 5 a second: 40, never more than 5 a second. Newest-wins passes over a frame
        // the output is still encoding the last one for, and the next slot counts from the
        // frame published after it: a loaded machine published 35 (CI's load).
        #expect((30...41).contains(published.count), "\(published.count)")
        #expect(counters.framesPublishing?.count == published.count)
        let times = published.compactMap { $0.message.time?.seconds }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 0.18 })
        let source = try MediaFileSource(url: SampleMedia.barcodes640x480.path)
        var lumaMeans: [Int: Double] = [:]
        while case .frame(let frame) = try source.read() {
            let luma = frame.pixels.packedBytes(plane: 0)
            lumaMeans[Int((frame.time.seconds * 30).rounded())] =
                Double(luma.reduce(0) { $0 + Int($1) }) / Double(luma.count)
        }
        for message in published {
            let info = try #require(message.message.frame)
            #expect(info.format == format && info.width == 320 && info.height == 240)
            #expect(info.sourceWidth == 640 && info.sourceHeight == 480)
            let payload = try #require(message.payload)
            switch format {
            case .gray8:
                #expect(payload.count == 320 * 240)
                let mean = Double(payload.reduce(0) { $0 + Int($1) }) / Double(payload.count)
                let n = Int((try #require(message.message.time).seconds * 30).rounded())
                #expect(abs(mean - (lumaMeans[n] ?? -100)) < 1.5, "frame \(n)")
            case .jpeg:
                #expect(payload.starts(with: [0xFF, 0xD8]) && payload.suffix(2) == [0xFF, 0xD9])
            }
        }
        if format == .jpeg, let first = published.first?.payload {
            let path = directory.file("frame.jpg")
            try Data(first).write(to: URL(fileURLWithPath: path))
            let probe =
                try ExternalTool.json(
                    "ffprobe", ["-v", "error", "-show_streams", "-of", "json", path]) as? [String: Any]
            let stream = (probe?["streams"] as? [[String: Any]])?.first
            #expect(stream?["width"] as? Int == 320 && stream?["height"] as? Int == 240)
        }
    }
}

extension Array where Element: Equatable {
    func removingAdjacentDuplicates() -> [Element] {
        reduce(into: []) { result, element in if result.last != element { result.append(element) } }
    }
}
