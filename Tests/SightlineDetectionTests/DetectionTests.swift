import Foundation
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineSamples
import Testing

/// One line of Golden/faces_640x480.hog.jsonl, written by tools/make-golden.py with the
/// Python dlib binding on the luma plane of each frame of the sample.
struct GoldenLine: Decodable {
    let frame: Int
    let upsample: Int
    let adjustThreshold: Double
    let dets: [[Double]]
}

func goldenLines() throws -> [GoldenLine] {
    let url = Bundle.module.resourceURL!.appendingPathComponent("Golden/faces_640x480.hog.jsonl")
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase  // adjust_threshold
    return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
        try decoder.decode(GoldenLine.self, from: Data($0.utf8))
    }
}

func sampleFrames(_ url: URL = SampleMedia.faces640x480) throws -> [VideoFrame] {
    let source = try MediaFileSource(url: url.path)
    var frames: [VideoFrame] = []
    while case .frame(let frame) = try source.read() { frames.append(frame) }
    return frames
}

@Suite struct FaceDetectorTests {
    /// Boxes and sub-detectors exactly as the Python binding gives them (±1 px where a
    /// coordinate is negative, where dlib versions round differently), scores within 1e-5.
    @Test(arguments: [(0, 0.0, 1), (0, -0.5, 3), (1, 0.0, 10)])
    func matchesPythonDlib(upsample: Int, threshold: Double, everyNthFrame: Int) throws {
        let frames = try sampleFrames()
        let golden = try goldenLines().filter { $0.upsample == upsample && $0.adjustThreshold == threshold }
        #expect(golden.count == 300 && frames.count == 300)
        let detector = try FaceDetector(configuration: .init(upsample: upsample, adjustThreshold: threshold))
        var compared = 0
        for line in golden where line.frame % everyNthFrame == 0 {
            let ours = try detector.detect(in: frames[line.frame].pixels)
            try #require(ours.count == line.dets.count, "frame \(line.frame)")
            for (face, expected) in zip(ours, line.dets) {
                let box = [face.left, face.top, face.right, face.bottom]
                for (value, want) in zip(box, expected.prefix(4).map { Int($0) }) {
                    #expect(abs(value - want) <= (want < 0 ? 1 : 0), "frame \(line.frame) box \(box) vs \(expected)")
                }
                #expect(abs(face.score - expected[4]) <= 1e-5, "frame \(line.frame)")
                #expect(face.subDetector == Int(expected[5]), "frame \(line.frame)")
                compared += 1
            }
        }
        #expect(compared > 30)
    }

    /// A frame's scan spread over any number of threads gives the one-thread answers
    /// exactly (boxes, scores, filters, order), at upsample 0 and 1, on both sample sizes.
    @Test(arguments: [(SampleMedia.faces640x480, 0), (SampleMedia.faces640x480, 1), (SampleMedia.faces1280x720, 0)])
    func sameAnswersOnAnyNumberOfThreads(clip: URL, upsample: Int) throws {
        let frames = try sampleFrames(clip)
        let single = try FaceDetector(configuration: .init(upsample: upsample, adjustThreshold: -0.5, threads: 1))
        let spread = try [2, 3, 5].map {
            try FaceDetector(configuration: .init(upsample: upsample, adjustThreshold: -0.5, threads: $0))
        }
        var faces = 0
        for frame in frames.enumerated().filter({ $0.offset % 15 == 0 }).map(\.element) {
            let expected = try single.detect(in: frame.pixels)
            faces += expected.count
            for detector in spread {
                #expect(try detector.detect(in: frame.pixels) == expected, "\(detector.configuration.threads) threads")
            }
        }
        #expect(faces > 10)
    }

    @Test func ignoresFacesBelowTheMinimumSize() throws {
        let frame = try sampleFrames()[150]
        let all = try FaceDetector().detect(in: frame.pixels)
        let large = try FaceDetector(configuration: .init(minimumFaceSize: 120)).detect(in: frame.pixels)
        #expect(!all.isEmpty)
        #expect(large == all.filter { $0.width >= 120 })
    }

    @Test func rejectsBadConfigurationAndInput() throws {
        #expect(throws: SightlineError.self) { try FaceDetector(configuration: .init(upsample: 9)) }
        #expect(throws: SightlineError.self) { try FaceDetector(configuration: .init(adjustThreshold: .nan)) }
        #expect(throws: SightlineError.self) { try FaceDetector(configuration: .init(threads: 0)) }
        #expect(throws: SightlineError.self) { try FaceDetector(configuration: .init(threads: 65)) }
        #expect(throws: SightlineError.self) { try FaceDetector(configuration: .init(fullScanInterval: 0)) }
        #expect(throws: SightlineError.self) { try FaceDetector(configuration: .init(fullScanInterval: 301)) }
        #expect(try FaceDetector(configuration: .init(fullScanInterval: 300)).configuration.fullScanInterval == 300)
        let rgb = PixelBuffer(format: .rgb24, width: 1, height: 1, packedPlanes: [[0, 0, 0]])
        #expect(throws: SightlineError.self) { try FaceDetector().detect(in: rgb) }
    }

    @Test func findsNoFaceInABlankImage() throws {
        let gray = PixelBuffer(
            format: .gray8, width: 320, height: 240, packedPlanes: [[UInt8](repeating: 128, count: 320 * 240)])
        #expect(try FaceDetector().detect(in: gray).isEmpty)
    }
}

@Suite struct FaceTrackerTests {
    func detection(_ left: Int, _ top: Int, size: Int = 100) -> FaceDetection {
        FaceDetection(left: left, top: top, right: left + size - 1, bottom: top + size - 1, score: 1, subDetector: 0)
    }

    @Test func keepsIDsWhileFacesMoveAndExpiresMissedOnes() {
        let tracker = FaceTracker(maximumMissedFrames: 2)
        func step(_ n: Int, _ detections: [FaceDetection]) -> FaceTracker.Update {
            tracker.update(
                detections: detections, imageWidth: 640, imageHeight: 480,
                time: MediaTime(value: Int64(n), timescale: 30), duration: nil)
        }
        var update = step(0, [detection(10, 10), detection(300, 200)])
        #expect(update.entered.map(\.faceID) == [1, 2])
        update = step(1, [detection(318, 205), detection(15, 12)])  // order changed, both moved
        #expect(update.objects.map(\.faceID) == [2, 1])
        #expect(update.entered.isEmpty)
        update = step(2, [detection(20, 14)])  // face 2 missed once
        update = step(3, [detection(25, 16), detection(330, 210)])  // …and back: same ID
        #expect(update.objects.map(\.faceID) == [1, 2])
        for n in 4...6 { update = step(n, [detection(25, 16)]) }  // face 2 missed three times
        #expect(update.left.map(\.faceID) == [2])
        #expect(update.left.first?.time == MediaTime(value: 3, timescale: 30))  // as last seen
        update = step(7, [detection(25, 16), detection(330, 210)])
        #expect(update.entered.map(\.faceID) == [3])  // a face that left comes back new
        #expect(tracker.finish().map(\.faceID).sorted() == [1, 3])
    }

    /// On the sample, a pan across four portraits, every face keeps one ID while in view.
    @Test func idsAreStableThroughTheSample() throws {
        let frames = try sampleFrames()
        let detector = try FaceDetector()
        let tracker = FaceTracker()
        var framesPerID: [Int: [Int]] = [:]
        var entered = 0
        var left = 0
        for frame in frames {
            let update = tracker.update(
                detections: try detector.detect(in: frame.pixels), imageWidth: 640, imageHeight: 480, time: frame.time,
                duration: frame.duration)
            entered += update.entered.count
            left += update.left.count
            for face in update.objects { framesPerID[face.faceID, default: []].append(frame.index) }
        }
        left += tracker.finish().count
        #expect(entered == left)
        // Four faces cross the view, each in sight for about 3.5 s: four IDs, no more.
        #expect(framesPerID.count == 4, "\(framesPerID.mapValues(\.count))")
        #expect(framesPerID.values.allSatisfy { $0.count >= 100 }, "\(framesPerID.mapValues(\.count))")
        // IDs are handed out in order of appearance, left to right across the strip.
        #expect(framesPerID.keys.sorted().map { framesPerID[$0]!.first! } == framesPerID.values.map(\.first!).sorted())
    }
}
