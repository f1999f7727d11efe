import Foundation
import Synchronization

/// Set from any thread to make a source's blocking work give up: FFmpeg's blocking calls
/// (through their interrupt callback, which reads `isSet`), and the waits of pacing and
/// reconnection, which `set()` ends at once instead of at their next check.
final class InterruptFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    private let condition = ConditionCell()

    var isSet: Bool { flag.load(ordering: .acquiring) }

    /// Any thread.
    func set() {
        flag.store(true, ordering: .releasing)
        condition.broadcast()
    }

    /// Waits until `deadline` or until the flag is set, whichever comes first; returns
    /// whether it is set. Called on the thread that owns the source.
    @discardableResult
    func sleep(until deadline: ContinuousClock.Instant) -> Bool {
        condition.wait(until: deadline) { isSet }
        return isSet
    }
}

/// An `NSCondition` that only wakes sleepers: the state it waits for is atomic.
private final class ConditionCell: @unchecked Sendable {  // NSCondition is thread-safe but not marked Sendable
    private let condition = NSCondition()

    func broadcast() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `deadline` or `done()`. The wait is on the wall clock (all NSCondition
    /// offers), so it is taken in steps of at most a second and the monotonic deadline is
    /// checked after each: a clock step can shorten or lengthen one step, never the whole.
    func wait(until deadline: ContinuousClock.Instant, done: () -> Bool) {
        let clock = ContinuousClock()
        condition.lock()
        defer { condition.unlock() }
        while !done() {
            let left = deadline - clock.now
            guard left > .zero else { return }
            let step = min(left, .seconds(1))
            let seconds = Double(step.components.seconds) + Double(step.components.attoseconds) / 1e18
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
    }
}
