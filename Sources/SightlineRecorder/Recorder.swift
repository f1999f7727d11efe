import Foundation
import Logging
import SightlineBus
import SightlineCore
import SightlineMovie

/// Writes one source's messages into QuickTime files: its video, with the detected faces,
/// the codes and each client metadata identifier as a timed metadata track of its own,
/// through `MovieWriter` in synced fragments.
///
/// Video waits `metadataDelay` before it is written, so the faces found in a frame (which
/// arrive after the frame) are in the file with it. A file's tracks are fixed when it
/// starts (as with `AVCaptureMetadataInput`, whose format is given up front): a metadata
/// identifier first seen while a file is open starts a new file at the next key frame, and
/// that file begins with the identifier's current value. A gap in the video's sequence numbers
/// drops the broken group of pictures: writing resumes at the next key frame, and the gap is
/// logged and counted. Nothing undecodable is written.
///
/// The decisions are values, each tested without disk or bus: `VideoDecisions` (which frames
/// are written, where files start, pauses for disk space, back-off after a failure),
/// `MetadataIntake` (the groups messages make, the tracks new files declare, what waits for
/// its video) and `RecorderAudio` (the sound's clock). The recorder measures, carries them
/// out on a `RecordingFile` and counts.
///
/// Not thread-safe: one thread feeds it messages, in the order they arrive.
package final class Recorder {
    package let configuration: RecorderConfiguration
    /// Applied after each finished file: this source's policy, and any shared overall one.
    package let retention: RecordingRetention?
    package private(set) var counters = RecorderCounters()
    /// `counters` with the open file's frames and bytes so far (`counters` takes them in
    /// when the file is closed): what metrics show while a file is being written.
    package var liveCounters: RecorderCounters {
        var live = counters
        if let writer = file?.writer {
            live.framesWritten += writer.videoSamplesWritten
            live.bytesWritten += writer.bytesWritten
        }
        return live
    }
    /// Why recording is failing, while it is: a write or a new file failed (the disk full,
    /// no descriptors left, an I/O error). The file is finished as far as it got, and a new
    /// one is tried at the first key frame after a back-off that doubles from 0.5 s to 2 s,
    /// so recording comes back within a few seconds of the cause going, with no restart.
    package var failureReason: String? { decisions.failureReason }
    /// While failing: from when the first key frame may start a new file (nil once one has).
    package var nextAttempt: ContinuousClock.Instant? { decisions.nextAttempt }
    /// Why recording is paused, while free space is below `minimumFreeSpace`: it resumes at
    /// the first key frame once there is room again (retention, or someone, freed some).
    package var pausedReason: String? {
        decisions.pausedWithFreeBytes.map {
            "only \($0 >> 20) MiB free in \(configuration.directory) (the limit is \(configuration.minimumFreeSpace >> 20) MiB)"
        }
    }
    private let logger: Logger
    /// Frames dropped for what the bus brought: one line per reason every 10 s at most.
    private var dropLog: RateLimitedLog

    /// The file being written.
    private var file: RecordingFile?
    /// Which frames are written, where files start, pauses and back-off.
    private var decisions: VideoDecisions
    /// Video waiting out the metadata delay; a key frame that starts a file says which.
    private var delayed: [(frame: VideoAccessUnit, startsFile: RecordingFile.Start?)] = []
    private var newestVideoTime: MediaTime?
    /// Presentation time up to which video has been handed to the writer.
    private var writtenUntil: MediaTime?
    /// Metadata waiting for its video, and the tracks new files declare.
    private var metadata: MetadataIntake
    private var audio = RecorderAudio()
    /// The source is away (its last status said `interrupted`): its file was finished.
    private var sourceAway = false

    /// `retention`: the rules to apply after each finished file; by default this source's own
    /// policy from `configuration`. `serve` passes one shared by every source, with the
    /// overall limits too.
    package init(configuration: RecorderConfiguration, retention: RecordingRetention? = nil, logger: Logger) throws {
        self.configuration = configuration
        self.retention =
            retention
            ?? (configuration.retention.isEmpty
                ? nil
                : RecordingRetention(
                    rules: [.init(configuration.retention, for: configuration)], logger: logger))
        self.logger = logger
        dropLog = RateLimitedLog(logger: logger)
        decisions = VideoDecisions(limits: .init(configuration))
        metadata = MetadataIntake(clientTracks: configuration.metadataTracks)
        try RecordingDirectory.prepare(configuration.directory)
    }

    /// Handles one message of this recorder's source; others are ignored.
    package func handle(_ received: ReceivedMessage) {
        let message = received.message
        guard message.source == configuration.sourceID else { return }
        switch message.kind {
        case .video: handleVideo(message, payload: received.payload)
        case .audio: handleAudio(message, payload: received.payload)
        case .metadata: take(metadata.client(message, newestVideo: newestVideoTime))
        case .status:
            if let status = message.status { take(metadata.status(status)) }
            if let output = message.status?.input?.audio?.output { audio.expect(output) }
            // The source ended or failed: its file is complete. One opened again (`serve`)
            // starts a new file at its first key frame.
            if let state = message.status?.state, state == .stopped || state == .failed {
                finish()
                startNewRun()
            }
            // The video source went away (not its microphone): the file ends at the outage,
            // whole, and the next one starts at the first key frame after it.
            // Said and counted once an outage, however many reasons it is given.
            switch (message.status?.state, message.status?.device) {
            case (.interrupted?, nil) where !sourceAway:
                sourceAway = true
                counters.sourceOutages += 1
                finish()
                logger.notice(
                    "source away: file finished; the next starts at its first key frame",
                    metadata: ["source": "\(configuration.sourceID)", "reason": "\(message.status?.reason ?? "")"])
            case (.resumed?, nil), (.started?, _), (.stopped?, _), (.failed?, _): sourceAway = false
            default: break
            }
        default:
            if let kind = ObjectKind.carried(by: message.kind) {
                take(metadata.objects(of: kind, message, newestVideo: newestVideoTime))
            }
        }
    }

    /// After a run of the source has ended (its file finished): the next run numbers its
    /// messages from 0, may start its clock again (a stream re-opened), and has found no face
    /// or code yet, so the faces of the last run are not carried into its first file.
    private func startNewRun() {
        decisions.startNewRun()
        newestVideoTime = nil
        writtenUntil = nil
        audio.startNewRun()
        metadata.startNewRun()
    }

    /// Writes everything still waiting and finalises the file.
    package func finish() {
        flushVideo(until: nil)
        flushAudio(until: nil)
        writeMetadata(upTo: nil)
        closeFile()
    }

    // MARK: Video

    private func handleVideo(_ message: Message, payload: [UInt8]?) {
        counters.videoReceived += 1
        if let lost = decisions.sequence(message.seq) {
            counters.messagesLost += lost
            counters.gaps += 1
            logger.warning(
                "video gap: dropping until the next key frame",
                metadata: ["source": "\(configuration.sourceID)", "lost": "\(lost)", "seq": "\(message.seq)"])
        }
        guard let info = message.video, let time = message.time, let payload, !payload.isEmpty,
            info.width > 0, info.height > 0,
            let accessUnit = VideoAccessUnit(info, time: time, payload: payload)  // split once, here
        else {
            return drop("malformed", log: "a video message is not an H.264 or H.265 access unit with a time")
        }
        guard !accessUnit.nalUnits.isEmpty else {
            return drop("malformed", log: "a video message holds no NAL unit")
        }
        // Only a key frame or a missing file makes the delay's successor count: no scan of it
        // for the other frames.
        let successorDecided = (file == nil || info.keyFrame) && delayed.contains { $0.startsFile != nil }
        let files = VideoDecisions.Files(
            fileComing: file != nil || successorDecided,
            openFileBytes: successorDecided ? nil : file?.writer.bytesWritten)
        let frame = VideoDecisions.Frame(
            isKeyFrame: info.keyFrame, time: time, parameterSets: info.keyFrame ? accessUnit.parameterSets : [])
        let decision = decisions.decide(frame, files: files, freeSpace: freeSpace, now: .now)
        switch decision.space {
        case .paused(let free)?: pause(freeBytes: free)
        case .resumed(let free)?:
            logger.notice(
                "recording resumed", metadata: ["source": "\(configuration.sourceID)", "freeMiB": "\(free >> 20)"])
        case nil: break
        }
        var startsFile: RecordingFile.Start?
        switch decision.action {
        case .drop(let reason, let why): return drop(reason, log: why)
        case .append: break
        case .startFile:
            // The file changes when this frame leaves the delay: by then the audio and the
            // metadata of the frames before it have arrived and end the file with them.
            startsFile = RecordingFile.Start(
                codec: accessUnit.codec, parameterSets: frame.parameterSets, width: info.width, height: info.height,
                wallTimeNs: message.wallTimeNs)
        }
        delayed.append((accessUnit, startsFile))
        newestVideoTime = max(newestVideoTime ?? time, time)
        flushVideo(until: time - configuration.metadataDelay)
    }

    private func drop(_ reason: String, log: String? = nil) {
        counters.framesDropped[reason, default: 0] += 1
        if let log {
            dropLog.warning("\(log); dropped", reason: reason, metadata: ["source": "\(configuration.sourceID)"])
        }
    }

    /// Hands the writer the video up to `until` (all of it when nil), each frame after the
    /// metadata that precedes it.
    private func flushVideo(until: MediaTime?) {
        while let (sample, startsFile) = delayed.first, until.map({ sample.presentationTime <= $0 }) ?? true {
            if let startsFile {
                flushAudio(until: sample.presentationTime)
                closeFile()
                do {
                    try openFile(startsFile, at: sample.presentationTime, decodeTime: sample.decodeTime)
                } catch {
                    return fail("cannot start a recording: \(error)")
                }
            }
            delayed.removeFirst()
            guard let file else {
                drop("beforeKeyFrame")
                continue
            }
            writeMetadata(upTo: sample.presentationTime)
            flushAudio(until: sample.presentationTime)
            do {
                if try file.append(sample) {
                    // What a crash can no longer take: the crash tests read this line.
                    logger.debug(
                        "fragment synced",
                        metadata: ["file": "\(file.path)", "frames": "\(file.writer.videoSamplesWritten)"])
                }
                writtenUntil = max(writtenUntil ?? sample.presentationTime, sample.presentationTime)
                if decisions.frameWritten() {
                    logger.notice(
                        "recording resumed after a failure",
                        metadata: ["source": "\(configuration.sourceID)", "file": "\(file.path)"])
                }
            } catch MovieError.invalidInput(let why) {
                // A frame the file cannot take (its times go back): it and the frames that
                // depend on it are dropped, and the file goes on.
                drop("malformed", log: "a video frame cannot be written: \(why)")
                dropUntilKeyFrame()
            } catch {
                return fail("\(error)")
            }
        }
    }

    /// Drops the waiting frames up to the next key frame, and waits for one if none waits.
    private func dropUntilKeyFrame() {
        while let first = delayed.first, !first.frame.isKeyFrame, first.startsFile == nil {
            delayed.removeFirst()
            drop("malformed")
        }
        if delayed.isEmpty { decisions.waitForKeyFrame() }
    }

    // MARK: Audio

    private func handleAudio(_ message: Message, payload: [UInt8]?) {
        guard let info = message.audio, let time = message.time, let payload, !payload.isEmpty,
            info.duration.value > 0, (try? MovieWriter.PassthroughTrackFormat.aac(info.format)) != nil
        else {
            counters.audioDropped["malformed", default: 0] += 1
            return
        }
        let changed = audio.receive(
            payload, time: time, duration: info.duration, format: info.format, newestVideo: newestVideoTime,
            counters: &counters)
        if changed, let file, file.audio?.format != info.format {
            decisions.wantNewFile()
            logger.notice(
                "audio started or changed: a new file starts at the next key frame",
                metadata: [
                    "source": "\(configuration.sourceID)",
                    "audio": "\(info.format.sampleRate) Hz \(info.format.channels) ch",
                ])
        }
        // Audio for video already written goes straight in.
        if let written = writtenUntil { flushAudio(until: written) }
    }

    /// Gives the open file the audio heard before `until` (nil: all of it).
    private func flushAudio(until: MediaTime?) {
        guard let file else { return }
        do {
            try audio.write(
                until: until, to: file.writer, track: file.audio?.track, trackFormat: file.audio?.format,
                fileStart: file.videoStart, counters: &counters)
        } catch {
            counters.audioDropped["malformed", default: 0] += 1
            logger.warning("audio not recorded: \(error)", metadata: ["source": "\(configuration.sourceID)"])
        }
    }

    // MARK: Metadata

    /// What taking metadata in did: refusals counted, an open file ended at the next key
    /// frame if new files differ, and metadata for video already written written at once
    /// (or counted as late).
    private func take(_ outcome: MetadataIntake.Outcome) {
        for reason in outcome.refused { counters.metadataDropped[reason, default: 0] += 1 }
        for change in outcome.changes { newFilesDiffer(change) }
        if let earliest = outcome.earliest, let written = writtenUntil, earliest <= written {
            writeMetadata(upTo: written)
        }
    }

    /// New files' tracks changed: an open file ends at the next key frame.
    private func newFilesDiffer(_ change: RecordedTracks.Change) {
        guard file != nil else { return }
        decisions.wantNewFile()
        logger.notice(
            "\(change): a new file starts at the next key frame", metadata: ["source": "\(configuration.sourceID)"])
    }

    private func writeMetadata(upTo time: MediaTime?) {
        guard let file else { return }
        for (identifier, group) in metadata.take(upTo: time) {
            do {
                switch try file.append(group, for: identifier) {
                case .queued?: counters.metadataWritten += 1
                case .tooLate?: counters.metadataDropped["late", default: 0] += 1
                case nil: counters.metadataDropped["noTrackInFile", default: 0] += 1
                }
            } catch {
                counters.metadataDropped["malformed", default: 0] += 1
                logger.warning("metadata not recorded: \(error)", metadata: ["identifier": "\(identifier)"])
            }
        }
    }

    // MARK: Files

    private func openFile(_ start: RecordingFile.Start, at time: MediaTime, decodeTime: MediaTime) throws {
        let file = try RecordingFile(
            start, at: time, decodeTime: decodeTime, tracks: metadata.tracks, current: metadata.current,
            audio: audio.format, configuration: configuration)
        decisions.fileOpened()
        self.file = file
        logger.info(
            "recording",
            metadata: [
                "file": "\(file.path)", "size": "\(start.width)x\(start.height)",
                "audio": "\(audio.format.map { "aac \($0.sampleRate) Hz \($0.channels) ch" } ?? "none")",
            ])
    }

    private func closeFile() {
        guard let file else { return }
        let writer = file.writer
        audio.endFile(writer, track: file.audio?.track, counters: &counters)
        do {
            try writer.finish()
        } catch {
            logger.error("could not finalise \(file.path): \(error); `sightline recover` can finish it")
        }
        // Frames of a fragment that could not be written are not in the file.
        counters.framesWritten += writer.videoSamplesWritten
        if file.framesAppended > writer.videoSamplesWritten {
            counters.framesDropped["writeFailed", default: 0] += file.framesAppended - writer.videoSamplesWritten
        }
        logger.info(
            "recorded",
            metadata: [
                "file": "\(file.path)", "frames": "\(writer.videoSamplesWritten)", "bytes": "\(writer.bytesWritten)",
            ])
        counters.files.append(file.path)
        counters.bytesWritten += writer.bytesWritten
        self.file = nil
        retention?.enforce()
    }

    /// A write or a new file failed: finishes the file as far as it got, drops the frames
    /// waiting for it, and tries a new file at a key frame once the back-off is over.
    private func fail(_ reason: String) {
        counters.framesDropped["writeFailed", default: 0] += delayed.count
        delayed.removeAll()
        // A file that failed before its first frame holds nothing: retries leave no litter.
        let emptyFile = file?.writer.videoSamplesWritten == 0 ? file?.path : nil
        closeFile()
        if let emptyFile {
            unlink(emptyFile)
            counters.files.removeAll { $0 == emptyFile }
        }
        if decisions.failed(reason, now: .now) {
            counters.writeFailures += 1
            logger.error(
                "recording failed: \(reason); a new file is tried at the next key frame",
                metadata: ["source": "\(configuration.sourceID)"])
        }
    }

    /// Free space below `minimumFreeSpace` at a key frame: the file in progress is finished
    /// with the frames before it, and recording pauses until a key frame finds room again.
    private func pause(freeBytes: UInt64) {
        flushVideo(until: nil)  // the frames before this key frame complete their group
        writeMetadata(upTo: nil)
        flushAudio(until: nil)
        closeFile()
        logger.error(
            "recording paused: \(pausedReason ?? ""); it resumes once there is room",
            metadata: ["source": "\(configuration.sourceID)"])
    }

    /// The free space where files are written (nil when it cannot be told).
    private func freeSpace() -> UInt64? {
        var info = statvfs()
        guard statvfs(configuration.directory, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
