import Foundation
import SightlineCore
import SightlineSamples
import Testing

@testable import SightlineCapture

/// Only lower bounds on time: a loaded machine can make every wait longer, never shorter.
@Suite struct FramePacingTests {
    @Test func decodingWaitsUntilALeadBeforeTheFrameIsDue() throws {
        let clock = ContinuousClock()
        let interval = Duration.milliseconds(100)
        var pacing = FramePacing(tickSeconds: 1.0 / 30, frameInterval: interval)
        pacing.waitToDecode(interrupt: InterruptFlag())
        #expect(pacing.waitUntilDue(pts: 0, interrupt: InterruptFlag()) == .zero)  // the first is due at once
        let origin = try #require(pacing.origin)
        #expect(origin.pts == 0)

        let lead = pacing.lead
        #expect(lead >= .milliseconds(2) && lead <= interval)
        pacing.waitToDecode(interrupt: InterruptFlag())
        #expect(clock.now >= origin.at + interval - lead)
        _ = pacing.waitUntilDue(pts: 3, interrupt: InterruptFlag())  // 3 ticks of 1/30 s: 100 ms in
        #expect(clock.now >= origin.at + interval)

        // Looped back to the start: timestamps begin again, one interval after the last frame.
        pacing.restart()
        pacing.waitToDecode(interrupt: InterruptFlag())
        _ = pacing.waitUntilDue(pts: 0, interrupt: InterruptFlag())
        #expect(clock.now >= origin.at + interval * 2)
        #expect(pacing.origin?.pts == 0)

        #expect(FramePacing(tickSeconds: 1.0 / 30, frameInterval: nil).lead == .zero)  // no frame rate: at once
    }

    /// Timestamps that jump (a paced file edited, a stream's clock reset): 4,984 s forward or
    /// an hour back, the frame after the jump is due one interval after the last, not in
    /// hours, and the frames after it keep time from it.
    @Test(arguments: [4984 * 30, -3600 * 30] as [Int64]) func aTimestampJumpIsNotWaitedFor(jump: Int64) throws {
        let started = ContinuousClock.now
        var pacing = FramePacing(tickSeconds: 1.0 / 30, frameInterval: .milliseconds(33))
        for pts in 0..<3 as Range<Int64> {
            pacing.waitToDecode(interrupt: InterruptFlag())
            _ = pacing.waitUntilDue(pts: pts, interrupt: InterruptFlag())
        }
        let before = try #require(pacing.origin)
        pacing.waitToDecode(interrupt: InterruptFlag())
        _ = pacing.waitUntilDue(pts: 3 + jump, interrupt: InterruptFlag())
        let after = try #require(pacing.origin)
        #expect(after.pts == 3 + jump)
        #expect(after.at >= before.at + .milliseconds(99))
        #expect(ContinuousClock.now - started < .seconds(600))  // not the jump's hours
        pacing.waitToDecode(interrupt: InterruptFlag())
        _ = pacing.waitUntilDue(pts: 4 + jump, interrupt: InterruptFlag())
        #expect(pacing.origin?.pts == 3 + jump)  // the next keeps time from the new origin
    }

    /// A wait for a frame due in an hour ends when the source is cancelled from another
    /// thread (a stop no longer waits for a 50 ms nap to end, nor for the frame).
    @Test func anInterruptEndsTheWait() async throws {
        let interrupt = InterruptFlag()
        let waiting = Task.detached { interrupt.sleep(until: .now + .seconds(3600)) }
        interrupt.set()
        #expect(await waiting.value)
        #expect(interrupt.sleep(until: .now + .seconds(3600)))  // set: returns at once
        #expect(!InterruptFlag().sleep(until: .now + .milliseconds(5)))  // the deadline passed
        // A deadline from a hostile file's timestamps, centuries away, is waited for at most
        // 2^31 s, without trapping.
        #expect(InterruptFlag.timeout(.seconds(1e15)) == .nanoseconds(Int(Int32.max) * 1_000_000_000))
        #expect(InterruptFlag.timeout(.milliseconds(1500)) == .nanoseconds(1_500_000_000))
    }

    /// A consumer that takes longer than a frame interval gets the next frame late; it is
    /// stamped when it was due, so its lateness counts in capture-to-publish latency.
    @Test func aLateFrameIsStampedWhenItWasDue() throws {
        let source = try MediaFileSource(url: SampleMedia.faces640x480.path, options: .init(realtime: true))
        guard case .frame(let first) = try source.read() else { throw SightlineError.detector("no frame") }
        Thread.sleep(forTimeInterval: 0.5)
        guard case .frame(let second) = try source.read() else { throw SightlineError.detector("no frame") }
        let apart = Double(second.wallClockNanoseconds - first.wallClockNanoseconds) / 1e6
        #expect(apart < 400)  // due 33 ms after the first; read 500 ms after it
        #expect(second.index == first.index + 1)
    }
}
