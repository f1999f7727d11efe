import Dispatch
import Synchronization

/// How long a live stream that dropped waits before each try to open it again: 0.5 s,
/// doubling to 10 s, each wait moved by up to a fifth either way so that the cameras of a
/// site that lost power together do not all try at the same moments.
///
/// Two failures are not like the others. Nothing listening on the camera's port (the
/// connection refused: a camera still booting) is tried again at the first wait, since a
/// refused connection costs the camera nothing and it should be back within a moment of
/// answering. Refused credentials (401, 403) do not mend by themselves: they are tried at
/// most once a minute.
package struct ReconnectBackoff: Sendable {
    package var first: Duration = .milliseconds(500)
    package var longest: Duration = .seconds(10)
    package var longestRefused: Duration = .seconds(60)
    /// The share of each wait it may move either way.
    package var jitter = 0.2
    private var next: Duration?

    package init() {}

    /// The wait before the next try.
    package mutating func nextDelay() -> Duration {
        nextDelay(random: Double.random(in: -1...1))
    }

    /// The wait before the next try, moved by `random` (-1...1) times the jitter.
    package mutating func nextDelay(random: Double) -> Duration {
        let base = next ?? first
        return base * (1 + jitter * min(1, max(-1, random)))
    }

    /// The try failed, for the reason `error` gives (an error's one line).
    package mutating func failed(because error: String) {
        let lowered = error.lowercased()
        if lowered.contains("connection refused") {
            next = first
        } else if ["401", "403", "unauthorized", "forbidden"].contains(where: lowered.contains) {
            next = min(max((next ?? first) * 2, first), longestRefused)
        } else {
            next = min((next ?? first) * 2, max(longest, first))
        }
    }
}

/// What FFmpeg's interrupt callback asks of a source: to give up a blocking call because the
/// source was stopped, or because a deadline armed before the call has passed (a stream that
/// stopped sending without closing, a server that never answers). FFmpeg polls it from the
/// capture thread; `arm` and `disarm` come from the same thread.
final class IOWatchdog: Sendable {
    let interrupt: InterruptFlag
    /// Monotonic nanoseconds after which a blocking call gives up; 0: none.
    private let deadline = Atomic<UInt64>(0)

    init(interrupt: InterruptFlag) { self.interrupt = interrupt }

    func arm(_ timeout: Duration) {
        let nanoseconds = UInt64(max(0, timeout.seconds) * 1e9)
        deadline.store(DispatchTime.now().uptimeNanoseconds + nanoseconds, ordering: .relaxed)
    }

    func disarm() { deadline.store(0, ordering: .relaxed) }

    var shouldGiveUp: Bool {
        if interrupt.isSet { return true }
        let deadline = deadline.load(ordering: .relaxed)
        return deadline != 0 && DispatchTime.now().uptimeNanoseconds >= deadline
    }
}
