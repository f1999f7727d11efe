import Dispatch
import Synchronization

/// Set from any thread to make a source's blocking work give up: FFmpeg's blocking calls
/// (through their interrupt callback, which reads `isSet`), and the waits of pacing and
/// reconnection, which `set()` ends at once instead of at their next check. A source owns
/// one for its life; whoever opens a stream may hand it one, to give up the opening itself.
package final class InterruptFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Signalled by `set()`: wakes the thread in `sleep(until:)`. Dispatch's waits are on
    /// the monotonic clock, so a step of the wall clock neither ends nor stretches one.
    private let wakeUp = DispatchSemaphore(value: 0)

    package init() {}

    package var isSet: Bool { flag.load(ordering: .acquiring) }

    /// Any thread.
    package func set() {
        if !flag.exchange(true, ordering: .acquiringAndReleasing) { wakeUp.signal() }
    }

    /// Ends a `sleep(until:)` early without setting the flag (a camera appeared: try it
    /// now). Any thread.
    func nudge() { wakeUp.signal() }

    /// Waits until `deadline`, until the flag is set, or until nudged; returns
    /// whether it is set. Called by one thread at a time: the one that owns the source.
    @discardableResult
    func sleep(until deadline: ContinuousClock.Instant) -> Bool {
        guard !isSet else { return true }
        let left = deadline - .now
        guard left > .zero else { return false }
        if wakeUp.wait(timeout: .now() + Self.timeout(left)) == .success, isSet {
            wakeUp.signal()  // set for good: a later sleep returns at once as well
        }
        return isSet
    }

    /// `left` as Dispatch takes it, at most 2^31 s: a deadline from a file's timestamps can
    /// be centuries away, and nanoseconds past 2^63 would trap.
    static func timeout(_ left: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = min(left, .seconds(Int64(Int32.max))).components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
