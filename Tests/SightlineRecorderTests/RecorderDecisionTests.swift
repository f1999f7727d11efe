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

    /// A turned source declares the orientation track once; each new turn changes new
    /// files, the same turn or one outside EXIF's 2-8 does not.
    @Test func aTurnedSourceDeclaresItsOrientation() {
        var tracks = RecordedTracks()
        let changes = [1, 6, 6, 9, 3, 0].map { tracks.learn(orientation: $0) }
        #expect(changes == [nil, .orientation(6), nil, nil, .orientation(3), nil])
        #expect(tracks.orientation == 3)
        #expect(tracks.tracks.filter { $0.identifier == MetadataIdentifier.videoOrientation }.count == 1)
        #expect(tracks.format(of: MetadataIdentifier.videoOrientation) == .videoOrientation)
    }

    /// A kind without extra fields, or not yet declared, learns none.
    @Test func extraFieldsNeedAKindThatHasThem() {
        var tracks = RecordedTracks()
        #expect(tracks.learnExtraFields(of: .codes) == nil)
        #expect(tracks.learnExtraFields(of: .faces) == .extraFields(kind: "faces", detection: "identities"))
        #expect(tracks.learnExtraFields(of: .faces) == nil)
    }
}

@Suite struct VideoDecisionsTests {
    static let sps: [ArraySlice<UInt8>] = [[0x67, 1, 2], [0x68, 3]]

    /// A frame at `seconds`, a key frame when `key`; key frames carry `sets`.
    static func frame(_ seconds: Double, key: Bool, sets: [ArraySlice<UInt8>] = sps) -> VideoDecisions.Frame {
        VideoDecisions.Frame(
            isKeyFrame: key, time: MediaTime(value: Int64(seconds * 30), timescale: 30), parameterSets: key ? sets : [])
    }

    /// Plays `steps` against fresh decisions, with the file coming once a key frame started
    /// one; returns each frame's action.
    static func actions(
        _ limits: VideoDecisions.Limits, _ steps: [(frame: VideoDecisions.Frame, free: UInt64?, bytes: UInt64?)]
    ) -> [VideoDecisions.Action] {
        var decisions = VideoDecisions(limits: limits)
        var fileComing = false
        return steps.map { step in
            let decision = decisions.decide(
                step.frame, files: .init(fileComing: fileComing, openFileBytes: step.bytes), freeSpace: { step.free },
                now: .now)
            if decision.action == .startFile { fileComing = true }
            if case .paused = decision.space { fileComing = false }
            return decision.action
        }
    }

    static func limits(segment: Double? = nil, size: UInt64? = nil) -> VideoDecisions.Limits {
        var configuration = RecorderConfiguration(sourceID: "cam", directory: "/nowhere")
        configuration.segmentDuration = segment.map { MediaTime(value: Int64($0 * 30), timescale: 30) }
        configuration.maximumFileSize = size
        configuration.minimumFreeSpace = 100
        return .init(configuration)
    }

    /// Nothing before the first key frame; key frames every second start files every
    /// `segmentDuration` (2 s), at the first key frame past it, not at every key frame.
    @Test func segmentsStartAtTheFirstKeyFramePastTheirDuration() {
        let steps: [(Double, Bool)] = [
            (0, false), (0.5, true), (1, false), (1.5, true), (2.4, false), (2.5, true), (3.5, true), (4.5, true),
        ]
        let expected: [VideoDecisions.Action] = [
            .drop(reason: "beforeKeyFrame"), .startFile, .append, .append, .append, .startFile, .append, .startFile,
        ]
        #expect(Self.actions(Self.limits(segment: 2), steps.map { (Self.frame($0, key: $1), 1000, nil) }) == expected)
    }

    /// The open file's size starts the next file at a key frame, unless a successor is
    /// already decided (no size then); new parameter sets always start one; a key frame
    /// that must start a file without its SPS and PPS is dropped as malformed.
    @Test func sizeAndParameterSetsStartFiles() {
        let other: [ArraySlice<UInt8>] = [[0x67, 9], [0x68, 9]]
        let steps: [(VideoDecisions.Frame, UInt64?, UInt64?)] = [
            (Self.frame(0, key: true, sets: []), 1000, nil), (Self.frame(0.1, key: true), 1000, nil),
            (Self.frame(1, key: true), 1000, 499), (Self.frame(2, key: true), 1000, 500),
            (Self.frame(3, key: true), 1000, nil), (Self.frame(4, key: true, sets: other), 1000, 10),
            (Self.frame(5, key: true, sets: other), 1000, 10),
        ]
        #expect(
            Self.actions(Self.limits(size: 500), steps) == [
                .drop(reason: "malformed", why: "a key frame came without its SPS and PPS"), .startFile, .append,
                .startFile, .append, .startFile, .append,
            ])
    }

    /// Below the free-space limit a key frame pauses recording once; frames are dropped as
    /// `diskFull` until a key frame finds room, which starts a new file.
    @Test func diskSpacePausesAndResumesAtKeyFrames() {
        var decisions = VideoDecisions(limits: Self.limits())
        let steps: [(VideoDecisions.Frame, UInt64?, Bool, VideoDecisions.Decision)] = [
            (Self.frame(0, key: true), 1000, false, .init(action: .startFile)),
            (
                Self.frame(1, key: true), 99, true,
                .init(space: .paused(freeBytes: 99), action: .drop(reason: "diskFull"))
            ),
            (Self.frame(1.5, key: false), 99, false, .init(action: .drop(reason: "diskFull"))),
            (Self.frame(2, key: true), 50, false, .init(action: .drop(reason: "diskFull"))),
            (Self.frame(2.5, key: false), 1000, false, .init(action: .drop(reason: "diskFull"))),
            (Self.frame(3, key: true), nil, false, .init(space: .resumed(freeBytes: 100), action: .startFile)),
        ]
        for (index, (frame, free, fileComing, expected)) in steps.enumerated() {
            let measured = index == 5 ? 100 : free
            let decision = decisions.decide(
                frame, files: .init(fileComing: fileComing, openFileBytes: nil), freeSpace: { measured }, now: .now)
            #expect(decision == expected, "step \(index)")
            #expect((decisions.pausedWithFreeBytes != nil) == (1...4).contains(index), "step \(index)")
        }
        #expect(decisions.pausedWithFreeBytes == nil)
    }

    /// A gap waits for the next key frame and counts the messages lost; a new run numbers
    /// from 0 again without a gap.
    @Test func gapsWaitForAKeyFrame() {
        var decisions = VideoDecisions(limits: Self.limits())
        func action(_ frame: VideoDecisions.Frame) -> VideoDecisions.Action {
            let files = VideoDecisions.Files(fileComing: true, openFileBytes: nil)
            return decisions.decide(frame, files: files, freeSpace: { 1000 }, now: .now).action
        }
        let lost = [0, 1, 2, 6, 7, 3, UInt64.max].map { decisions.sequence($0) }
        // 3 after 7: numbers going back are a gap with none counted lost; the largest jump
        // is clamped, without a trap.
        #expect(lost == [nil, nil, nil, 3, nil, 0, Int.max])
        #expect(action(Self.frame(1, key: false)) == .drop(reason: "gap"))
        #expect(action(Self.frame(2, key: true)) == .startFile)  // new parameter sets
        #expect(action(Self.frame(3, key: false)) == .append)
        decisions.startNewRun()
        let afterNewRun = decisions.sequence(0)
        #expect(afterNewRun == nil)
        #expect(action(Self.frame(4, key: false)) == .append)
    }

    /// After a failure a new file is tried at the first key frame once the back-off (0.5 s,
    /// doubling to 2 s) is over; the first failure of a run is the one reported, and a
    /// written frame ends the run and the back-off.
    @Test func failuresBackOffUntilAFrameIsWritten() {
        var decisions = VideoDecisions(limits: Self.limits())
        let start = ContinuousClock.now
        let noFile = VideoDecisions.Files(fileComing: false, openFileBytes: nil)
        func action(_ frame: VideoDecisions.Frame, after ms: Int) -> VideoDecisions.Action {
            decisions.decide(frame, files: noFile, freeSpace: { 1000 }, now: start + .milliseconds(ms)).action
        }
        let firstFailure = decisions.failed("disk full", now: start)
        #expect(firstFailure)
        #expect(decisions.failureReason == "disk full")
        #expect(action(Self.frame(0, key: true), after: 499) == .drop(reason: "writeFailed"))
        #expect(action(Self.frame(0, key: false), after: 500) == .drop(reason: "writeFailed"))
        #expect(action(Self.frame(1, key: true), after: 500) == .startFile)
        let secondFailure = decisions.failed("disk full again", now: start + .milliseconds(500))
        #expect(!secondFailure)
        #expect(action(Self.frame(2, key: true), after: 1499) == .drop(reason: "writeFailed"))
        #expect(action(Self.frame(2, key: true), after: 1500) == .startFile)
        for failure in 0..<3 { _ = decisions.failed("again", now: start + .seconds(10 * (failure + 1))) }
        #expect(action(Self.frame(3, key: true), after: 31_999) == .drop(reason: "writeFailed"))
        #expect(action(Self.frame(3, key: true), after: 32_000) == .startFile)  // 2 s at most
        let resumed = decisions.frameWritten()
        #expect(resumed)
        let resumedAgain = decisions.frameWritten()
        #expect(!resumedAgain)
        #expect(decisions.failureReason == nil)
        let laterFailure = decisions.failed("later", now: start + .seconds(40))
        #expect(laterFailure)  // a new run of failures
    }
}

@Suite struct MetadataIntakeTests {
    static func client(_ input: String, _ items: [(String, String, ClientMetadataValue)], at seconds: Int64) -> Message
    {
        Message(
            kind: .metadata, source: "cam", time: MediaTime(value: seconds, timescale: 1), wallTimeNs: 1,
            metadata: ClientMetadataGroup(
                input: input,
                items: items.map { ClientMetadataItem(identifier: $0.0, dataType: $0.1, value: $0.2) }))
    }

    /// A client input's group replaces its last one: an identifier it no longer has ends
    /// (an empty group); a data type that changed is refused; each new identifier is a
    /// track new files declare, once.
    @Test func clientGroupsReplaceTheInputsLast() {
        var intake = MetadataIntake(clientTracks: [])
        let (speed, count) = ("mdta/com.example.speed", "mdta/com.example.count")
        let steps: [(Message, MetadataIntake.Outcome)] = [
            (
                Self.client("gps", [(speed, "float64", .number(1)), (count, "int32", .integer(2))], at: 1),
                .init(changes: [.newTrack(speed), .newTrack(count)], earliest: MediaTime(value: 1, timescale: 1))
            ),
            (
                Self.client("gps", [(speed, "float64", .number(3))], at: 2),
                .init(earliest: MediaTime(value: 2, timescale: 1))
            ),
            (
                Self.client("gps", [(speed, "int32", .integer(3))], at: 3),
                .init(refused: ["dataTypeChanged"], earliest: nil)
            ),
            (
                Message(kind: .metadata, source: "cam", time: nil, wallTimeNs: 1),
                .init(refused: ["malformed"])
            ),
        ]
        for (index, (message, expected)) in steps.enumerated() {
            #expect(intake.client(message, newestVideo: nil) == expected, "step \(index)")
        }
        let due = intake.take(upTo: nil)
        #expect(due.map(\.identifier) == [speed, count, speed, count])
        #expect(due.map(\.group.items.count) == [1, 1, 1, 0])  // count ended at 2 s
        #expect(intake.current[count]?.items.isEmpty == true)
    }

    /// Objects of a kind: the kind's track once, its extra fields once they are used, and
    /// what waits refused beyond a minute ahead of the video; a new run forgets what held.
    @Test func objectsLearnTheirKindsTrack() {
        var intake = MetadataIntake(clientTracks: [("mdta/com.example.count", .int32)])
        #expect(intake.tracks.tracks.count == 2)
        let code = MachineReadableCodeObject(
            codeID: 1, type: .qr, stringValue: "x",
            corners: [.init(x: 0.1, y: 0.1), .init(x: 0.2, y: 0.1), .init(x: 0.2, y: 0.2), .init(x: 0.1, y: 0.2)],
            time: .zero, duration: nil)
        let codes = Message(
            kind: .codes, source: "cam", time: MediaTime(value: 5, timescale: 1), wallTimeNs: 1, codes: [code])
        let first = intake.objects(of: .codes, codes, newestVideo: nil)
        #expect(first.changes == [.newTrack(MetadataIdentifier.detectedMachineReadableCodes)])
        #expect(first.earliest == MediaTime(value: 5, timescale: 1))
        let again = intake.objects(of: .codes, codes, newestVideo: MediaTime(value: 5, timescale: 1))
        #expect(again == .init(earliest: MediaTime(value: 5, timescale: 1)))
        let ahead = intake.objects(of: .codes, codes, newestVideo: MediaTime(value: -56, timescale: 1))
        #expect(ahead == .init(refused: ["impossibleTime"]))
        _ = intake.take(upTo: nil)
        #expect(intake.current[MetadataIdentifier.detectedMachineReadableCodes] != nil)
        intake.startNewRun()
        #expect(intake.current[MetadataIdentifier.detectedMachineReadableCodes] == nil)
    }

    /// A status declares its kinds' tracks; a turned source its orientation, which then
    /// holds for new files from their first frame.
    @Test func aStatusDeclaresKindsAndOrientation() {
        var intake = MetadataIntake(clientTracks: [])
        let input = InputDescription(
            url: "x", width: 2, height: 2, pixelFormat: "yuv420p", frameRate: 30, orientation: 6)
        let outcome = intake.status(SourceStatus(state: .started, input: input, detections: ["faces", "barcodes"]))
        #expect(
            outcome.changes == [.newTrack(MetadataIdentifier.detectedMachineReadableCodes), .orientation(6)])
        #expect(intake.tracks.orientation == 6)
        #expect(intake.current[MetadataIdentifier.videoOrientation]?.items.first?.value == .int(6))
    }
}
