/// Keeps a live stream's timestamps, and a paced file's, running on across a jump of its
/// clock (a camera's clock reset, an RTP timestamp jump, an edited file): the packet after
/// the jump is put one frame after the one before, and everything after it, audio included,
/// is moved by as much.
///
/// A jump is what `RecorderAudio` takes for another clock: a step back of more than a
/// second or ahead of more than ten. Pacing does not wait through such a jump; kept, it
/// would leave hours of still picture in a recording of seconds, and a step back would put
/// frames before those already recorded. A file read whole keeps its own times, so that what
/// is detected in it is timed as the file is.
///
/// Not thread-safe: the source's reading thread.
struct TimestampJumps {
    /// Seconds per tick of the stream's time base.
    let tickSeconds: Double
    /// The stream's frame interval in ticks (at least 1).
    let frameTicks: Int64
    /// Ticks added to every timestamp since the last jump.
    private(set) var correction: Int64 = 0
    /// The last video packet's time, corrected.
    private var last: Int64?

    init(tickSeconds: Double, frameTicks: Int64) {
        self.tickSeconds = tickSeconds
        self.frameTicks = max(frameTicks, 1)
    }

    /// Takes the next video packet's time (its decode time, else its presentation time) and
    /// returns the correction for it and everything after it.
    /// Wrapping arithmetic: a hostile stream's times near the ends of the range cannot
    /// trap, and a step is the difference however the values wrapped.
    mutating func place(_ ticks: Int64) -> Int64 {
        if let last, Self.isJump(seconds: Double(ticks &+ correction &- last) * tickSeconds) {
            correction = last &+ frameTicks &- ticks
        }
        last = ticks &+ correction
        return correction
    }

    /// Whether a step from one packet to the next is a jump of the clock.
    static func isJump(seconds step: Double) -> Bool { step < -1 || step > 10 }
}
