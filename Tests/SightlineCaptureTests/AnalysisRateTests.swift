import SightlineCore
import SightlineSamples
import SightlineTesting
import Testing

@testable import SightlineCapture

/// Analysis at a chosen rate (`--detect-fps`): which frames it takes, as values over seeds,
/// then through a capture session beside an output that takes every frame.
@Suite struct AnalysisRateTests {
    /// Over 1,000 seeded streams (1-120 frames a second, some with a gap of seconds, some
    /// starting anywhere on the clock) and rates of 0.1-200: as many frames are taken as
    /// the rate allows, within one; never two closer than an interval less a frame; every
    /// frame when the rate is the stream's or more; and the first frame after a gap.
    @Test func takesTheRateEvenlySpaced() {
        for seed in 0..<1000 as Range<UInt64> {
            var random = SplitMix(seed: seed)
            let fps = random.next(in: 1...120)
            let wanted = random.next(below: 4) == 0 ? fps * random.next(in: 1...2) : random.next(in: 0.1...fps)
            var rate = AnalysisRate(framesPerSecond: wanted)
            let frame = 1 / fps
            var time = random.next(in: -1e6...1e6)
            var taken: [Double] = []
            var gapAt: Double?
            var gap = 0.0
            for index in 0..<Int(fps * 20) {
                if index == Int(fps * 10), random.next(below: 2) == 0 {
                    gap = random.next(in: 2...30)
                    time += gap
                    gapAt = time
                }
                if rate.admits(time) { taken.append(time) }
                time += frame
            }
            if wanted >= fps {
                #expect(taken.count == Int(fps * 20), "seed \(seed): \(taken.count) of \(Int(fps * 20)) at \(wanted)")
                continue
            }
            let spacing = zip(taken.dropFirst(), taken).map { $0 - $1 }
            #expect(spacing.allSatisfy { $0 > 1 / wanted - frame - 0.001 }, "seed \(seed): \(spacing.min() ?? 0)")
            if let gapAt, gap + frame > 1 / wanted {
                #expect(taken.contains(gapAt), "seed \(seed): the first frame after the gap")
            }
            // Without the gap's seconds: 20 s of frames, each interval's first frame.
            let expected = 20 * wanted
            #expect(
                abs(Double(taken.count) - expected) <= 2 + (gapAt == nil ? 0 : 1),
                "seed \(seed): \(taken.count) taken, \(expected) wanted of \(fps) fps")
        }
    }

    /// Through a session: the detectors' output gets 5 frames a second of the 30 (every
    /// sixth, 50 of the sample's 300), the other 250 counted as `rate`, never `late`; an
    /// output beside it still gets all 300.
    @Test func aSessionAnalysesTheRateAndPassesEveryFrameOn() async throws {
        let analysed = RecordingDelegate()
        let everyFrame = RecordingDelegate()
        let session = CaptureSession(
            source: try MediaFileSource(url: SampleMedia.faces640x480.path),
            outputs: [
                FrameDataOutput(
                    name: "detect", delegate: analysed, alwaysDiscardsLateFrames: false, maximumFramesInFlight: 4,
                    rate: AnalysisRate(framesPerSecond: 5)),
                FrameDataOutput(name: "encode", delegate: everyFrame, alwaysDiscardsLateFrames: false),
            ],
            logger: logger)
        #expect(try await session.run() == .endOfSource)
        let counters = session.counters
        #expect(counters.outputs["detect"] == OutputCounters(delivered: 50, dropped: ["rate": 250]))
        #expect(analysed.received.withLock { $0 } == Array(stride(from: 0, to: 300, by: 6)))
        #expect(everyFrame.received.withLock { $0 } == Array(0..<300))
    }
}
