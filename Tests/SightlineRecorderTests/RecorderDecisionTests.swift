import SightlineCore
import SightlineMovie
import Testing

@testable import SightlineRecorder

/// The recorder's decisions as values, without disk or bus: what metadata waits for its
/// video and when it is due, and which tracks new files declare.
@Suite struct MetadataDelayTests {
    static func group(_ seconds: Int64, faces: Int = 0) -> TimedMetadataGroup {
        let face = FaceObject(
            faceID: 1, bounds: NormalizedRect(x: 0.25, y: 0.25, width: 0.25, height: 0.25), rollAngle: nil,
            yawAngle: nil, time: .zero, duration: nil, score: 1, subDetector: 0)
        let items = faces == 0 ? [] : [MetadataItem.detectedFaces(Array(repeating: face, count: faces))]
        return TimedMetadataGroup(time: MediaTime(value: seconds, timescale: 1), items: items)
    }

    /// Groups leave in time order, equal times in arrival order, only once due.
    @Test func groupsLeaveInTimeOrderWhenDue() {
        var delay = MetadataDelay()
        let arrivals: [(String, Int64)] = [("a", 3), ("b", 1), ("c", 3), ("d", 2), ("e", 1)]
        for (identifier, seconds) in arrivals {
            #expect(delay.add(Self.group(seconds), for: identifier, newestVideo: nil) == nil)
        }
        let cases: [(upTo: Int64?, due: [String])] = [
            (0, []), (1, ["b", "e"]), (2, ["d"]), (2, []), (nil, ["a", "c"]),
        ]
        for (upTo, due) in cases {
            let taken = delay.take(upTo: upTo.map { MediaTime(value: $0, timescale: 1) })
            #expect(taken.map(\.identifier) == due, "up to \(String(describing: upTo))")
        }
        #expect(delay.current["a"]?.time == MediaTime(value: 3, timescale: 1))
        #expect(delay.current["e"]?.time == MediaTime(value: 1, timescale: 1))
        delay.setCurrent(nil, for: "a")
        #expect(delay.current["a"] == nil)
    }

    /// A group more than a minute ahead of the newest video, or an hour behind it, is
    /// refused; one just inside is taken.
    @Test func impossibleTimesAreRefused() {
        var delay = MetadataDelay()
        let video = MediaTime(value: 7200, timescale: 1)
        let cases: [(Int64, MetadataDelay.Refusal?)] = [
            (7261, .impossibleTime), (7260, nil), (3599, .impossibleTime), (3600, nil), (7200, nil),
        ]
        for (seconds, refusal) in cases {
            #expect(delay.add(Self.group(seconds), for: "x", newestVideo: video) == refusal, "\(seconds) s")
        }
        #expect(delay.add(Self.group(1_000_000), for: "x", newestVideo: nil) == nil)  // no video yet: any time
    }

    /// The delay holds a weight of 8,192 at most: a group 1, a face 1 more; what is taken
    /// out makes room again.
    @Test func theDelayIsBoundedByWeight() {
        var delay = MetadataDelay()
        // 8,191 = 8 groups of 1,023 faces (8 × 1,024) less 1.
        for n in 0..<7 { #expect(delay.add(Self.group(Int64(n), faces: 1023), for: "f", newestVideo: nil) == nil) }
        #expect(delay.add(Self.group(7, faces: 1023), for: "f", newestVideo: nil) == nil)  // 8,192: full
        #expect(delay.add(Self.group(8), for: "f", newestVideo: nil) == .overflow)
        #expect(delay.take(upTo: .zero).count == 1)
        #expect(delay.add(Self.group(8, faces: 1023), for: "f", newestVideo: nil) == nil)
        #expect(delay.add(Self.group(9), for: "f", newestVideo: nil) == .overflow)
    }
}

@Suite struct RecordedTracksTests {
    /// Faces are declared from the start; a status learns codes and the identity fields,
    /// each once, in the status's order of kinds; a client identifier adds its track.
    @Test func aStatusDeclaresItsKindsOnce() {
        var tracks = RecordedTracks()
        #expect(tracks.tracks.map(\.identifier) == [MetadataIdentifier.detectedFace])
        #expect(tracks.format(of: MetadataIdentifier.detectedFace) == .detectedFaces)
        let steps: [(detections: [String], changes: [RecordedTracks.Change])] = [
            (["faces"], []),
            (
                ["barcodes", "faces", "identities"],
                [
                    .newTrack(MetadataIdentifier.detectedMachineReadableCodes),
                    .extraFields(kind: "faces", detection: "identities"),
                ]
            ),
            (["barcodes", "faces", "identities"], []),
        ]
        for (detections, changes) in steps {
            #expect(tracks.learn(detections: detections) == changes, "\(detections)")
        }
        #expect(tracks.format(of: MetadataIdentifier.detectedFace) == .detectedFacesWithIdentities)
        let client = MetadataTrackFormat.client(identifier: "mdta/com.example.count", dataType: .int32)
        #expect(tracks.learn("mdta/com.example.count", client) == .newTrack("mdta/com.example.count"))
        #expect(tracks.learn("mdta/com.example.count", client) == nil)
        #expect(
            tracks.tracks.map(\.identifier) == [
                MetadataIdentifier.detectedFace, MetadataIdentifier.detectedMachineReadableCodes,
                "mdta/com.example.count",
            ])
    }

    /// A kind without extra fields, or not yet declared, learns none.
    @Test func extraFieldsNeedAKindThatHasThem() {
        var tracks = RecordedTracks()
        #expect(tracks.learnExtraFields(of: .codes) == nil)
        #expect(tracks.learnExtraFields(of: .faces) == .extraFields(kind: "faces", detection: "identities"))
        #expect(tracks.learnExtraFields(of: .faces) == nil)
    }
}
