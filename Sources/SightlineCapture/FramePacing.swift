import Foundation
import SightlineCore

/// Hands a file's frames over at their timestamps, as a live camera does (`--realtime`), and
/// has each frame decoded just before it is due.
///
/// A camera's frame is captured without the host's CPU; a paced file's has to be decoded.
/// Decoded as soon as the frame before it was handed over, it shared the cores with that
/// frame's analysis and slowed it: at 1280x720 decoding took 3.5 ms (7.5 at p90) while the
/// detector ran on both cores, and capture-to-publish latency missed detector p99 + 5 ms.
/// Started `lead` before the frame is due, decoding runs while the cores are idle between
/// frames. The lead follows how long decoding usually takes, so a frame is seldom late; a
/// late one is stamped with the time it was due, so that its lateness counts in its latency.
struct FramePacing {
    private let clock = ContinuousClock()
    /// Seconds per timestamp tick.
    private let tickSeconds: Double
    /// Frame interval; nil when the stream does not say (then frames are decoded at once).
    private let frameInterval: Duration?
    /// The first frame's timestamp and when it was handed over: every later frame is due
    /// at the same offset from it as its timestamp is from the first. Nil until a frame
    /// was handed over, and again after a loop back to the start.
    private(set) var origin: (pts: Int64, at: ContinuousClock.Instant)?
    /// When the next frame is due, one interval after the last.
    private var nextDue: ContinuousClock.Instant?
    private var decodeStarted: ContinuousClock.Instant?
    /// How long decoding a frame takes, a moving average over the last 10 or so frames.
    private var decodeTime: Duration?

    init(tickSeconds: Double, frameInterval: Duration?) {
        self.tickSeconds = tickSeconds
        self.frameInterval = frameInterval
    }

    /// How long before the next frame is due its decoding starts: twice the usual decoding
    /// and 2 ms, at most a frame interval. Not the slowest: a frame whose decoding shared the
    /// cores took twice the usual or more (7.5 ms at p90 against 3.6 at the median, 1280x720),
    /// and a lead that long would have every frame's decoding share them again.
    var lead: Duration {
        guard let frameInterval else { return .zero }
        return min(frameInterval, (decodeTime ?? .zero) * 2 + .milliseconds(2))
    }

    /// Sleeps until the next frame's decoding is to start (at once for the first frame), or
    /// until `interrupt` is set.
    mutating func waitToDecode(interrupt: InterruptFlag) {
        if let nextDue { interrupt.sleep(until: nextDue - lead) }
        decodeStarted = clock.now
    }

    /// Sleeps until the decoded frame with timestamp `pts` is due, or until `interrupt` is
    /// set; returns how late it is (zero when on time).
    mutating func waitUntilDue(pts: Int64, interrupt: InterruptFlag) -> Duration {
        let now = clock.now
        if let decodeStarted {
            let took = now - decodeStarted
            decodeTime = decodeTime.map { $0 + (took - $0) / 10 } ?? took
        }
        var due: ContinuousClock.Instant
        if let origin {
            due = origin.at + .seconds(Double(pts - origin.pts) * tickSeconds)
            // A jump of the timestamps (a stream's clock reset or wrapped, an edited file)
            // is not a wait of hours, nor a burst of frames all late: the frame is due one
            // interval after the last, and the frames after it keep time from it.
            if let expected = nextDue, let frameInterval,
                due - expected > Self.largestJump(frameInterval) || expected - due > Self.largestJump(frameInterval)
            {
                due = max(now, expected)
                self.origin = (pts, due)
            }
        } else {
            // The first frame, or the first after a loop, one interval after the last.
            due = max(now, nextDue ?? now)
            origin = (pts, due)
        }
        nextDue = frameInterval.map { due + $0 }
        interrupt.sleep(until: due)
        return max(.zero, now - due)
    }

    /// How far a frame may be off its place one interval after the last before its
    /// timestamps are taken to have jumped: a second, or four intervals of a slower stream.
    static func largestJump(_ frameInterval: Duration) -> Duration { max(.seconds(1), frameInterval * 4) }

    /// After looping back to the start, whose timestamps begin again: the next frame sets a
    /// new origin.
    mutating func restart() { origin = nil }
}
