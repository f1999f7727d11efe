import SightlineCore
import SightlineMovie
import Testing

@testable import SightlineConsole

/// The live view's promise: each frame is drawn with the objects of that same frame.
@Suite struct LiveFrameMatcherTests {
    static let second: UInt64 = 1_000_000_000

    func time(_ frame: Int) -> MediaTime { MediaTime(value: Int64(frame), timescale: 30) }
    func wall(_ frame: Int) -> UInt64 { 1_000 * Self.second + UInt64(frame) * Self.second / 30 }

    func frame(_ n: Int) -> Message {
        Message(
            kind: .frames, source: "cam1", time: time(n), wallTimeNs: wall(n),
            frame: FrameInfo(format: .jpeg, width: 320, height: 240, sourceWidth: 640, sourceHeight: 480))
    }

    func faces(_ n: Int, _ ids: [Int]) -> Message {
        let list = ids.map {
            FaceObject(
                faceID: $0, bounds: NormalizedRect(x: 0.1 * Double($0), y: 0.2, width: 0.1, height: 0.15),
                rollAngle: nil, yawAngle: nil, time: time(n), duration: nil, score: 1, subDetector: 0)
        }
        return Message(kind: .faces, source: "cam1", time: time(n), wallTimeNs: wall(n), faces: list)
    }

    func codes(_ n: Int, _ text: [String]) -> Message {
        let list = text.enumerated().map { index, value in
            MachineReadableCodeObject(
                codeID: index + 1, type: .qr, stringValue: value,
                corners: [.init(x: 0.5, y: 0.5), .init(x: 0.6, y: 0.5), .init(x: 0.6, y: 0.6), .init(x: 0.5, y: 0.6)],
                time: time(n), duration: nil)
        }
        return Message(kind: .codes, source: "cam1", time: time(n), wallTimeNs: wall(n), codes: list)
    }

    @Test func aFrameWaitsForItsOwnFaces() {
        var matcher = LiveFrameMatcher()
        #expect(matcher.addFrame(frame(10), jpeg: [1, 2, 3], receivedNs: wall(10) + 5_000_000).isEmpty)
        let released = matcher.addObjects(faces(10, [1, 2]), receivedNs: wall(10) + 20_000_000)
        #expect(released.count == 1)
        #expect(released.first?.time == time(10).seconds)
        #expect(released.first?[.faces]?.objects.map(\.id) == [1, 2])
        #expect(released.first?[.faces]?.objects.first?.bounds == [0.1, 0.2, 0.1, 0.15])
        #expect(released.first?[.faces]?.held == false)
        #expect(released.first?.jpeg == "AQID")
        #expect(released.first?[.codes] == nil)
    }

    @Test func withNothingInViewAFrameGoesOutAfterTheDetectorsUsualDelay() {
        var matcher = LiveFrameMatcher()
        _ = matcher.addObjects(faces(1, [1]), receivedNs: wall(1) + 30_000_000)  // lag 30 ms
        _ = matcher.addObjects(faces(2, []), receivedNs: wall(2) + 30_000_000)  // the face left
        #expect(matcher.addFrame(frame(5), jpeg: [0], receivedNs: wall(5) + 1_000_000).isEmpty)
        #expect(matcher.release(nowNs: wall(5) + 70_000_000).isEmpty)  // lag + margin is 80 ms
        let released = matcher.release(nowNs: wall(5) + 81_000_000)
        #expect(released.map(\.time) == [time(5).seconds])
        #expect(released.first?[.faces] == LiveDetections(time: time(5).seconds, held: false, objects: []))
    }

    @Test func aFrameTheDetectorSkippedHoldsTheLastFacesAndSaysSo() {
        var matcher = LiveFrameMatcher()
        _ = matcher.addObjects(faces(3, [4]), receivedNs: wall(3) + 10_000_000)
        #expect(matcher.addFrame(frame(4), jpeg: [0], receivedNs: wall(4)).isEmpty)
        let released = matcher.addObjects(faces(6, [4]), receivedNs: wall(6) + 10_000_000)
        #expect(released.first?[.faces]?.held == true)
        #expect(released.first?[.faces]?.time == time(3).seconds)
        #expect(released.first?[.faces]?.objects.map(\.id) == [4])
    }

    func objects(_ n: Int, detector: String, _ ids: [Int]) -> Message {
        let list = ids.map {
            DetectedObject(
                type: "humanBody", bounds: NormalizedRect(x: 0.1 * Double($0), y: 0.3, width: 0.1, height: 0.4),
                label: "person", objectID: $0)
        }
        return Message(
            kind: .objects, source: "cam1", time: time(n), wallTimeNs: wall(n),
            objects: DetectedObjectGroup(detector: detector, items: list))
    }

    /// Detectors in other processes answer when they can: a frame does not wait for them,
    /// and shows each one's latest objects up to its time, all of them together.
    @Test func otherDetectorsObjectsAreDrawnWithoutHoldingFrames() {
        var matcher = LiveFrameMatcher()
        _ = matcher.addObjects(objects(2, detector: "people", [1, 2]), receivedNs: wall(2) + 1_000_000)
        _ = matcher.addObjects(objects(3, detector: "dogs", [1]), receivedNs: wall(3) + 1_000_000)
        _ = matcher.addFrame(frame(4), jpeg: [0], receivedNs: wall(4))
        let released = matcher.addObjects(faces(4, []), receivedNs: wall(4) + 1_000_000)
        let drawn = released.first?[.detectedObjects]
        #expect(drawn?.objects.map(\.id) == [1, 1, 2])  // dogs, then people
        #expect(drawn?.objects.map(\.type) == ["humanBody", "humanBody", "humanBody"])
        #expect(drawn?.held == true)
        // People leave; the dog stays.
        _ = matcher.addObjects(objects(5, detector: "people", []), receivedNs: wall(5) + 1_000_000)
        _ = matcher.addFrame(frame(6), jpeg: [0], receivedNs: wall(6))
        let later = matcher.addObjects(faces(6, []), receivedNs: wall(6) + 1_000_000)
        #expect(later.first?[.detectedObjects]?.objects.map(\.id) == [1])
        var alone = LiveFrameMatcher()  // no detector in another process: no field
        let first = alone.addFrame(frame(1), jpeg: [0], receivedNs: wall(1) + 1_000_000_000).first
        #expect(first != nil && first?[.detectedObjects] == nil)
    }

    @Test func withCodesOnAFrameWaitsForBothDetectors() {
        var matcher = LiveFrameMatcher()
        matcher.detections = ["faces", "barcodes"]
        _ = matcher.addFrame(frame(7), jpeg: [0], receivedNs: wall(7))
        #expect(matcher.addObjects(faces(7, [1]), receivedNs: wall(7) + 1_000_000).isEmpty)
        let released = matcher.addObjects(codes(7, ["hello"]), receivedNs: wall(7) + 2_000_000)
        #expect(released.first?[.codes]?.objects.map(\.text) == ["hello"])
        #expect(released.first?[.codes]?.objects.first?.corners?.count == 8)
        #expect(released.first?[.faces]?.objects.map(\.id) == [1])
    }

    @Test func aSourceThatStartsAgainForgetsTheOldTimeline() {
        var matcher = LiveFrameMatcher()
        _ = matcher.addObjects(faces(100, [9]), receivedNs: wall(100))
        _ = matcher.addObjects(faces(2, [1]), receivedNs: wall(2))  // an earlier time: a restart
        #expect(matcher.addFrame(frame(3), jpeg: [0], receivedNs: wall(3)).isEmpty)  // not settled by time 100
        let released = matcher.addObjects(faces(3, [1]), receivedNs: wall(3))
        #expect(
            released.first?[.faces]
                == LiveDetections(
                    time: time(3).seconds, held: false,
                    objects: [
                        DrawnObject(id: 1, bounds: [0.1, 0.2, 0.1, 0.15])
                    ]))
    }

    @Test func framesDoNotPileUpWhenNoDetectorAnswers() {
        var matcher = LiveFrameMatcher()
        var released: [LiveFrame] = []
        for n in 0..<(LiveFrameMatcher.maximumPending + 3) {
            released += matcher.addFrame(frame(n), jpeg: [0], receivedNs: wall(0))
        }
        #expect(released.map(\.time) == (0..<3).map { time($0).seconds })
    }
}
