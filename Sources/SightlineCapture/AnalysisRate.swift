/// Which frames are analysed at a chosen rate (`--detect-fps`): N a second, as evenly spaced
/// as the source's frames allow, chosen by their media times (so a paced file, a camera and
/// a file read whole pick the same frames).
///
/// A frame is due one interval after the last one taken; the first frame at or after that
/// time is taken, and the next is due one interval after the due time, not after the frame,
/// so that 30 frames a second at 7 give 7, not 6. After a gap between two frames longer
/// than an interval, or times that went back (a hostile stream), the frame is taken and the
/// count starts from it.
///
/// Not thread-safe: the owner's lock.
package struct AnalysisRate: Sendable {
    /// Seconds between analysed frames.
    package let interval: Double
    private var nextDue: Double?
    /// The last frame's time, taken or not.
    private var lastSeen: Double?

    package init(framesPerSecond: Double) {
        precondition(framesPerSecond > 0 && framesPerSecond.isFinite, "a rate must be positive")
        interval = 1 / framesPerSecond
    }

    /// Whether the frame at `seconds` of media time is analysed.
    package mutating func admits(_ seconds: Double) -> Bool {
        // A frame a hair early is on time: 6/30 s is not always 0.2 in binary.
        let slack = min(interval / 100, 0.001)
        defer { lastSeen = seconds }
        guard let due = nextDue, let lastSeen, seconds > lastSeen, seconds - lastSeen <= interval else {
            nextDue = seconds + interval
            return true
        }
        guard seconds + slack >= due else { return false }
        nextDue = due + interval
        return true
    }
}
