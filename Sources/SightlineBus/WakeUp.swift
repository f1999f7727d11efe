import CZMQ
import Glibc

/// Ends a blocking receive at once from another thread: an `eventfd` a subscriber polls
/// beside its socket (`Subscriber.receive(timeout:wakingOn:)`). Once signalled it stays
/// signalled, so every later receive that watches it returns at once too: it says "stop",
/// not "look again".
package final class WakeUp: Sendable {
    /// The descriptor `zmq_poll` watches.
    let descriptor: Int32

    package init() {
        // Without it a loop could not be told to stop; the process is out of descriptors.
        descriptor = czmq_wakeup_descriptor()
        precondition(descriptor >= 0, "eventfd: \(String(cString: strerror(errno)))")
    }

    deinit { close(descriptor) }

    /// Any thread.
    package func signal() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, 8)
    }
}
