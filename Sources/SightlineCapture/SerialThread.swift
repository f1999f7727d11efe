import Foundation
import SightlineCore
import Synchronization

/// A serial queue with one thread of its own: work runs in the order it was added, always
/// on that thread, which ends once the queue is gone and its work is done.
///
/// A `FrameDataOutput` delivers on one, not on a Dispatch queue, whose work may run on any
/// of libdispatch's threads. The face detector spreads each frame's scan over a pool and
/// joins it on the calling thread; called from the same thread every frame, detection took
/// 13.5-14.1 ms a 640x480 frame in real-time runs where, called from a Dispatch queue, it
/// took 16.9-17.3, against 12.6-13.1 for the bench's paced detector (4 alternated pairs of
/// `sightline bench`; capture-to-publish p99 met its target in 4 of 4 against 1 of 4).
final class SerialThread: Sendable {
    private let mailbox = Mailbox()

    /// Starts the thread; `name` is what `ps -L` shows (15 bytes kept).
    init(name: String) {
        Thread.start(named: name) { [mailbox] in mailbox.run() }
    }

    deinit { mailbox.stop() }

    /// Adds work to run after what was added before. Any thread.
    func async(_ work: @escaping @Sendable () -> Void) { mailbox.add(work) }
}

/// The thread's work, shared with the thread (which never holds the `SerialThread`).
private final class Mailbox: Sendable {
    private let state = Mutex((work: [@Sendable () -> Void](), stopping: false))
    /// Signalled once for each work added and once for `stop()`.
    private let ready = DispatchSemaphore(value: 0)

    func add(_ next: @escaping @Sendable () -> Void) {
        state.withLock { $0.work.append(next) }
        ready.signal()
    }

    func stop() {
        state.withLock { $0.stopping = true }
        ready.signal()
    }

    /// The thread's loop: runs the work in order; returns once stopped with none left. A
    /// wake-up that finds no work was `stop()`'s: every work's own came with it.
    func run() {
        while true {
            ready.wait()
            let (next, stopping) = state.withLock { state in
                (state.work.isEmpty ? nil : state.work.removeFirst(), state.stopping)
            }
            if let next {
                next()
            } else if stopping {
                return
            }
        }
    }
}
