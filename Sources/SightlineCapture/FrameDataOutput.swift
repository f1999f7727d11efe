import Dispatch
import SightlineCore
import Synchronization

/// Receives frames from a `FrameDataOutput`.
package protocol FrameDataOutputDelegate: AnyObject, Sendable {
    /// Called on the output's serial queue (a thread of its own), one frame at a time, in
    /// capture order.
    func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame)
}

/// Hands frames to a delegate on a thread of its own (`SerialThread`), as
/// `AVCaptureVideoDataOutput` hands them to a serial queue.
///
/// With `alwaysDiscardsLateFrames` (the default), the output holds at most one waiting
/// frame: a frame that arrives while the delegate is busy replaces the waiting one, and
/// the replaced frame is counted as dropped (`late`). The delegate always gets the newest
/// frame and capture never waits. Without it, every frame is queued and delivered, and
/// `maxBacklog` says how far behind the output fell; with `maximumFramesInFlight` as well,
/// `offer` waits while that many frames are queued or in the delegate, which suits a file
/// (it can wait) and bounds memory, but not a live camera.
///
/// With `rate`, only the frames it admits are offered to the delegate at all; the others are
/// counted as dropped (`rate`), before and apart from the late ones.
///
/// `onDelegate` is told, on the output's thread, when the delegate starts a frame (true) and
/// when it is done with it (false). A live source's analysis tells the full scans beside
/// tracking (`FullScansBeside`) to give way while the frames fill the cores.
package final class FrameDataOutput: Sendable {
    package enum DropReason: String, Sendable {
        /// Replaced by a newer frame while the delegate was busy.
        case late
        /// Still waiting when the session stopped early.
        case shutdown
        /// Left out to keep to the analysis rate (`AnalysisRate`).
        case rate
    }

    package let name: String
    package let alwaysDiscardsLateFrames: Bool
    private let thread: SerialThread
    private let delegate: any FrameDataOutputDelegate
    private let state = Mutex(State())
    /// One permit per frame queued or in the delegate, when the backlog is bounded.
    private let slots: DispatchSemaphore?
    private let slotCount: Int
    /// Which frames the delegate gets at all; nil: every frame (no lock taken for it).
    private let rate: Mutex<AnalysisRate>?
    private let onDelegate: (@Sendable (Bool) -> Void)?

    private struct State {
        var busy = false
        var waiting: [VideoFrame] = []
        var counters = OutputCounters()
        var maxBacklog = 0
        var discardWaiting = false
        /// `drain()` callers waiting for the delegate to be idle; resumed by the delivery
        /// that empties the output.
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    package init(
        name: String, delegate: any FrameDataOutputDelegate, alwaysDiscardsLateFrames: Bool = true,
        maximumFramesInFlight: Int? = nil, rate: AnalysisRate? = nil, onDelegate: (@Sendable (Bool) -> Void)? = nil
    ) {
        precondition(maximumFramesInFlight.map { $0 > 0 } ?? true, "maximumFramesInFlight must be positive")
        self.name = name
        self.delegate = delegate
        self.alwaysDiscardsLateFrames = alwaysDiscardsLateFrames
        self.slots = alwaysDiscardsLateFrames ? nil : maximumFramesInFlight.map { DispatchSemaphore(value: $0) }
        self.slotCount = maximumFramesInFlight ?? 0
        self.thread = SerialThread(name: "output.\(name)")
        self.onDelegate = onDelegate
        self.rate = rate.map { Mutex($0) }
    }

    package var counters: OutputCounters { state.withLock { $0.counters } }

    /// The most frames that were ever waiting at once (always ≤ 1 when discarding).
    package var maxBacklog: Int { state.withLock { $0.maxBacklog } }

    /// Offers a frame. Called on the capture thread; never blocks on the delegate unless
    /// `maximumFramesInFlight` is set.
    package func offer(_ incoming: VideoFrame) {
        var frame = incoming
        if let decision = rate?.withLock({ (admitted: $0.admits(incoming.time.seconds), interval: $0.interval) }) {
            guard decision.admitted else {
                state.withLock { $0.counters.dropped[DropReason.rate.rawValue, default: 0] += 1 }
                waitUntilIdle()
                return
            }
            // A frame analysed at a rate stands for the interval up to the next one.
            frame = incoming.lasting(atLeast: MediaTime(seconds: decision.interval, timescale: incoming.time.timescale))
        }
        slots?.wait()
        let offered: Offered = state.withLock { state in
            if state.discardWaiting {
                state.counters.dropped[DropReason.shutdown.rawValue, default: 0] += 1
                return .dropped
            }
            if !state.busy {
                state.busy = true
                return .delivered
            }
            if alwaysDiscardsLateFrames && !state.waiting.isEmpty {
                state.waiting.removeAll(keepingCapacity: true)
                state.counters.dropped[DropReason.late.rawValue, default: 0] += 1
            }
            state.waiting.append(frame)
            state.maxBacklog = max(state.maxBacklog, state.waiting.count)
            return .waiting
        }
        switch offered {
        case .delivered: deliver(frame)
        case .waiting: break
        case .dropped: slots?.signal()
        }
    }

    /// With a bounded backlog, waits until no frame is queued or in the delegate: a file
    /// analysed at a rate is read no further ahead of its analysis than one analysed frame,
    /// so the detections reach a recorder before the video passes them (the frames left out
    /// hold no place in the backlog, and 4 analysed frames at 5 a second were 0.8 s of video
    /// ahead: detections came too late for the file). The capture thread only.
    private func waitUntilIdle() {
        guard let slots else { return }
        for _ in 0..<slotCount { slots.wait() }
        for _ in 0..<slotCount { slots.signal() }
    }

    /// What became of an offered frame.
    private enum Offered {
        /// To the delegate at once: nothing was in it.
        case delivered
        /// Behind the frame in the delegate.
        case waiting
        /// Not wanted any more: the session is stopping.
        case dropped
    }

    private func deliver(_ frame: VideoFrame) {
        thread.async { [self] in
            onDelegate?(true)
            delegate.frameDataOutput(self, didOutput: frame)
            onDelegate?(false)
            let (next, drained) = state.withLock { state -> (VideoFrame?, [CheckedContinuation<Void, Never>]) in
                state.counters.delivered += 1
                if state.waiting.isEmpty {
                    state.busy = false
                    defer { state.drained = [] }
                    return (nil, state.drained)
                }
                return (state.waiting.removeFirst(), [])
            }
            slots?.signal()  // after the bookkeeping, so the backlog never exceeds the bound
            if let next { deliver(next) }
            for waiter in drained { waiter.resume() }
        }
    }

    /// Drops the frames waiting and every frame offered from now on, as `shutdown`; the
    /// frame in the delegate is not interrupted. Any thread: the session calls it as soon as
    /// it is asked to stop, so that a slow delegate does not get a backlog it no longer needs
    /// however long the capture thread takes to notice.
    package func discardWaitingFrames() {
        let dropped = state.withLock { state in
            let count = state.waiting.count
            state.discardWaiting = true
            state.waiting.removeAll()
            state.counters.dropped[DropReason.shutdown.rawValue, default: 0] += count
            return count
        }
        for _ in 0..<dropped { slots?.signal() }
    }

    /// Waits until every offered frame has been delivered or dropped. Any task; it is
    /// resumed by the output's thread when the delegate returns from the last frame.
    package func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.busy { state.drained.append(continuation) }
                return !state.busy
            }
            if idle { continuation.resume() }
        }
    }
}
