import Foundation
import SightlineCore
import SightlineSamples
import SightlineTesting
import Testing

@testable import SightlineCapture

/// A stream's clock jumping, taken out of its timeline: as values over seeds, then a paced
/// file through the source.
@Suite struct TimestampJumpsTests {
    /// Over 500 seeded streams at 90 kHz (30 frames a second, jittered, with gaps of up to
    /// 9 s kept), each with jumps forward and back, wraps of the 33-bit RTP clock and times
    /// at the ends of Int64: every step that is no jump is kept as it was, and every jump
    /// becomes one frame.
    @Test func jumpsBecomeOneFrameAndEverythingElseIsKept() {
        let frame: Int64 = 3000
        var jumped = 0
        for seed in 0..<500 as Range<UInt64> {
            var random = SplitMix(seed: seed)
            var jumps = TimestampJumps(tickSeconds: 1.0 / 90000, frameTicks: frame)
            var ticks = Int64(random.next(below: 1 << 33))
            var corrected = ticks &+ jumps.place(ticks)
            for _ in 0..<300 {
                let previous = (ticks, corrected)
                switch random.next(below: 40) {
                case 0: ticks &+= Int64(random.next(in: 10.5...100_000) * 90000)  // ahead, beyond ten seconds
                case 1: ticks &-= Int64(random.next(in: 1.5...10_000) * 90000)  // back, beyond a second
                case 2: ticks = Int64(random.next(below: 90000))  // the RTP clock wrapped
                case 3: ticks = random.next(below: 2) == 0 ? .max - Int64(random.next(below: 1000)) : .min  // hostile
                case 4: ticks &+= Int64(random.next(in: 1...9) * 90000)  // a gap of the camera's own, kept
                default: ticks &+= frame + Int64(random.next(below: 1201)) - 600
                }
                corrected = ticks &+ jumps.place(ticks)
                let step = corrected &- previous.1
                // The step as the stream has it, however its values wrapped.
                let raw = ticks &- previous.0
                if Double(raw) / 90000 < -1 || Double(raw) / 90000 > 10 {
                    jumped += 1
                    #expect(step == frame, "seed \(seed): a jump of \(raw) became a step of \(step)")
                } else {
                    #expect(step == raw, "seed \(seed): a step of \(raw) became \(step)")
                }
            }
        }
        #expect(jumped > 500 * 300 / 40 * 2)  // the cases above jump: the property was tried on them
    }

    /// A 3 s file (91 frames: cut there, it ends on the frame shown last) whose timestamps
    /// jump 4,984 s ahead after 1.5 s, read in real time: its frames come on without a wait,
    /// and their times run on one frame apart across the jump.
    @Test func aPacedFilesJumpIsTakenOutOfItsTimes() throws {
        let directory = try TemporaryDirectory("sightline-jump")
        let file = directory.file("jump.ts")
        // The MPEG-TS muxer's time base is 1/90000 before the filter runs.
        let jump = "if(gte(N\\,45)\\,4984*90000\\,0)"
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-v", "error", "-i", SampleMedia.faces640x480.path, "-an", "-frames:v", "91", "-c:v", "copy", "-bsf:v",
                "setts=pts=PTS+\(jump):dts=DTS+\(jump)", "-f", "mpegts", file,
            ])
        try #require(made.status == 0, Comment(rawValue: made.stderr))
        let source = try MediaFileSource(url: file, options: .init(realtime: true))
        var times: [Double] = []
        let started = ContinuousClock.now
        while case .frame(let frame) = try source.read() { times.append(frame.time.seconds) }
        #expect(times.count == 91)
        #expect(ContinuousClock.now - started < .seconds(600))  // not the jump's hour and a half
        let steps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(
            steps.allSatisfy { abs($0 - 1.0 / 30) < 0.002 },
            "\(steps.indices.filter { abs(steps[$0] - 1.0 / 30) >= 0.002 })")

        // Read whole, the file keeps its own times: the jump is where the file has it.
        let whole = try MediaFileSource(url: file)
        var last = 0.0
        var largest = 0.0
        while case .frame(let frame) = try whole.read() {
            largest = max(largest, frame.time.seconds - last)
            last = frame.time.seconds
        }
        #expect(abs(largest - 4984) < 1)
    }
}
