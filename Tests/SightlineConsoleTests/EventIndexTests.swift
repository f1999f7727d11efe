import Foundation
import Logging
import SightlineBus
import SightlineCore
import SightlineTesting
import Synchronization
import Testing

@testable import SightlineConsole

/// The event index against real SQLite files and a real console: filled from a recording's
/// own tracks (the sample's known script of faces and a code), from live bus events, and
/// rebuilt when its file is damaged.
@Suite struct EventIndexTests {
    let directory: TemporaryDirectory
    let name = "cam1-20261124T101500Z.mov"
    /// 2026-11-24T10:15:00Z, from the name.
    let recordingStart = 1_795_515_300.0

    init() throws {
        directory = try TemporaryDirectory("events")
        try SampleRecording().write(to: directory.file(name))
    }

    var configuration: ConsoleConfiguration {
        var configuration = ConsoleConfiguration()
        configuration.recordingDirectories = [directory.path]
        configuration.indexInterval = .milliseconds(50)
        return configuration
    }

    /// The events `query` finds, once `ready` holds of them (the indexer runs beside the test).
    func events(
        _ console: RunningConsole, _ query: String = "", until ready: ([[String: Any]]) -> Bool = { !$0.isEmpty }
    ) async throws -> [[String: Any]] {
        while true {
            let reply = try await console.get("/api/events" + query)
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            let list = try #require(reply.json as? [[String: Any]])
            if ready(list) || reply.status != 200 { return list }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aRecordingsTracksAreItsEvents() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let all = try await events(console) { $0.count == 4 }
            // Newest first: face 3 (from frame 240), face 2 (90), face 1 (30), and the code.
            let faces = all.filter { $0["label"] as? String == "face" }
            #expect(faces.map { $0["objectID"] as? Int } == [3, 2, 1])
            let named = try #require(faces.first { $0["objectID"] as? Int == 2 })
            #expect(named["name"] as? String == "Ada Lovelace")
            #expect(named["camera"] as? String == "cam1")
            #expect(named["recording"] as? String == name)
            #expect(abs((named["t"] as? Double ?? 0) - 3) < 1e-6)
            #expect(abs((named["start"] as? Double ?? 0) - (recordingStart + 3)) < 1e-6)
            #expect(abs((named["end"] as? Double ?? 0) - (recordingStart + 200.0 / 30)) < 1e-3)
            let code = try #require(all.first { $0["label"] as? String == "code" })
            #expect(code["kind"] as? String == "code" && code["text"] as? String != nil)

            // Filters: any case of a name; unknown faces; a time range; a camera.
            let ada = try await events(console, "?name=ada%20lovelace")
            #expect(ada.map { $0["objectID"] as? Int } == [2])
            let unknown = try await events(console, "?unknown=true")
            #expect(unknown.map { $0["objectID"] as? Int } == [3, 1])
            let late = try await events(console, "?label=face&after=\(recordingStart + 7)")
            #expect(late.map { $0["objectID"] as? Int } == [3])
            let early = try await events(console, "?label=face&before=\(recordingStart + 2)")
            #expect(early.map { $0["objectID"] as? Int } == [1])
            #expect(try await events(console, "?camera=cam2") { _ in true }.isEmpty)
            #expect(try await events(console, "?limit=2") { _ in true }.count == 2)

            // Names are data: SQL and HTML in them match nothing and break nothing.
            for hostile in ["x%27%20OR%20%271%27%3D%271", "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "%25"] {
                #expect(try await events(console, "?name=\(hostile)") { _ in true }.isEmpty, "\(hostile)")
            }
            let choices = try #require(try await console.get("/api/events/choices").json as? [String: [String]])
            #expect(choices["cameras"] == ["cam1"] && choices["names"] == ["Ada Lovelace"])
            #expect(choices["labels"] == ["code", "face"])
        }
    }

    @Test func anEventsSnapshotIsItsBestFrameAroundItsBox() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let named = try #require(try await events(console, "?name=Ada%20Lovelace").first)
            let id = try #require(named["id"] as? Int)
            // Face 2's box (0.6, 0.35, 0.2 x 0.3) is the same size throughout: its first frame.
            #expect(abs((named["best"] as? Double ?? -1) - 3) < 1e-6)
            let crop = try await console.get("/api/events/\(id)/snapshot?crop=true")
            #expect(crop.status == 200 && crop.headers["content-type"] == "image/jpeg")
            let path = directory.file("crop.jpg")
            try crop.body.write(to: URL(fileURLWithPath: path))
            // Its size again on every side, as far as the picture goes: x 0.4-1.0, y 0.05-0.95 of
            // 640x480; the box's left edge 128 px in, its top 144 px down.
            let image = try IndependentReaders.rgbFrame(path, at: 0, width: 384, height: 432)
            #expect(image.isFaceGreen(128, 216) && image.isFaceGreen(192, 144))
            #expect(!image.isFaceGreen(192, 216))
            let whole = try await console.get("/api/events/\(id)/snapshot?width=320")
            try whole.body.write(to: URL(fileURLWithPath: path))
            #expect(
                whole.status == 200 && (try? IndependentReaders.rgbFrame(path, at: 0, width: 320, height: 240)) != nil)
            for (query, status) in [
                ("/api/events/0/snapshot", 400), ("/api/events/x/snapshot", 400), ("/api/events/999/snapshot", 404),
                ("/api/events/\(id)/snapshot?crop=maybe", 400), ("/api/events/\(id)/snapshot?width=1", 400),
            ] {
                #expect(try await console.get(query).status == status, "\(query)")
            }
        }
    }

    @Test func aCamerasHistoryIsItsRecordingsInOrder() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            _ = try await events(console) { $0.count == 4 }
            let history = try #require(try await console.get("/api/history/cam1").json as? [[String: Any]])
            #expect(history.map { $0["name"] as? String } == [name])
            #expect(history.first?["start"] as? Double == recordingStart)
            #expect(abs((history.first?["duration"] as? Double ?? 0) - 10) < 0.05)
            let later = try await console.get("/api/history/cam1?after=\(recordingStart + 11)")
            #expect((later.json as? [Any])?.isEmpty == true)
            #expect((try await console.get("/api/history/cam2").json as? [Any])?.isEmpty == true)
            #expect(try await console.get("/api/history/cam1?name=x").status == 400)
            #expect(try await console.get("/api/history/cam1?limit=0").status == 400)
        }
    }

    @Test func everyParameterIsChecked() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            for (query, reason) in [
                ("?when=today", "unknown parameter 'when'"), ("?limit=0", "limit must be"),
                ("?limit=99999999999999999999", "limit must be"), ("?after=nan", "after must be"),
                ("?before=1e400", "before must be"), ("?after=-1", "after must be"),
                ("?after=20&before=10", "after must not be later"), ("?unknown=maybe", "unknown must be"),
                ("?name=a%0Ab", "name must be"), ("?name=", "name must be"), ("?camera=a&camera=b", "given twice"),
                ("?label=" + String(repeating: "x", count: 201), "label must be"),
            ] {
                let reply = try await console.get("/api/events" + query)
                let body = String(decoding: reply.body, as: UTF8.self)
                #expect(reply.status == 400 && body.contains(reason), "\(query): \(reply.status) \(body)")
            }
        }
    }

    @Test func aRecordingThatGoesTakesItsEvents() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            _ = try await events(console) { $0.count == 4 }
            try FileManager.default.removeItem(atPath: directory.file(name))
            #expect(try await events(console) { $0.isEmpty }.isEmpty)
        }
    }

    @Test func aDamagedIndexIsRebuiltFromTheRecordings() async throws {
        let path = directory.file(".sightline-events.sqlite")
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        let lines = LogLines()
        let index = try EventIndex(path: path, logger: Logger(label: "test") { _ in lines })
        #expect(lines.messages == ["the event index is unreadable; rebuilding it from the recordings"])
        let indexer = RecordingIndexer(
            index: index, library: RecordingLibrary(directories: [directory.path]), interval: .seconds(1),
            logger: Logger(label: "test"))
        #expect(try indexer.scan() == (read: 1, removed: 0))
        #expect(try await index.events(matching: EventQuery()).count == 4)
        // A real SQLite file now, which the next start reads without a word.
        let header = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(15)
        #expect(String(decoding: header, as: UTF8.self) == "SQLite format 3")
        let again = LogLines()
        let reopened = try EventIndex(path: path, logger: Logger(label: "test") { _ in again })
        #expect(again.messages.isEmpty)
        #expect(try await reopened.events(matching: EventQuery()).count == 4)
    }

    @Test func liveEventsStandInUntilTheRecordingIsRead() async throws {
        let index = try EventIndex(path: directory.file("live.sqlite"), logger: Logger(label: "test"))
        let face = FaceObject(
            faceID: 5, bounds: NormalizedRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2), rollAngle: nil, yawAngle: nil,
            time: MediaTime(value: 0, timescale: 30), duration: nil, score: 1, subDetector: 0)
        var named = face
        named.identity = FaceIdentity(name: "Grace O'Hopper <b>", distance: 0.3)
        let at = { (seconds: Double) in UInt64((recordingStart + seconds) * 1e9) }
        index.record(ObjectEvent(change: .enter, object: "face", id: 5, face: face), source: "cam1", wallTimeNs: at(1))
        index.record(
            ObjectEvent(change: .identified, object: "face", id: 5, face: named), source: "cam1", wallTimeNs: at(2))
        index.record(ObjectEvent(change: .enter, object: "face", id: 6, face: face), source: "cam9", wallTimeNs: at(2))
        index.record(ObjectEvent(change: .leave, object: "face", id: 5, face: named), source: "cam1", wallTimeNs: at(4))
        var live: [IndexedEvent] = []
        while live.count < 2 || live.contains(where: { $0.camera == "cam1" && $0.end == nil }) {
            live = try await index.events(matching: EventQuery())
            try await Task.sleep(for: .milliseconds(5))
        }
        let five = try #require(live.first { $0.objectID == 5 })
        #expect(five.name == "Grace O'Hopper <b>" && five.recording == nil && five.label == "face")
        #expect(abs(five.start - (recordingStart + 1)) < 1e-6 && abs((five.end ?? 0) - (recordingStart + 4)) < 1e-6)
        var query = EventQuery()
        query.name = "grace o'hopper <B>"
        #expect(try await index.events(matching: query).map(\.objectID) == [5])
        // Still in view: no end, and any later range includes it.
        query = EventQuery()
        query.after = recordingStart + 1000
        #expect(try await index.events(matching: query).map(\.camera) == ["cam9"])

        // The recording of cam1 covering that time replaces cam1's live event; cam9 has none.
        let indexer = RecordingIndexer(
            index: index, library: RecordingLibrary(directories: [directory.path]), interval: .seconds(1),
            logger: Logger(label: "test"))
        try indexer.scan()
        let after = try await index.events(matching: EventQuery())
        #expect(after.filter { $0.recording == nil }.map(\.camera) == ["cam9"])
        #expect(after.filter { $0.recording == name }.count == 4)
    }

    @Test func anEventKeepsItsIDWhenReadAgain() async throws {
        let index = try EventIndex(path: directory.file("ids.sqlite"), logger: Logger(label: "test"))
        let indexer = RecordingIndexer(
            index: index, library: RecordingLibrary(directories: [directory.path]), interval: .seconds(1),
            logger: Logger(label: "test"))
        // Face 1 seen live a moment after the recording has it from 1 s (the bus is later).
        let face = FaceObject(
            faceID: 1, bounds: NormalizedRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2), rollAngle: nil, yawAngle: nil,
            time: MediaTime(value: 0, timescale: 30), duration: nil, score: 1, subDetector: 0)
        index.record(
            ObjectEvent(change: .enter, object: "face", id: 1, face: face), source: "cam1",
            wallTimeNs: UInt64((recordingStart + 1.4) * 1e9))
        var live: [IndexedEvent] = []
        while live.isEmpty { live = try await index.events(matching: EventQuery()) }
        let liveID = try #require(live.first?.id)

        #expect(try indexer.scan().read == 1)
        let ids = { () async throws -> [Int: Int64] in
            Dictionary(
                uniqueKeysWithValues: try await index.events(matching: EventQuery()).filter { $0.label == "face" }
                    .map { ($0.objectID, $0.id ?? 0) })
        }
        let first = try await ids()
        #expect(first.keys.sorted() == [1, 2, 3])
        #expect(first[1] == liveID, "the recording's face 1 is the live event it replaced")

        // The file grows (a free atom at its end, as a recording still being written grows):
        // it is read again, and its events keep their IDs.
        let handle = try #require(FileHandle(forWritingAtPath: directory.file(name)))
        try handle.seekToEnd()
        try handle.write(contentsOf: [0, 0, 0, 16] + Array("free".utf8) + [UInt8](repeating: 0, count: 8))
        try handle.close()
        #expect(try indexer.scan().read == 1)
        #expect(try await ids() == first)
        #expect(try await index.events(matching: EventQuery()).count == 4)
    }

    @Test func eventsOnTheBusReachTheIndexAsTheyCome() async throws {
        let endpoint = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let publisher = try Publisher(endpoint: endpoint, logger: Logger(label: "events-test"))
        var configuration = ConsoleConfiguration()
        configuration.endpoints = [endpoint]
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            #expect(await publisher.waitForSubscription(to: "events/", timeout: .seconds(30)))
            let code = MachineReadableCodeObject(
                codeID: 2, type: .qr, stringValue: "https://example.org/<b>",
                corners: [.init(x: 0.1, y: 0.1), .init(x: 0.3, y: 0.1), .init(x: 0.3, y: 0.3), .init(x: 0.1, y: 0.3)],
                time: MediaTime(value: 0, timescale: 30), duration: nil)
            let at = UInt64(recordingStart * 1e9)
            publisher.publish(
                Message(
                    kind: .events, source: "cam7", time: nil, wallTimeNs: at,
                    event: ObjectEvent(change: .enter, object: "code", id: 2, code: code)))
            let entered = try await events(console, "?camera=cam7")
            #expect(entered.count == 1 && entered.first?["end"] == nil && entered.first?["recording"] == nil)
            #expect(
                entered.first?["label"] as? String == "code" && entered.first?["text"] as? String == code.stringValue)
            #expect(entered.first?["start"] as? Double == recordingStart)
            publisher.publish(
                Message(
                    kind: .events, source: "cam7", time: nil, wallTimeNs: at + 2_500_000_000,
                    event: ObjectEvent(change: .leave, object: "code", id: 2, code: code)))
            let left = try await events(console, "?camera=cam7") { $0.first?["end"] != nil }
            #expect(left.first?["end"] as? Double == recordingStart + 2.5)
        }
        await publisher.close()
    }

    /// Any query string reads as filters or is refused with one line; none traps.
    @Test func anyParametersParseOrAreRefusedInOneLine() {
        var random = SplitMix(seed: UInt64(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SEED"] ?? "") ?? 7)
        let names = EventQuery.parameters + ["", "x", "limit ", "Name"]
        let values = [
            "", "0", "-0", "1e400", "nan", "inf", "-1", "1000", "1001", "true", "false", "1", "a\u{0}b", "\u{202E}",
            String(repeating: "é", count: 201), "9999999999999999999999", "1e11", "0x10", " 5", "<b>'--",
        ]
        for _ in 0..<5000 {
            let parameters = (0..<random.next(below: 5)).map { _ in
                (names[random.next(below: names.count)], values[random.next(below: values.count)])
            }
            do {
                let query = try EventQuery(parameters: parameters)
                #expect((1...1000).contains(query.limit))
                #expect(query.after.map { $0.isFinite && $0 >= 0 } ?? true)
            } catch {
                #expect(!error.description.contains("\n") && !error.description.isEmpty)
            }
        }
    }

    @Test func aFloodOfLiveEventsIsDroppedNotQueued() async throws {
        let lines = LogLines()
        let index = try EventIndex(path: nil, logger: Logger(label: "test") { _ in lines }, maximumPending: 0)
        let face = FaceObject(
            faceID: 1, bounds: NormalizedRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2), rollAngle: nil, yawAngle: nil,
            time: MediaTime(value: 0, timescale: 30), duration: nil, score: 1, subDetector: 0)
        for id in 0..<3 {
            index.record(ObjectEvent(change: .enter, object: "face", id: id, face: face), source: "cam1", wallTimeNs: 1)
        }
        // One line for the flood, not one an event; nothing written.
        #expect(lines.messages == ["the event index is behind the bus: live events are dropped until it catches up"])
        #expect(try await index.events(matching: EventQuery()).isEmpty)
    }

    @Test func theNameSearchSeeksItsIndex() throws {
        let index = try EventIndex(path: nil, logger: Logger(label: "test"))
        var query = EventQuery()
        query.name = "Ada"
        let plan = try index.plan(of: query)
        #expect(plan.contains("USING INDEX event_by_name"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }
}

/// What a logger was told, for tests of what a user reads.
final class LogLines: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])
    var messages: [String] { lines.withLock { $0 } }

    func log(event: LogEvent) { lines.withLock { $0.append(event.message.description) } }

    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
}
