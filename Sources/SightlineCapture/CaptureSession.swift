import Foundation
import Logging
import SightlineCore
import Synchronization

/// Pulls frames from a source on its own thread and offers each to every output.
///
/// Like `AVCaptureSession`: the source runs at its own pace and never waits for an
/// output; outputs decide what to do with frames they cannot take (`FrameDataOutput`).
package final class CaptureSession: Sendable {
    /// Why `run()` returned.
    package enum Completion: Sendable, Equatable {
        case endOfSource
        case stopped
    }

    /// What happened to the source, for status messages. Called on the capture thread.
    package enum SourceEvent: Sendable, Equatable {
        case interrupted(reason: String)
        case resumed
    }

    private let source: SendableSource
    package let outputs: [FrameDataOutput]
    private let logger: Logger
    private let onSourceEvent: @Sendable (SourceEvent) -> Void
    private let stopRequested = Atomic<Bool>(false)
    private let state = Mutex(Counters())

    private struct Counters {
        var framesIn = 0
        var skipped: [String: Int] = [:]
        var interruptions = 0
        var reconnects = 0
        var disconnected = Duration.zero
        /// Since when the source is interrupted, and the reason last said.
        var outage: (since: ContinuousClock.Instant, reason: String)?
        var newestFrame: (time: MediaTime, wallTimeNs: UInt64)?
        /// When the newest frame came, or when the session started before the first.
        var lastFrameAt: ContinuousClock.Instant?
    }

    /// The session takes ownership of `source`: from now on only its capture thread uses it.
    package init(
        source: any FrameSource, outputs: [FrameDataOutput], logger: Logger,
        onSourceEvent: @escaping @Sendable (SourceEvent) -> Void = { _ in }
    ) {
        self.source = SendableSource(source)
        self.outputs = outputs
        self.logger = logger
        self.onSourceEvent = onSourceEvent
    }

    /// Why the source ended, when it was not simply the end of the media.
    package var endReason: String? { source.value.endReason }

    package var input: InputDescription { source.value.input }

    /// How long since the newest frame came (since `run()` started, before the first), while
    /// the source is not interrupted: an interruption is a state of its own. Nil before
    /// `run()`. Any thread.
    package var timeWithoutFrames: Duration? {
        state.withLock { state in state.outage == nil ? state.lastFrameAt.map { .now - $0 } : nil }
    }

    /// How long the source has been interrupted, while it is. Any thread.
    package var timeInterrupted: Duration? { state.withLock { $0.outage.map { .now - $0.since } } }

    /// The newest frame's media time; nil before the first. Any thread.
    package var newestFrameTime: MediaTime? { state.withLock { $0.newestFrame?.time } }

    /// Where a wall-clock instant (ns since 1970) falls on the source's media timeline,
    /// reckoned from the newest frame; nil before the first frame or more than a day away
    /// from it. Any thread.
    package func mediaTime(atWallTimeNs wallTimeNs: UInt64) -> MediaTime? {
        guard let newest = state.withLock({ $0.newestFrame }) else { return nil }
        let offset = Int64(bitPattern: wallTimeNs &- newest.wallTimeNs)
        guard offset.magnitude <= 86_400 * 1_000_000_000 else { return nil }
        let timescale = Int64(newest.time.timescale)
        return MediaTime(
            value: newest.time.value + offset * timescale / 1_000_000_000, timescale: newest.time.timescale)
    }

    /// Frames produced and skipped so far, with each output's counters.
    package var counters: PipelineCounters {
        var result = PipelineCounters()
        state.withLock {
            result.framesIn = $0.framesIn
            result.sourceSkipped = $0.skipped
            result.interruptions = $0.interruptions
            result.reconnects = $0.reconnects
            result.disconnectedSeconds = ($0.disconnected + ($0.outage.map { .now - $0.since } ?? .zero)).seconds
        }
        for output in outputs { result.outputs[output.name] = output.counters }
        return result
    }

    /// Runs until the source ends, fails, or `stop()` is called or the task is cancelled,
    /// then drains the outputs: all waiting frames are delivered at the end of a source, and
    /// dropped as `shutdown` after a stop.
    package func run() async throws -> Completion {
        let result: Result<Completion, Error> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Thread.start(named: "capture", qualityOfService: .userInteractive) { [self] in
                    continuation.resume(returning: Result { try captureLoop() })
                }
            }
        } onCancel: {
            stop()
        }
        for output in outputs { await output.drain() }
        return try result.get()
    }

    /// Asks the capture thread to stop; `run()` then returns `.stopped`. Any thread.
    package func stop() {
        stopRequested.store(true, ordering: .releasing)
        for output in outputs { output.discardWaitingFrames() }
        source.value.cancel()
    }

    private func captureLoop() throws -> Completion {
        var lastSkipLog = ContinuousClock.now - .seconds(10)
        state.withLock { $0.lastFrameAt = .now }
        while !stopRequested.load(ordering: .acquiring) {
            switch try source.value.read() {
            case .frame(let frame):
                state.withLock {
                    $0.framesIn += 1
                    $0.newestFrame = (frame.time, frame.wallClockNanoseconds)
                    $0.lastFrameAt = .now
                }
                for output in outputs { output.offer(frame) }
            case .skipped(let reason, let count):
                let total = state.withLock { state -> Int in
                    state.skipped[reason, default: 0] += count
                    return state.skipped[reason]!
                }
                // At most one line a second however many frames are bad.
                if ContinuousClock.now - lastSkipLog > .seconds(1) {
                    logger.warning("skipped \(reason) frames; going on", metadata: ["skipped": "\(total)"])
                    lastSkipLog = .now
                }
            case .interrupted(let reason):
                // One outage is counted and said once; a new reason during it (the camera
                // answers again, but refuses the password) is said once more.
                let isNew = state.withLock { state -> Bool in
                    defer { state.outage = (state.outage?.since ?? .now, reason) }
                    guard state.outage == nil else { return false }
                    state.interruptions += 1
                    return true
                }
                logger.warning(
                    isNew ? "source interrupted; reconnecting" : "source still away; reconnecting",
                    metadata: ["reason": "\(reason)"])
                onSourceEvent(.interrupted(reason: reason))
            case .resumed:
                let away = state.withLock { state -> Duration in
                    let away = state.outage.map { .now - $0.since } ?? .zero
                    state.disconnected += away
                    state.reconnects += 1
                    state.outage = nil
                    state.lastFrameAt = .now
                    return away
                }
                logger.notice("source resumed", metadata: ["awaySeconds": "\(String(format: "%.1f", away.seconds))"])
                onSourceEvent(.resumed)
            case .end:
                return stopRequested.load(ordering: .acquiring) ? .stopped : .endOfSource
            }
        }
        return .stopped
    }
}

/// A source is used only by the capture thread after it is handed over, and `cancel()`
/// is safe from any thread: that makes handing it across threads sound.
private struct SendableSource: @unchecked Sendable {
    let value: any FrameSource
    init(_ value: any FrameSource) { self.value = value }
}
