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
        var newestFrame: (time: MediaTime, wallTimeNs: UInt64)?
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
        while !stopRequested.load(ordering: .acquiring) {
            switch try source.value.read() {
            case .frame(let frame):
                state.withLock {
                    $0.framesIn += 1
                    $0.newestFrame = (frame.time, frame.wallClockNanoseconds)
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
                state.withLock { $0.interruptions += 1 }
                logger.warning("source interrupted; reconnecting", metadata: ["reason": "\(reason)"])
                onSourceEvent(.interrupted(reason: reason))
            case .resumed:
                logger.notice("source resumed")
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
