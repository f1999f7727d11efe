import CZMQ
import Glibc
import SightlineCore
import Synchronization

/// Tells a loop on the bus to stop, and ends its blocking receive at once from another
/// thread: an `eventfd` a subscriber polls beside its socket
/// (`Subscriber.receive(timeout:wakingOn:)`). Once signalled it stays signalled, so every
/// later receive that watches it returns at once too: it says "stop", not "look again".
package final class WakeUp: Sendable {
    /// The descriptor `zmq_poll` watches.
    let descriptor: Int32
    private let signalled = Atomic(false)

    /// Fails (with the reason in one line) only when the process is out of descriptors.
    package init() throws {
        descriptor = czmq_wakeup_descriptor()
        guard descriptor >= 0 else {
            throw SightlineError.messaging(
                "cannot make a descriptor to wake a receive: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// Whether `signal()` was called. Any thread.
    package var isSignalled: Bool { signalled.load(ordering: .acquiring) }

    /// Any thread; the first call wakes the receives, later ones change nothing.
    package func signal() {
        guard !signalled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(descriptor, &one, 8)
    }
}
