import Foundation
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

@testable import SightlineConsole

/// Objects from two detectors in other processes, each in a track of its own, as the player
/// and snapshots get them: one timeline merged by time, each object in its type's colour,
/// each appearance named by type.
@Suite struct DetectedObjectsPlayerTests {
    let directory: TemporaryDirectory
    let recording: SampleRecording
    let name = "cam1-20261127T101500Z.mov"

    /// A person from frame 30 to 150 (ID 1, moving right), and a forklift from another
    /// detector from 60 to 90 (ID 2).
    static func person(onFrame n: Int) -> DetectedObject? {
        guard (30..<150).contains(n) else { return nil }
        var person = DetectedObject(
            type: "humanBody", bounds: NormalizedRect(x: 0.1 + Double(n) * 0.001, y: 0.2, width: 0.2, height: 0.5),
            confidence: 0.9, label: "person")
        person.objectID = 1
        return person
    }

    static func forklift(onFrame n: Int) -> DetectedObject? {
        guard (60..<90).contains(n) else { return nil }
        var forklift = DetectedObject(
            type: "org.example.forklift", bounds: NormalizedRect(x: 0.6, y: 0.5, width: 0.25, height: 0.25), id: 7)
        forklift.objectID = 2
        return forklift
    }

    init() throws {
        directory = try TemporaryDirectory("detected-objects-player")
        recording = try SampleRecording()
        let writer = try MovieWriter(
            path: directory.file(name), video: recording.format, metadataTracks: [.detectedObjects, .detectedObjects],
            configuration: .init(fragmentInterval: MediaTime(value: 2, timescale: 1), syncEachFragment: false))
        var present = [false, false]
        try recording.appendVideo(to: writer) { frame, time in
            for (track, (detector, object)) in [("people", Self.person), ("forklifts", Self.forklift)].enumerated() {
                let found = object(frame)
                guard found != nil || present[track] else { continue }
                present[track] = found != nil
                let message = Message(
                    kind: .objects, source: "cam1", time: time, wallTimeNs: 0,
                    objects: DetectedObjectGroup(detector: detector, items: found.map { [$0] } ?? []))
                let items = try #require(ObjectKind.detectedObjects.recorded(message)).items
                try writer.append(TimedMetadataGroup(time: time, items: items), toMetadataTrack: track)
            }
        }
        try writer.finish()
    }

    var configuration: ConsoleConfiguration {
        var configuration = ConsoleConfiguration()
        configuration.recordingDirectories = [directory.path]
        return configuration
    }

    @Test func bothDetectorsAreDrawnInTheirTypesColours() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let metadata = try #require(
                try await console.get("/api/recordings/\(name)/metadata").json as? [String: Any])
            let groups = try #require(metadata["detectedObjects"] as? [[String: Any]])
            let person = ObjectKind.detectedObjects.colour(ofType: "humanBody").css
            let forklift = ObjectKind.detectedObjects.colour(ofType: "org.example.forklift").css
            #expect(person == "#30a0ff" && forklift != person)
            for (frame, time) in recording.frameTimes.enumerated() {
                let group = groups.last { ($0["t"] as! Double) <= time.seconds + 1e-9 }
                let drawn = (group?["v"] as? [[String: Any]]) ?? []
                let expected = [Self.person(onFrame: frame), Self.forklift(onFrame: frame)].compactMap { $0 }
                #expect(drawn.map { $0["id"] as? Int } == expected.map(\.objectID), "frame \(frame)")
                #expect(drawn.map { $0["type"] as? String } == expected.map(\.type), "frame \(frame)")
                #expect(
                    drawn.map { $0["colour"] as? String } == expected.map { $0.type == "humanBody" ? person : forklift }
                )
                for (object, sent) in zip(drawn, expected) {
                    let b = sent.bounds
                    let bounds = try #require(object["bounds"] as? [Double])
                    #expect(zip(bounds, [b.x, b.y, b.width, b.height]).allSatisfy { abs($0 - $1) < 1e-6 })
                }
            }
            #expect(
                groups.flatMap { ($0["v"] as? [[String: Any]]) ?? [] }.compactMap { $0["label"] as? String }.uniqued()
                    == ["person #1", "org.example.forklift #2"])

            // The timeline: each object once, by type, in its colour.
            let objects = try #require(metadata["objects"] as? [[String: Any]])
            let spans = objects.map { o -> String in
                let frames = [o["start"] as! Double, o["end"] as! Double].map { Int(($0 * 30).rounded()) }
                return "\(o["kind"]!) \(o["id"]!) \(o["type"]!) \(o["colour"]!) \(frames[0])-\(frames[1])"
            }
            #expect(
                spans == [
                    "object 1 humanBody \(person) 30-150", "object 2 org.example.forklift \(forklift) 60-90",
                ])

            // A snapshot while both are in view draws each box in its colour.
            let frame = 75
            let reply = try await console.get(
                "/api/recordings/\(name)/snapshot?t=\(recording.frameTimes[frame].seconds)")
            #expect(reply.status == 200)
            let jpeg = directory.file("snapshot.jpg")
            try reply.body.write(to: URL(fileURLWithPath: jpeg))
            let pixels = try IndependentReaders.rgbFrame(jpeg, at: 0, width: 640, height: 480)
            for object in [Self.person(onFrame: frame), Self.forklift(onFrame: frame)].compactMap({ $0 }) {
                let colour = ObjectKind.detectedObjects.colour(ofType: object.type)
                let b = object.bounds
                let (left, top) = (Int(b.x * 640), Int(b.y * 480))
                let (right, bottom) = (Int((b.x + b.width) * 640), Int((b.y + b.height) * 480))
                #expect(pixels.isNear(colour, (left + right) / 2, top + 1), "\(object.type) top edge")
                #expect(pixels.isNear(colour, left + 1, (top + bottom) / 2), "\(object.type) left edge")
                #expect(!pixels.isNear(colour, (left + right) / 2, (top + bottom) / 2), "\(object.type) middle")
            }
        }
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each once.
    fileprivate func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
