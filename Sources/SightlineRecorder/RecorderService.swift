import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore
import SightlineMovie
import Synchronization

/// A `Recorder` fed by a subscriber, as a swift-service-lifecycle service: `sightline
/// record`, or the in-process recorder of `sightline run --record`.
///
/// On start it finalises recordings a crash left behind. It records until the group shuts
/// down (SIGINT, SIGTERM) or, with `untilSourceStops`, until its source publishes its final
/// status; in both cases it first takes in what is still arriving, then finalises the file.
package final class RecorderService: Service, Sendable {
    private let sourceID: String
    /// The recorder and its subscriber: made by `init`, then used only by `run()`'s thread,
    /// which holds the lock for as long as it records. A lock nobody else takes, so that
    /// the compiler, not a comment, checks who uses them.
    private let owned: Mutex<Owned>
    private struct Owned {
        let recorder: Recorder
        let subscriber: Subscriber
    }
    private let published = Mutex(Snapshot(counters: RecorderCounters(), failureReason: nil))
    private let untilSourceStops: Bool
    /// Where it subscribes, said while nothing has come: `record --connect` to a wrong
    /// address would otherwise wait in silence. nil: a source of this process, whose own
    /// failures are logged.
    private let waitingFor: String?
    private let logger: Logger

    package init(
        configuration: RecorderConfiguration, endpoints: [Endpoint], curve: CurveClient? = nil, untilSourceStops: Bool,
        retention: RecordingRetention? = nil, announcesWaiting: Bool = false, logger: Logger
    ) throws {
        guard SourceID.isValid(configuration.sourceID) else {
            throw SightlineError.invalidArgument(
                "source ID '\(configuration.sourceID)' must be 1-64 letters, digits, '.', '_' or '-'")
        }
        let recorder = try Recorder(configuration: configuration, retention: retention, logger: logger)
        let subscriber = try Subscriber(
            endpoints: endpoints,
            topics: Subscriber.topics(
                kinds: [.video, .audio] + ObjectKind.all.map(\.messageKind) + [.metadata, .status],
                source: configuration.sourceID),
            curve: curve)
        subscriber.logRejections(to: logger)
        self.untilSourceStops = untilSourceStops
        waitingFor = announcesWaiting ? endpoints.map(\.description).joined(separator: ",") : nil
        self.logger = logger
        sourceID = configuration.sourceID
        RecordingDirectory.recoverUnfinished(in: configuration.directory, logger: logger)
        recorder.retention?.enforce()
        owned = Mutex(Owned(recorder: recorder, subscriber: subscriber))
    }

    /// What the recorder has done, for metrics and health, as of at most a quarter of a
    /// second ago (the recorder itself belongs to `run()`'s task).
    package struct Snapshot: Sendable {
        package var counters: RecorderCounters
        /// Why recording is failing (it tries a new file with back-off), while it is.
        package var failureReason: String?
        /// Why recording is paused (the disk is nearly full), while it is.
        package var pausedReason: String? = nil
        /// Bus messages the recorder's subscriber refused, by `MessageDecodingError.reason`.
        package var rejectedMessages: [String: Int] = [:]
    }

    /// Any thread.
    package var snapshot: Snapshot { published.withLock { $0 } }

    private func publishSnapshot(_ owned: Owned) {
        let (recorder, subscriber) = (owned.recorder, owned.subscriber)
        let snapshot = Snapshot(
            counters: recorder.liveCounters, failureReason: recorder.failureReason, pausedReason: recorder.pausedReason,
            rejectedMessages: subscriber.rejected)
        published.withLock { $0 = snapshot }
    }

    package func run() async throws {
        try await BlockingLoop.run(name: "recorder-\(sourceID)") { [self] stop in
            try owned.withLock { try record($0, until: stop) }
        }
    }

    /// What the recorder's thread does now and then between messages, and when it last did.
    private struct Chores {
        var snapshotAt = ContinuousClock.now
        var retentionAt = ContinuousClock.now
        var trimmedAt = ContinuousClock.now
        var receivedSinceTrim = 0
        var firstMessage = WaitNotice()
    }

    /// The chores that are due: the wait for a first message said, the snapshot for
    /// metrics, memory given back after a burst, retention.
    private func doChores(_ chores: inout Chores, _ owned: Owned) {
        if let seconds = chores.firstMessage.secondsIfDue(), let waitingFor {
            logger.notice(
                "waiting for \(sourceID)'s messages: nothing yet after \(seconds) s (is the source publishing there? with keys, are they the right ones?)",
                metadata: ["connect": "\(waitingFor)"])
        }
        if ContinuousClock.now - chores.snapshotAt >= .milliseconds(250) {
            chores.snapshotAt = .now
            publishSnapshot(owned)
        }
        // After a burst (a flood of large messages), the freed memory goes back to the
        // system: glibc keeps it otherwise, and the process looks as large as at its peak.
        if chores.receivedSinceTrim > 0, ContinuousClock.now - chores.trimmedAt > .seconds(10) {
            (chores.trimmedAt, chores.receivedSinceTrim) = (.now, 0)
            _ = mallocTrim(0)
        }
        // Files also age while none is closed (a source that stopped).
        if ContinuousClock.now - chores.retentionAt > .seconds(60) {
            chores.retentionAt = .now
            owned.recorder.retention?.enforceIfDue()
        }
    }

    private func record(_ owned: Owned, until stop: StopRequest) throws {
        let (recorder, subscriber) = (owned.recorder, owned.subscriber)
        var idleSince = ContinuousClock.now
        var stopRequestedAt: ContinuousClock.Instant?
        var sourceStopped = false
        var chores = Chores()
        if waitingFor == nil { chores.firstMessage.end() }
        while true {
            doChores(&chores, owned)
            if untilSourceStops && sourceStopped { break }
            // Asked to stop: take in what is still arriving (a source of this process has
            // published its last messages by then), but for under a second whatever the
            // traffic, so that a flood cannot hold a shutdown.
            if stopRequestedAt == nil, stop.isRequested { stopRequestedAt = .now }
            if let requested = stopRequestedAt,
                sourceStopped || ContinuousClock.now - idleSince > .milliseconds(250)
                    || ContinuousClock.now - requested > .milliseconds(500)
            {
                break
            }
            // Until a message, the next snapshot or the stop (no flag checked at intervals);
            // once stopping, what still arrives is taken in, in steps the bounds above see.
            let received =
                stopRequestedAt == nil
                ? try subscriber.receive(timeout: chores.snapshotAt + .milliseconds(250) - .now, wakingOn: stop.wakeUp)
                : try subscriber.receive(timeout: .milliseconds(50))
            guard let received else { continue }
            idleSince = .now
            chores.firstMessage.end()
            chores.receivedSinceTrim += 1
            if let state = received.message.status?.state, state == .stopped || state == .failed {
                sourceStopped = true
            }
            recorder.handle(received)
        }
        subscriber.close()
        recorder.finish()
        publishSnapshot(owned)
        logStopped(owned)
        if let reason = recorder.failureReason {
            throw SightlineError.invalidArgument("recording failed until it stopped: \(reason)")
        }
    }

    /// One line with what the recorder did, when it stops.
    private func logStopped(_ owned: Owned) {
        let counters = owned.recorder.counters
        logger.info(
            "recorder stopped",
            metadata: [
                "files": "\(counters.files.joined(separator: ","))", "framesWritten": "\(counters.framesWritten)",
                "framesDropped": "\(counters.framesDropped)", "gaps": "\(counters.gaps)",
                "messagesLost": "\(counters.messagesLost)", "writeFailures": "\(counters.writeFailures)",
                "metadataWritten": "\(counters.metadataWritten)", "metadataDropped": "\(counters.metadataDropped)",
                "audioWritten": "\(counters.audioWritten)", "audioDropped": "\(counters.audioDropped)",
                "audioJumps": "\(counters.audioJumps)",
                "rejectedMessages": "\(owned.subscriber.rejected.values.reduce(0, +))",
            ])
    }
}

/// glibc's `malloc_trim` (malloc.h, which the Glibc module does not export): returns the
/// free memory of every arena to the system.
@_silgen_name("malloc_trim")
private func mallocTrim(_ padding: Int) -> Int32
