import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore

/// A `Recorder` fed by a subscriber, as a swift-service-lifecycle service: `sightline
/// record`, or the in-process recorder of `sightline run --record`.
///
/// On start it finalises recordings a crash left behind. It records until the group shuts
/// down (SIGINT, SIGTERM) or, with `untilSourceStops`, until its source publishes its final
/// status; in both cases it first takes in what is still arriving, then finalises the file.
public final class RecorderService: Service, @unchecked Sendable {
    public let recorder: Recorder
    private let subscriber: Subscriber
    private let untilSourceStops: Bool
    private let logger: Logger

    public init(
        configuration: RecorderConfiguration, endpoints: [Endpoint], curve: CurveClient? = nil, untilSourceStops: Bool,
        logger: Logger
    ) throws {
        guard SourceID.isValid(configuration.sourceID) else {
            throw SightlineError.invalidArgument(
                "source ID '\(configuration.sourceID)' must be 1-64 letters, digits, '.', '_' or '-'")
        }
        recorder = try Recorder(configuration: configuration, logger: logger)
        subscriber = try Subscriber(
            endpoints: endpoints,
            topics: Subscriber.topics(
                kinds: [.video, .faces, .codes, .metadata, .status], source: configuration.sourceID), curve: curve)
        subscriber.logRejections(to: logger)
        self.untilSourceStops = untilSourceStops
        self.logger = logger
        Recorder.recoverUnfinished(in: configuration.directory, logger: logger)
    }

    public func run() async throws {
        var idleSince = ContinuousClock.now
        var sourceStopped = false
        while true {
            if (untilSourceStops && sourceStopped)
                || (Task.isShuttingDownGracefully && (sourceStopped || ContinuousClock.now - idleSince > .seconds(2)))
            {
                break
            }
            guard let received = try subscriber.receive(timeout: .milliseconds(50)) else {
                await Task.yield()
                continue
            }
            idleSince = .now
            if let state = received.message.status?.state, state == .stopped || state == .failed {
                sourceStopped = true
            }
            recorder.handle(received)
        }
        subscriber.close()
        recorder.finish()
        let counters = recorder.counters
        logger.info(
            "recorder stopped",
            metadata: [
                "files": "\(counters.files.joined(separator: ","))", "framesWritten": "\(counters.framesWritten)",
                "framesDropped": "\(counters.framesDropped)", "gaps": "\(counters.gaps)",
                "messagesLost": "\(counters.messagesLost)",
                "metadataWritten": "\(counters.metadataWritten)", "metadataDropped": "\(counters.metadataDropped)",
                "rejectedMessages": "\(subscriber.rejected.values.reduce(0, +))",
            ])
        if let reason = recorder.stopReason { throw SightlineError.invalidArgument("recording stopped: \(reason)") }
    }
}
