/// A wait that may never end (a subscriber connected where nothing publishes, with the
/// wrong keys): said after 2 s, then every 10 s, until it ends, so that a person is never
/// left looking at silence.
package struct WaitNotice: Sendable {
    private let started = ContinuousClock.now
    private var next: ContinuousClock.Instant?

    package init() { next = started + .seconds(2) }

    /// When the next notice is due (a receive's timeout should end by then); nil once the
    /// wait has ended.
    package var due: ContinuousClock.Instant? { next }

    /// The whole seconds waited, when a notice is due now; the next is then due 10 s later.
    package mutating func secondsIfDue() -> Int64? {
        guard let next, ContinuousClock.now >= next else { return nil }
        self.next = next + .seconds(10)
        return (ContinuousClock.now - started).components.seconds
    }

    /// The wait ended: no more notices.
    package mutating func end() { next = nil }
}
