import Dispatch

/// A value one thread hands another, once: `complete(_:)` on one, `wait()` on the other.
package final class PendingResult<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    /// Written before `done` is signalled, read after it is waited for.
    private var value: Value?

    package init() {}

    package func complete(_ value: Value) {
        self.value = value
        done.signal()
    }

    /// Blocks until `complete(_:)` has been called. Call once.
    package func wait() -> Value {
        done.wait()
        return value!
    }
}
