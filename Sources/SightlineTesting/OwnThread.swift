import Dispatch

/// Runs a long synchronous test body (a fuzz loop, a flood of messages) on a thread of its
/// own instead of one of Swift's cooperative threads. All test targets share one process
/// and the pool has a thread per core (two here): a loop holding one for minutes starved the
/// console tests' HTTP handlers until their requests timed out. The body stays in the test's
/// task, so `#expect` still reports to the test.
package func onAThreadOfItsOwn<Value>(_ body: () throws -> Value) async throws -> Value {
    try await withTaskExecutorPreference(OwnQueueExecutor()) { try body() }
}

/// A task executor over a serial queue of its own: Dispatch gives such a queue an
/// overcommitting thread, outside the cooperative pool.
private final class OwnQueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "sightline.test-body")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
