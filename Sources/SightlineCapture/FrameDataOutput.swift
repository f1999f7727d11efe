import Dispatch
import SightlineCore
import Synchronization

/// Receives frames from a `FrameDataOutput`.
public protocol FrameDataOutputDelegate: AnyObject, Sendable {
    /// Called on the output's serial queue, one frame at a time, in capture order.
    func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame)
}

/// Hands frames to a delegate on its own serial queue, like `AVCaptureVideoDataOutput`.
///
/// With `alwaysDiscardsLateFrames` (the default), the output holds at most one waiting
/// frame: a frame that arrives while the delegate is busy replaces the waiting one, and
/// the replaced frame is counted as dropped (`late`). The delegate always gets the newest
/// frame and capture never waits. Without it, every frame is queued and delivered, and
/// `backlog` says how far behind the output is.
public final class FrameDataOutput: Sendable {
    public enum DropReason: String, Sendable {
        /// Replaced by a newer frame while the delegate was busy.
        case late
        /// Still waiting when the session stopped early.
        case shutdown
    }

    public let name: String
    public let alwaysDiscardsLateFrames: Bool
    private let queue: DispatchQueue
    private let delegate: any FrameDataOutputDelegate
    private let state = Mutex(State())

    private struct State {
        var busy = false
        var waiting: [VideoFrame] = []
        var counters = OutputCounters()
        var maxBacklog = 0
        var discardWaiting = false
    }

    public init(name: String, delegate: any FrameDataOutputDelegate, alwaysDiscardsLateFrames: Bool = true) {
        self.name = name
        self.delegate = delegate
        self.alwaysDiscardsLateFrames = alwaysDiscardsLateFrames
        self.queue = DispatchQueue(label: "sightline.output.\(name)")
    }

    public var counters: OutputCounters { state.withLock { $0.counters } }

    /// The most frames that were ever waiting at once (always ≤ 1 when discarding).
    public var maxBacklog: Int { state.withLock { $0.maxBacklog } }

    /// Offers a frame. Called on the capture thread; never blocks on the delegate.
    public func offer(_ frame: VideoFrame) {
        let start: Bool = state.withLock { state in
            if !state.busy {
                state.busy = true
                return true
            }
            if alwaysDiscardsLateFrames && !state.waiting.isEmpty {
                state.waiting.removeAll(keepingCapacity: true)
                state.counters.dropped[DropReason.late.rawValue, default: 0] += 1
            }
            state.waiting.append(frame)
            state.maxBacklog = max(state.maxBacklog, state.waiting.count)
            return false
        }
        if start { deliver(frame) }
    }

    private func deliver(_ frame: VideoFrame) {
        queue.async { [self] in
            delegate.frameDataOutput(self, didOutput: frame)
            let next: VideoFrame? = state.withLock { state in
                state.counters.delivered += 1
                if state.discardWaiting {
                    state.counters.dropped[DropReason.shutdown.rawValue, default: 0] += state.waiting.count
                    state.waiting.removeAll()
                }
                if state.waiting.isEmpty {
                    state.busy = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { deliver(next) }
        }
    }

    /// Waits until every offered frame has been delivered (or, with `discardWaiting`,
    /// until the frame in the delegate returns, counting the waiting ones as `shutdown`).
    public func drain(discardWaiting: Bool = false) async {
        if discardWaiting { state.withLock { $0.discardWaiting = true } }
        while state.withLock({ $0.busy }) {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}
