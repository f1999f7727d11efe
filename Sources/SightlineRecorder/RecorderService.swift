import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore
import Synchronization

/// A `Recorder` fed by a subscriber, as a swift-service-lifecycle service: `sightline
/// record`, or the in-process recorder of `sightline run --record`.
///
/// On start it finalises recordings a crash left behind. It records until the group shuts
/// down (SIGINT, SIGTERM) or, with `untilSourceStops`, until its source publishes its final
/// status; in both cases it first takes in what is still arriving, then finalises the file.
public final class RecorderService: Service, @unchecked Sendable {
    public let recorder: Recorder
    private let subscriber: Subscriber
    private let published = Mutex(Snapshot(counters: RecorderCounters(), stopReason: nil))
    private let untilSourceStops: Bool
    private let logger: Logger

    public init(
        configuration: RecorderConfiguration, endpoints: [Endpoint], curve: CurveClient? = nil, untilSourceStops: Bool,
        retention: RecordingRetention? = nil, logger: Logger
    ) throws {
        guard SourceID.isValid(configuration.sourceID) else {
            throw SightlineError.invalidArgument(
                "source ID '\(configuration.sourceID)' must be 1-64 letters, digits, '.', '_' or '-'")
        }
        recorder = try Recorder(configuration: configuration, retention: retention, logger: logger)
        subscriber = try Subscriber(
            endpoints: endpoints,
            topics: Subscriber.topics(
                kinds: [.video, .audio, .faces, .codes, .metadata, .status], source: configuration.sourceID),
            curve: curve)
        subscriber.logRejections(to: logger)
        self.untilSourceStops = untilSourceStops
        self.logger = logger
        Recorder.recoverUnfinished(in: configuration.directory, logger: logger)
        recorder.retention?.enforce()
    }

    /// What the recorder has done, for metrics and health, as of at most a quarter of a
    /// second ago (the recorder itself belongs to `run()`'s task).
    public struct Snapshot: Sendable {
        public var counters: RecorderCounters
        /// Why recording stopped for good, if it did.
        public var stopReason: String?
        /// Why recording is paused (the disk is nearly full), while it is.
        public var pausedReason: String? = nil
    }

    /// Any thread.
    public var snapshot: Snapshot { published.withLock { $0 } }

    private func publishSnapshot() {
        let snapshot = Snapshot(
            counters: recorder.liveCounters, stopReason: recorder.stopReason, pausedReason: recorder.pausedReason)
        published.withLock { $0 = snapshot }
    }

    public func run() async throws {
        try await BlockingLoop.run(name: "recorder-\(recorder.configuration.sourceID)") { [self] stop in
            try record(until: stop)
        }
    }

    private func record(until stop: StopRequest) throws {
        var idleSince = ContinuousClock.now
        var sourceStopped = false
        var snapshotAt = ContinuousClock.now
        var retentionAt = ContinuousClock.now
        while true {
            if ContinuousClock.now - snapshotAt > .milliseconds(250) {
                snapshotAt = .now
                publishSnapshot()
            }
            // Files also age while none is closed (a source that stopped).
            if ContinuousClock.now - retentionAt > .seconds(60) {
                retentionAt = .now
                recorder.retention?.enforceIfDue()
            }
            if (untilSourceStops && sourceStopped)
                || (stop.isRequested && (sourceStopped || ContinuousClock.now - idleSince > .seconds(2)))
            {
                break
            }
            guard let received = try subscriber.receive(timeout: .milliseconds(50)) else { continue }
            idleSince = .now
            if let state = received.message.status?.state, state == .stopped || state == .failed {
                sourceStopped = true
            }
            recorder.handle(received)
        }
        subscriber.close()
        recorder.finish()
        publishSnapshot()
        let counters = recorder.counters
        logger.info(
            "recorder stopped",
            metadata: [
                "files": "\(counters.files.joined(separator: ","))", "framesWritten": "\(counters.framesWritten)",
                "framesDropped": "\(counters.framesDropped)", "gaps": "\(counters.gaps)",
                "messagesLost": "\(counters.messagesLost)",
                "metadataWritten": "\(counters.metadataWritten)", "metadataDropped": "\(counters.metadataDropped)",
                "audioWritten": "\(counters.audioWritten)", "audioDropped": "\(counters.audioDropped)",
                "audioJumps": "\(counters.audioJumps)",
                "rejectedMessages": "\(subscriber.rejected.values.reduce(0, +))",
            ])
        if let reason = recorder.stopReason { throw SightlineError.invalidArgument("recording stopped: \(reason)") }
    }
}
