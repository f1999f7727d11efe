import Foundation
import ServiceLifecycle
import SightlineBus
import SightlineCore
import Synchronization

/// Runs a service's loop that blocks (on a bus `receive`) on a thread of its own: Swift
/// concurrency shares a thread per core (two here), and a loop that holds one while
/// messages keep coming starves every other service (the HTTP servers first).
package enum BlockingLoop {
    /// Runs `body` on a new thread and returns what it returns. `body` ends when its
    /// `StopRequest` says so: a graceful shutdown of the group, or cancellation.
    package static func run<Value: Sendable>(
        name: String, _ body: @escaping @Sendable (StopRequest) throws -> Value
    ) async throws -> Value {
        let stop = try StopRequest()
        return try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await withCheckedThrowingContinuation { continuation in
                    Thread.start(named: name) { continuation.resume(with: Result { try body(stop) }) }
                }
            } onGracefulShutdown: {
                stop.request()
            }
        } onCancel: {
            stop.request()
        }
    }
}

/// Whether a `BlockingLoop` was asked to end. Any thread.
package final class StopRequest: Sendable {
    /// Signalled with the request: a receive that watches it returns at once.
    package let wakeUp: WakeUp

    init() throws { wakeUp = try WakeUp() }

    package var isRequested: Bool { wakeUp.isSignalled }

    func request() { wakeUp.signal() }
}
