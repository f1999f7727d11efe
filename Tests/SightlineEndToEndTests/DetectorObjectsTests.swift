import CZMQ
import Foundation
import SightlineCapture
import SightlineCore
import SightlinePipeline
import SightlineSamples
import SightlineTesting
import Synchronization
import Testing

@testable import SightlineBus

/// Objects from a detector in another process, end to end: a real pipeline on a real clip
/// with `--metadata-in`, a client sending `objects` groups over real sockets, and what the
/// source publishes of them: Sightline's IDs, enter and leave events, the hold, the counts.
@Suite struct DetectorObjectsTests {
    /// The frame times the client sends: the sample's frames are n/30 s.
    static func frame(_ number: Int) -> MediaTime { MediaTime(value: Int64(number), timescale: 30) }

    /// A person box at `x`, and the same shape for anything else.
    static func box(_ x: Double, _ y: Double = 0.2) -> String {
        #"{"x":\#(x),"y":\#(y),"width":0.15,"height":0.5}"#
    }

    static func group(_ detector: String, at frame: Int, _ items: [String], extra: String = "") -> String {
        #"{"v":1,"kind":"objects","source":"cam1","time":{"value":\#(frame),"timescale":30},\#(extra)"objects":{"detector":"\#(detector)","items":[\#(items.joined(separator: ","))]}}"#
    }

    static func person(_ x: Double, _ more: String = "") -> String {
        #"{"type":"humanBody","bounds":\#(box(x)),"confidence":0.9,"label":"person"\#(more)}"#
    }

    @Test func objectsAreTrackedAnnouncedCountedAndLetGo() async throws {
        let input = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        // Looped until the client is done: on a loaded machine, sending can take longer than the clip.
        var configuration = PipelineConfiguration(
            source: .media(url: SampleMedia.barcodes640x480.path, options: .init(realtime: true, loop: true)))
        configuration.bus.publishing = .bind(try Endpoint("inproc://objects-e2e"))
        configuration.bus.waitForSubscriber = .seconds(20)
        configuration.detection.detectors = [.codes]
        configuration.bus.metadataIn = input
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [configuration.bus.endpoint],
            topics: Subscriber.topics(kinds: [.objects, .events, .status], source: "cam1"))
        async let final = pipeline.runToCompletion()

        func people() -> DetectorCounters { pipeline.counters.objectsIn?["people"] ?? DetectorCounters() }
        /// Waits until `done`, a minute at most: what is lost on the way then fails the counts
        /// below instead of hanging the run.
        func waitUntil(_ done: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while !done() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        }
        let client = try Socket(type: ZMQ_PUB)
        try client.connect(input)
        func send(_ json: String) throws { _ = try client.send([Array("objects/cam1/".utf8), Array(json.utf8)]) }

        // One person until the source has taken a group in (a publisher drops what it sends
        // before the input's subscription reaches it), each at a later frame than the last.
        // A source places a detector's groups by its newest frame, so none before the first.
        try await waitUntil { pipeline.counters.framesIn > 0 }
        var next = 0
        while people().groups == 0 {
            next = max(next + 1, pipeline.counters.framesIn + 1)
            try send(Self.group("people", at: next, [Self.person(0.1)]))
            try await Task.sleep(for: .milliseconds(20))
        }
        // A second person beside the first, both moving a little; fields Sightline does not
        // know are ignored.
        let two = max(next + 1, pipeline.counters.framesIn + 5)
        try send(Self.group("people", at: two, [Self.person(0.1), Self.person(0.6)], extra: #""hint":1,"#))
        try send(
            Self.group("people", at: two + 1, [Self.person(0.12, #","colour":"red""#), Self.person(0.62)]))
        // A detector that tracks itself: its ID holds one object, however far it jumps.
        let forklift = #"{"type":"org.example.forklift","bounds":BOX,"id":7}"#
        try send(Self.group("forklifts", at: two, [forklift.replacingOccurrences(of: "BOX", with: Self.box(0.0))]))
        try send(
            Self.group("forklifts", at: two + 1, [forklift.replacingOccurrences(of: "BOX", with: Self.box(0.8, 0.4))]))
        // What must be refused, each for its own reason; none stops the source.
        try send(Self.group("people", at: two + 2, [#"{"type":"humanBody","bounds":\#(Self.box(5))}"#]))
        try send(Self.group("people", at: two + 2, Array(repeating: Self.person(0.1), count: 257)))
        try send(Self.group("people", at: two + 2, [#"{"type":"person","bounds":\#(Self.box(0.1))}"#]))
        try send(Self.group("people", at: two + 2 + 30 * 86_400 * 2, [Self.person(0.1)]))  // two days on
        try send(Self.group("people", at: two, [Self.person(0.1)]))  // not after the last
        try send(Self.group("bad name", at: two + 2, [Self.person(0.1)]))
        let refused = ["badBounds", "tooManyObjects", "badType", "noTime", "late"]
        try await waitUntil {
            refused.allSatisfy { people().rejected[$0] != nil }
                && pipeline.counters.metadataIn?.rejected["badDetector"] != nil
                && pipeline.counters.objectsIn?["forklifts"]?.groups == 2
        }
        // The detector goes quiet: a second of media time after its last group, its objects
        // leave, and what it sends for that second afterwards is late.
        var live: [Message] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while Set(live.compactMap { $0.event?.change == .leave && $0.event?.detector == "people" ? $0.event?.id : nil })
            != [1, 2] && ContinuousClock.now < deadline
        {
            if let received = try subscriber.receive(timeout: .milliseconds(50)) { live.append(received.message) }
            try await Task.sleep(for: .milliseconds(5))
        }
        try send(Self.group("people", at: two + 3, [Self.person(0.1)]))
        try await waitUntil { people().rejected["late"] == 2 }
        // It comes back: its new object is a new one.
        let again = pipeline.counters.framesIn + 5
        let taken = people().groups
        try send(Self.group("people", at: again, [Self.person(0.3)]))
        try await waitUntil { people().groups == taken + 1 }
        client.close()
        pipeline.stop()
        let counters = try await final
        let messages = try live + subscriber.collect { $0.last?.message.status?.state == .stopped }.map(\.message)

        let counted = try #require(counters.objectsIn?["people"])
        // The first person's groups (as many as got through), two with two people, and the one after it came back.
        #expect(counted.groups >= 4 && counted.objects == counted.groups - 3 + 4 + 1, "\(counted)")
        #expect(counted.rejected == ["badBounds": 1, "tooManyObjects": 1, "badType": 1, "noTime": 1, "late": 2])
        #expect(counters.metadataIn?.rejected["badDetector"] == 1)
        #expect(counters.objectsIn?["forklifts"] == DetectorCounters(groups: 2, objects: 2))

        func published(_ detector: String) -> [(MediaTime, [Int])] {
            messages.compactMap { message in
                guard let group = message.objects, group.detector == detector, let time = message.time else {
                    return nil
                }
                return (time, group.items.map(\.objectID))
            }
        }
        let groups = published("people")
        // Every group taken was published at its frame's time, with one empty group where the
        // hold ended, and one when the source stopped.
        #expect(groups.count == counted.groups + 2)
        #expect(groups.dropLast(5).allSatisfy { $0.1 == [1] })
        #expect(
            groups.suffix(5).dropLast().map(\.0) == [
                Self.frame(two), Self.frame(two + 1), Self.frame(two + 1 + 30), Self.frame(again),
            ])
        #expect(groups.suffix(5).map(\.1) == [[1, 2], [1, 2], [], [3], []])
        #expect(published("forklifts").map(\.0) == [Self.frame(two), Self.frame(two + 1), Self.frame(two + 1 + 30)])
        #expect(published("forklifts").map(\.1) == [[1], [1], []])

        let events = messages.compactMap { message in message.event.map { (message.time, $0) } }
        let enters = events.filter { $0.1.change == .enter && $0.1.detector == "people" }
        #expect(
            enters.map(\.1.id) == [1, 2, 3] && enters.map(\.0) == [groups[0].0, Self.frame(two), Self.frame(again)])
        #expect(enters.allSatisfy { $0.1.object == "humanBody" && $0.1.item?.label == "person" })
        let leaves = events.filter { $0.1.change == .leave && $0.1.detector == "people" }
        #expect(leaves.map(\.1.id).sorted() == [1, 2, 3])
        #expect(leaves.filter { $0.1.id != 3 }.allSatisfy { $0.0 == Self.frame(two + 1 + 30) })
        #expect(leaves.first { $0.1.id == 2 }?.1.item?.bounds.x == 0.62)  // as last seen
        let forklifts = events.filter { $0.1.detector == "forklifts" }.map { ($0.1.change, $0.1.object, $0.1.id) }
        #expect(forklifts.map(\.0) == [.enter, .leave])
        #expect(forklifts.allSatisfy { $0.1 == "org.example.forklift" && $0.2 == 1 })
    }
}
