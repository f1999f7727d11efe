import Logging
import ServiceLifecycle
import SightlineCapture
import SightlineCore
import SightlinePipeline
import Synchronization

/// One source's analysis pipeline as a service. `run` hands it a pipeline it opened itself,
/// so bad input fails before anything starts; `serve` lets it open the source, beside the
/// other sources and off Swift's cooperative threads (a stream that never answers holds up
/// nothing else), and open it again after it fails (an unreachable URL, a stream that
/// dropped, a camera gone past its reconnect timeout), waiting 1 s, then twice as long each
/// time up to a minute, until the group shuts down. While it waits, health says why.
package final class SourceRunner: Service, Sendable {
    package let sourceID: String
    private let configuration: PipelineConfiguration
    private let retry: Bool
    /// This process has subscribers of its own (recorders, printers, MQTT): each pipeline
    /// waits for them (2 s at most) so that they get its first key frame. Set before the
    /// service runs (`SightlineServices.run`), read when it opens a pipeline.
    private let waitsForSubscribers = Atomic<Bool>(false)
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        /// The pipeline `run` opened, until the service starts it.
        var given: AnalysisPipeline?
        var pipeline: AnalysisPipeline?
        /// Why the source is not running while it waits to try again.
        var waitingReason: String?
        var restarts = 0
        /// Since when a pipeline is being opened, while it is.
        var openingSince: ContinuousClock.Instant?
    }

    /// Runs `pipeline`; a failure ends the service (and the group) with its error.
    package init(pipeline: AnalysisPipeline, logger: Logger) {
        sourceID = pipeline.configuration.sourceID
        configuration = pipeline.configuration
        retry = false
        self.logger = logger
        state = Mutex(State(given: pipeline, pipeline: pipeline))
    }

    /// Opens the source when the service runs, and again after each failure. An error that
    /// is not the source's (a model missing, an endpoint in use) ends the service the first
    /// time, as it ends `run`.
    package init(configuration: PipelineConfiguration, logger: Logger) {
        sourceID = configuration.sourceID
        self.configuration = configuration
        retry = true
        self.logger = logger
        state = Mutex(State())
    }

    /// Has each pipeline wait for this process's subscribers before its first frame.
    package func waitForSubscribers() { waitsForSubscribers.store(true, ordering: .relaxed) }

    /// The pipeline running now (nil while the source cannot be opened).
    package var pipeline: AnalysisPipeline? { state.withLock { $0.pipeline } }

    /// Where the source stands: the pipeline's state, or `failed` with the reason while it
    /// waits to be opened again. Any thread.
    package var status: SourceStatus {
        let (waitingReason, pipeline) = state.withLock { ($0.waitingReason, $0.pipeline) }
        if let reason = waitingReason { return SourceStatus(state: .failed, reason: reason) }
        if let stall = openingStall { return SourceStatus(state: .interrupted, reason: stall) }
        return pipeline?.state ?? SourceStatus(state: .started)
    }

    /// Why the source counts as stalled now: an open that has not finished in time, or a
    /// live source without frames for a few frame intervals; nil otherwise. Any thread.
    package var stallReason: String? { openingStall ?? pipeline?.stallReason }

    private var openingStall: String? {
        guard let openingFor = state.withLock({ $0.openingSince.map { ContinuousClock.now - $0 } }),
            openingFor > openingLimit
        else { return nil }
        return "stalled: opening has not finished after \(String(format: "%.0f", openingFor.seconds)) s"
    }

    /// How long opening may take before the source counts as stalled: a network stream's
    /// timeout, twice (connecting, then finding its streams), and 2 s.
    private var openingLimit: Duration {
        guard case .media(_, let options) = configuration.source else { return .seconds(10) }
        return options.networkTimeout * 2 + .seconds(2)
    }

    /// Where the source stands for `/health`: `status`'s state by its health name, where a
    /// live stream away is `reconnecting` (a problem only after its reconnect grace) and a
    /// source with no frames for a while `stalled`. Any thread.
    package var health: (state: String, reason: String?, isProblem: Bool) {
        let status = self.status
        switch status.state {
        case .started: return ("starting", nil, false)
        case .running, .resumed: return ("running", nil, false)
        case .failed: return ("failed", status.reason, true)
        case .stopped: return ("ended", status.reason, false)
        case .interrupted:
            if let stall = stallReason { return ("stalled", stall, true) }
            guard let pipeline, pipeline.isLiveStream else { return ("interrupted", status.reason, true) }
            guard case .media(_, let options) = configuration.source else {
                return ("interrupted", status.reason, true)
            }
            return ("reconnecting", status.reason, (pipeline.timeInterrupted ?? .zero) > options.reconnectGrace)
        }
    }

    /// Where the source's microphone stands; nil without one (or while it is not open).
    package var microphoneStatus: SourceStatus? { state.withLock { $0.pipeline?.microphoneStatus } }

    /// Times the source was opened again after a failure.
    package var restarts: Int { state.withLock { $0.restarts } }

    package func run() async throws {
        var backoff = Duration.seconds(1)
        var failedBefore = false
        var openedBefore = false
        while !Task.isShuttingDownGracefully {
            let pipeline: AnalysisPipeline
            do {
                state.withLock { $0.openingSince = .now }
                defer { state.withLock { $0.openingSince = nil } }
                pipeline = try await nextPipeline()
            } catch {
                guard !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
                guard retry, openedBefore || (error as? SightlineError)?.isAboutTheSource == true else { throw error }
                // The first failure says that the source is tried in the background, once;
                // the next ones say when (a source that ran comes back here only after it
                // failed). A camera appearing is tried at once, and again soon: its /dev/v4l
                // links come a moment after it (udev makes them).
                if !failedBefore {
                    logger.error(
                        "source cannot be opened yet; trying again in the background",
                        metadata: ["source": "\(sourceID)", "error": "\(error)"])
                }
                // Each reason is said once, however often it fails so (a password refused
                // all night is one line); a new one is said when it comes.
                let isNew = failedBefore && state.withLock { $0.waitingReason } != "\(error)"
                let appeared = await wait(backoff, reason: "\(error)", announce: isNew)
                failedBefore = true
                backoff = appeared ? .milliseconds(250) : min(backoff * 2, .seconds(60))
                continue
            }
            openedBefore = true
            state.withLock { state in
                state.pipeline = pipeline
                state.waitingReason = nil
                if failedBefore { state.restarts += 1 }
            }
            if failedBefore { logger.notice("source opened again", metadata: ["source": "\(sourceID)"]) }
            if waitsForSubscribers.load(ordering: .relaxed) {
                _ = await cancelWhenGracefulShutdown {
                    await pipeline.publisher.waitForSubscriber(timeout: .seconds(2))
                }
            }
            do {
                try await pipeline.run()
                // A camera ends only when it stayed away past its reconnect timeout: it is
                // waited for like a source that failed. Media ends at its end.
                guard retry, let device = configuration.source.devicePath, !Task.isShuttingDownGracefully,
                    !Task.isCancelled
                else { return }
                failedBefore = true
                let reason = pipeline.state.reason ?? "\(device) went away"
                let appeared = await wait(
                    backoff, reason: "\(SightlineError.sourceUnavailable(source: device, reason: reason))")
                backoff = appeared ? .milliseconds(250) : min(backoff * 2, .seconds(60))
            } catch {
                guard retry, !Task.isShuttingDownGracefully else { throw error }
                failedBefore = true
                await wait(.seconds(1), reason: "\(error)")
                backoff = .seconds(2)
            }
        }
    }

    /// The pipeline this runner was given, the first time; a newly opened one after that,
    /// whose camera takes over the controls the last one had (changed over HTTP since, too).
    private func nextPipeline() async throws -> AnalysisPipeline {
        let (given, last) = state.withLock { ($0.given.take(), $0.pipeline) }
        if let given { return given }
        var configuration = configuration
        if case .camera(let path, var options, let microphone) = configuration.source,
            let wanted = last?.cameraControls?.wanted
        {
            options.controls = wanted
            configuration.source = .camera(path: path, options: options, microphone: microphone)
        }
        return try await AnalysisPipeline.opening(configuration: configuration, logger: logger)
    }

    /// Says why, then waits (a shutdown ends the wait at once; for a camera, so does a
    /// camera appearing). Returns whether one appeared.
    @discardableResult
    private func wait(_ delay: Duration, reason: String, announce: Bool = true) async -> Bool {
        state.withLock { $0.waitingReason = reason }
        if announce {
            logger.error(
                "source failed; trying again in \(delay)", metadata: ["source": "\(sourceID)", "error": "\(reason)"])
        }
        guard let device = configuration.source.devicePath else {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
            return false
        }
        let appeared = await cancelWhenGracefulShutdown { await DeviceEvents.cameraArrival(within: delay) }
        if appeared {
            logger.notice(
                "a camera appeared; opening it now", metadata: ["source": "\(sourceID)", "device": "\(device)"])
        }
        return appeared
    }
}
