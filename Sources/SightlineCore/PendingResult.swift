import Dispatch
import Synchronization

/// A value one thread hands another, once: `complete(_:)` on one, `wait()` on the other.
package final class PendingResult<Value: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    /// Set before `done` is signalled, taken after it is waited for.
    private let value = Mutex<Value?>(nil)

    package init() {}

    package func complete(_ value: Value) {
        self.value.withLock { $0 = value }
        done.signal()
    }

    /// Whether `complete(_:)` has been called: `wait()` then returns at once.
    package var isComplete: Bool { value.withLock { $0 != nil } }

    /// Blocks until `complete(_:)` has been called, then returns its value; again at once
    /// when called after that. One caller waits at a time (one signal wakes one waiter).
    package func wait() -> Value {
        if let value = value.withLock({ $0 }) { return value }
        done.wait()
        return value.withLock { $0! }
    }
}
