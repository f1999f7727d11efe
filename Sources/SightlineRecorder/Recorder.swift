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
        if let writer {
            live.framesWritten += writer.videoSamplesWritten
            live.bytesWritten += writer.bytesWritten
        }
        return live
    }
    /// Why recording is failing, while it is: a write or a new file failed (the disk full,
    /// no descriptors left, an I/O error). The file is finished as far as it got, and a new
    /// one is tried at the first key frame after a back-off that doubles from 0.5 s to 2 s,
    /// so recording comes back within a few seconds of the cause going, with no restart.
    package private(set) var failureReason: String?
    /// While failing: from when the first key frame may start a new file (nil once one
    /// has), and the back-off that doubles with each failure until a frame is written.
    package private(set) var nextAttempt: ContinuousClock.Instant?
    private var backoff: Duration?
    /// Why recording is paused, while free space is below `minimumFreeSpace`: it resumes at
    /// the first key frame once there is room again (retention, or someone, freed some).
    package private(set) var pausedReason: String?
    private let logger: Logger
    /// Frames dropped for what the bus brought: one line per reason every 10 s at most.
    private var dropLog: RateLimitedLog

    private var writer: MovieWriter?
    private var path: String?
    private var parameterSets: [ArraySlice<UInt8>] = []
    private var segmentStart: MediaTime?
    private var lastVideoSequence: UInt64?
    private var waitingAfterGap = false
    /// Video waiting out the metadata delay; a key frame that starts a file says which.
    private var delayed: [(sample: VideoSample, startsFile: NextFile?)] = []
    private var newestVideoTime: MediaTime?
    /// Presentation time up to which video has been handed to the writer.
    private var writtenUntil: MediaTime?
    /// The metadata tracks every new file gets.
    private var tracks = RecordedTracks()
    /// The open file's track index and format for each identifier. A kind's track gets its
    /// extra fields in new files once the source announces them (`learnExtraFields`); until
    /// then files keep the kind's own key table (iOS's exact one for faces).
    private var fileTracks: [String: (index: Int, format: MetadataTrackFormat)] = [:]
    /// An identifier without a track in the open file: the next key frame starts a new file.
    private var wantsNewFile = false
    /// Metadata waiting for its video, and what holds for each identifier.
    private var metadata = MetadataDelay()
    /// How the source's frames are turned for display (EXIF 2-8), once its status has said:
    /// new files get the matrix and an orientation track, as iOS writes them.
    private var orientation: Int?
    /// The identifiers of each client input's last group, which its next group replaces.
    private var inputIdentifiers: [String: Set<String>] = [:]
    private var fileFrames = 0
    private var audio = RecorderAudio()
    /// The open file's sound track (its passthrough index) and format, when it has one.
    private var fileAudio: (track: Int, format: AudioFormat)?
    /// The open file's first video decode time: its audio starts there at the earliest.
    private var fileVideoStart: MediaTime?

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
        try Self.prepare(directory: configuration.directory)
        for (identifier, dataType) in configuration.metadataTracks {
            learnTrack(identifier, .client(identifier: identifier, dataType: dataType))
        }
    }

    /// Creates the directory if needed and checks that files can be written there.
    package static func prepare(directory: String) throws {
        if (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) == nil {
            // Foundation's message hides why; the system call says it.
            if mkdir(directory, 0o755) != 0, errno != EEXIST {
                throw SightlineError.invalidArgument(
                    "cannot record to \(directory): \(String(cString: strerror(errno)))")
            }
        }
        guard access(directory, W_OK) == 0 else {
            throw SightlineError.invalidArgument("cannot record to \(directory): \(String(cString: strerror(errno)))")
        }
    }

    /// Finalises recordings a crash left in `directory`, keeping every complete fragment, and
    /// removes those cut off before their first fragment (they hold no frame). Files another
    /// recorder is writing hold its lock and are left alone.
    package static func recoverUnfinished(in directory: String, logger: Logger) {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in files.sorted() where name.hasSuffix(".mov") {
            let path = "\(directory)/\(name)"
            do {
                let outcome = try MovieRecovery.recover(
                    path: path, isRecording: RecordingName.sourceID(of: name) != nil)
                switch outcome {
                case .alreadyFinalised, .inUse: continue
                case .recovered(let fragments, let discarded):
                    logger.notice(
                        "recovered an unfinished recording",
                        metadata: ["file": "\(path)", "fragments": "\(fragments)", "discardedBytes": "\(discarded)"])
                case .removedEmpty:
                    logger.notice("removed \(path): \(MovieRecovery.describe(outcome))")
                }
            } catch {
                logger.error("could not recover \(path): \(error)")
            }
        }
    }

    /// Handles one message of this recorder's source; others are ignored.
    package func handle(_ received: ReceivedMessage) {
        let message = received.message
        guard message.source == configuration.sourceID else { return }
        switch message.kind {
        case .video: handleVideo(message, payload: received.payload)
        case .audio: handleAudio(message, payload: received.payload)
        case .metadata: handleClientMetadata(message)
        case .status:
            for change in tracks.learn(detections: message.status?.detections ?? []) { newFilesDiffer(change) }
            if let orientation = message.status?.input?.orientation { learnOrientation(orientation) }
            if let output = message.status?.input?.audio?.output { audio.expect(output) }
            // The source ended or failed: its file is complete. One opened again (`serve`)
            // starts a new file at its first key frame.
            if let state = message.status?.state, state == .stopped || state == .failed {
                finish()
                startNewRun()
            }
        default:
            if let kind = ObjectKind.carried(by: message.kind) { handleObjects(of: kind, message) }
        }
    }

    /// After a run of the source has ended (its file finished): the next run numbers its
    /// messages from 0, may start its clock again (a stream re-opened), and has found no face
    /// or code yet, so the faces of the last run are not carried into its first file.
    private func startNewRun() {
        lastVideoSequence = nil
        newestVideoTime = nil
        writtenUntil = nil
        audio.startNewRun()
        for kind in ObjectKind.all { metadata.setCurrent(nil, for: kind.trackIdentifier) }
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
        if let last = lastVideoSequence, message.seq != last &+ 1 {
            let lost = message.seq > last ? Int(clamping: message.seq - last - 1) : 0
            counters.messagesLost += lost
            counters.gaps += 1
            waitingAfterGap = true
            logger.warning(
                "video gap: dropping until the next key frame",
                metadata: ["source": "\(configuration.sourceID)", "lost": "\(lost)", "seq": "\(message.seq)"])
        }
        lastVideoSequence = message.seq
        guard let info = message.video, info.codec == "h264", let time = message.time, let payload, !payload.isEmpty,
            info.width > 0, info.height > 0
        else {
            return drop("malformed", log: "a video message is not an H.264 access unit with a time")
        }
        let accessUnit = H264.AccessUnit(annexB: payload)  // split once, here
        guard !accessUnit.units.isEmpty else {
            return drop("malformed", log: "a video message holds no H.264 NAL unit")
        }

        if pausedReason != nil, !info.keyFrame { return drop("diskFull") }
        if let attempt = nextAttempt {
            guard info.keyFrame, ContinuousClock.now >= attempt else { return drop("writeFailed") }
            nextAttempt = nil  // this key frame tries a new file; the frames after it follow
        }
        let fileComing = writer != nil || delayed.contains { $0.startsFile != nil }
        if !fileComing || waitingAfterGap {
            guard info.keyFrame else { return drop(waitingAfterGap ? "gap" : "beforeKeyFrame") }
            waitingAfterGap = false
        }
        var startsFile: NextFile?
        if info.keyFrame {
            guard hasFreeSpace() else { return }
            let sets = accessUnit.parameterSets
            // The file changes when this frame leaves the delay: by then the audio and the
            // metadata of the frames before it have arrived and end the file with them.
            if !fileComing || shouldStartNewFile(at: time, parameterSets: sets) {
                guard !sets.isEmpty else { return drop("malformed", log: "a key frame came without its SPS and PPS") }
                startsFile = NextFile(
                    parameterSets: sets, width: info.width, height: info.height, timescale: time.timescale,
                    wallTimeNs: message.wallTimeNs)
                parameterSets = sets
                segmentStart = time
                wantsNewFile = false
            }
        }
        delayed.append(
            (
                VideoSample(
                    accessUnit, decodeTime: info.decodeTime, presentationTime: time, duration: info.duration,
                    isSync: info.keyFrame), startsFile
            ))
        newestVideoTime = max(newestVideoTime ?? time, time)
        flushVideo(until: time - configuration.metadataDelay)
    }

    private func drop(_ reason: String, log: String? = nil) {
        counters.framesDropped[reason, default: 0] += 1
        if let log {
            dropLog.warning("\(log); dropped", reason: reason, metadata: ["source": "\(configuration.sourceID)"])
        }
    }

    private func shouldStartNewFile(at time: MediaTime, parameterSets sets: [ArraySlice<UInt8>]) -> Bool {
        if !sets.isEmpty, sets.map(Array.init) != parameterSets.map(Array.init) { return true }
        if let duration = configuration.segmentDuration, let start = segmentStart, time - start >= duration {
            return true
        }
        // The open file's size says nothing once its successor is decided.
        if let limit = configuration.maximumFileSize, let writer, writer.bytesWritten >= limit,
            !delayed.contains(where: { $0.startsFile != nil })
        {
            return true
        }
        return wantsNewFile
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
            guard let writer else {
                drop("beforeKeyFrame")
                continue
            }
            writeMetadata(upTo: sample.presentationTime)
            flushAudio(until: sample.presentationTime)
            do {
                let synced = writer.videoSamplesWritten
                try writer.append(sample)
                if writer.videoSamplesWritten != synced {
                    // What a crash can no longer take: the crash tests read this line.
                    logger.debug(
                        "fragment synced",
                        metadata: ["file": "\(path ?? "")", "frames": "\(writer.videoSamplesWritten)"])
                }
                fileFrames += 1
                writtenUntil = max(writtenUntil ?? sample.presentationTime, sample.presentationTime)
                if failureReason != nil { resumeAfterFailure() }
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
        while let first = delayed.first, !first.sample.isSync, first.startsFile == nil {
            delayed.removeFirst()
            drop("malformed")
        }
        if delayed.isEmpty { waitingAfterGap = true }
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
        if changed, writer != nil, fileAudio?.format != info.format {
            wantsNewFile = true
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
        guard let writer, let fileStart = fileVideoStart else { return }
        do {
            try audio.write(
                until: until, to: writer, track: fileAudio?.track, trackFormat: fileAudio?.format, fileStart: fileStart,
                counters: &counters)
        } catch {
            counters.audioDropped["malformed", default: 0] += 1
            logger.warning("audio not recorded: \(error)", metadata: ["source": "\(configuration.sourceID)"])
        }
    }

    // MARK: Metadata

    /// One message's objects of a kind, as a group of the kind's track.
    private func handleObjects(of kind: ObjectKind, _ message: Message) {
        guard let time = message.time, let recorded = kind.recorded(message) else {
            counters.metadataDropped["malformed", default: 0] += 1
            return
        }
        learnTrack(kind.trackIdentifier, kind.trackFormat)
        if recorded.usesExtraFields, let change = tracks.learnExtraFields(of: kind) { newFilesDiffer(change) }
        enqueue(kind.trackIdentifier, TimedMetadataGroup(time: time, items: recorded.items))
    }

    /// The source is turned: new files show it turned (the video track's matrix) and say so
    /// in an orientation track from their first frame; an open file ends at the next key frame.
    private func learnOrientation(_ orientation: Int) {
        guard orientation != self.orientation, (2...8).contains(orientation) else { return }
        self.orientation = orientation
        learnTrack(MetadataIdentifier.videoOrientation, .videoOrientation)
        let turned = TimedMetadataGroup(
            time: .zero,
            items: [
                MetadataItem(
                    identifier: MetadataIdentifier.videoOrientation, dataType: .int16, value: .int(Int64(orientation)))
            ])
        metadata.setCurrent(turned, for: MetadataIdentifier.videoOrientation)
        if writer != nil { wantsNewFile = true }
    }

    /// A client group: each identifier goes to its own track; identifiers the input's
    /// previous group had and this one lacks end here.
    private func handleClientMetadata(_ message: Message) {
        guard let time = message.time, let group = message.metadata, let items = try? group.validated() else {
            counters.metadataDropped["malformed", default: 0] += 1
            return
        }
        for item in items {
            let format = MetadataTrackFormat.client(identifier: item.identifier, dataType: item.dataType)
            if let known = tracks.format(of: item.identifier), known != format {
                counters.metadataDropped["dataTypeChanged", default: 0] += 1
                continue
            }
            learnTrack(item.identifier, format)
            enqueue(item.identifier, TimedMetadataGroup(time: time, duration: group.duration, items: [item]))
        }
        let now = Set(items.map(\.identifier))
        for ended in inputIdentifiers[group.input, default: []].subtracting(now) {
            enqueue(ended, TimedMetadataGroup(time: time, items: []))
        }
        inputIdentifiers[group.input] = now
    }

    /// Makes sure new files get a track for `identifier`.
    private func learnTrack(_ identifier: String, _ format: MetadataTrackFormat) {
        if let change = tracks.learn(identifier, format) { newFilesDiffer(change) }
    }

    /// New files' tracks changed: an open file ends at the next key frame.
    private func newFilesDiffer(_ change: RecordedTracks.Change) {
        guard writer != nil else { return }
        wantsNewFile = true
        switch change {
        case .newTrack(let identifier):
            logger.notice(
                "new metadata track: a new file starts at the next key frame",
                metadata: ["source": "\(configuration.sourceID)", "identifier": "\(identifier)"])
        case .extraFields(let kind, let detection):
            logger.notice(
                "\(kind) have \(detection): a new file with their fields starts at the next key frame",
                metadata: ["source": "\(configuration.sourceID)"])
        }
    }

    private func enqueue(_ identifier: String, _ group: TimedMetadataGroup) {
        if let refusal = metadata.add(group, for: identifier, newestVideo: newestVideoTime) {
            counters.metadataDropped[refusal.rawValue, default: 0] += 1
            return
        }
        // Metadata for video already written goes straight in (or is counted as late).
        if let written = writtenUntil, group.time <= written { writeMetadata(upTo: written) }
    }

    private func writeMetadata(upTo time: MediaTime?) {
        guard let writer else { return }
        for (identifier, group) in metadata.take(upTo: time) {
            guard let track = fileTracks[identifier]?.index else {
                // The next file starts with it, if it still holds then.
                counters.metadataDropped["noTrackInFile", default: 0] += 1
                continue
            }
            var group = group
            group.items = itemsForFile(identifier, group.items)
            do {
                if try writer.append(group, toMetadataTrack: track) == .queued {
                    counters.metadataWritten += 1
                } else {
                    counters.metadataDropped["late", default: 0] += 1
                }
            } catch {
                counters.metadataDropped["malformed", default: 0] += 1
                logger.warning("metadata not recorded: \(error)", metadata: ["identifier": "\(identifier)"])
            }
        }
    }

    /// A kind's track declared without its extra fields gets its objects without them.
    private func itemsForFile(_ identifier: String, _ items: [MetadataItem]) -> [MetadataItem] {
        guard let format = fileTracks[identifier]?.format, ObjectKind.tracked(by: identifier) != nil else {
            return items
        }
        return items.map(format.fitting)
    }

    // MARK: Files

    /// A file to open once its first frame leaves the metadata delay: by then the metadata
    /// that is already flowing has said which tracks the file needs.
    private struct NextFile {
        var parameterSets: [ArraySlice<UInt8>]
        var width: Int
        var height: Int
        var timescale: Int32
        var wallTimeNs: UInt64
    }

    private func openFile(_ next: NextFile, at time: MediaTime, decodeTime: MediaTime) throws {
        let (width, height) = (next.width, next.height)
        let format = try VideoTrackFormat(
            annexBParameterSets: H264.annexB(next.parameterSets), width: width, height: height,
            timescale: next.timescale)
        let path = uniquePath(wallTimeNs: next.wallTimeNs)
        let sound = try audio.format.map { try MovieWriter.PassthroughTrackFormat.aac($0) }
        let writer: MovieWriter
        do {
            writer = try makeWriter(path: path, format: format, sound: sound, next: next)
        } catch {
            unlink(path)  // a file that could not start holds nothing
            throw error
        }
        fileTracks = Dictionary(
            uniqueKeysWithValues: tracks.tracks.enumerated().map { ($1.identifier, ($0, $1.format)) })
        fileAudio = audio.format.map { (0, $0) }
        fileVideoStart = decodeTime
        wantsNewFile = false
        // What holds when the file starts (faces on screen, the position) is in it from its
        // first frame.
        for (index, track) in tracks.tracks.enumerated() {
            guard let group = metadata.current[track.identifier], !group.items.isEmpty else { continue }
            if let duration = group.duration, group.time + duration <= time { continue }
            try writer.append(
                TimedMetadataGroup(time: time, items: itemsForFile(track.identifier, group.items)),
                toMetadataTrack: index)
        }
        self.writer = writer
        self.path = path
        fileFrames = 0
        logger.info(
            "recording",
            metadata: [
                "file": "\(path)", "size": "\(width)x\(height)",
                "audio": "\(audio.format.map { "aac \($0.sampleRate) Hz \($0.channels) ch" } ?? "none")",
            ])
    }

    private func makeWriter(
        path: String, format: VideoTrackFormat, sound: MovieWriter.PassthroughTrackFormat?, next: NextFile
    ) throws -> MovieWriter {
        try MovieWriter(
            path: path, video: format, metadataTracks: tracks.tracks.map(\.format),
            passthroughTracks: sound.map { [$0] } ?? [],
            configuration: .init(
                fragmentInterval: configuration.fragmentInterval,
                videoMatrix: orientation.map {
                    DisplayMatrix.matrix(exifOrientation: $0, width: next.width, height: next.height)
                }))
    }

    private func closeFile() {
        guard let writer, let path else { return }
        audio.endFile(writer, track: fileAudio?.track, counters: &counters)
        do {
            try writer.finish()
        } catch {
            logger.error("could not finalise \(path): \(error); `sightline recover` can finish it")
        }
        // Frames of a fragment that could not be written are not in the file.
        counters.framesWritten += writer.videoSamplesWritten
        if fileFrames > writer.videoSamplesWritten {
            counters.framesDropped["writeFailed", default: 0] += fileFrames - writer.videoSamplesWritten
        }
        logger.info(
            "recorded",
            metadata: ["file": "\(path)", "frames": "\(writer.videoSamplesWritten)", "bytes": "\(writer.bytesWritten)"])
        counters.files.append(path)
        counters.bytesWritten += writer.bytesWritten
        self.writer = nil
        self.path = nil
        retention?.enforce()
    }

    /// A write or a new file failed: finishes the file as far as it got, drops the frames
    /// waiting for it, and tries a new file at a key frame once the back-off is over.
    private func fail(_ reason: String) {
        counters.framesDropped["writeFailed", default: 0] += delayed.count
        delayed.removeAll()
        // A file that failed before its first frame holds nothing: retries leave no litter.
        let emptyFile = writer?.videoSamplesWritten == 0 ? path : nil
        closeFile()
        if let emptyFile {
            unlink(emptyFile)
            counters.files.removeAll { $0 == emptyFile }
        }
        let backoff = min((backoff ?? .milliseconds(250)) * 2, .seconds(2))
        self.backoff = backoff
        nextAttempt = ContinuousClock.now + backoff
        if failureReason == nil {
            counters.writeFailures += 1
            logger.error(
                "recording failed: \(reason); a new file is tried at the next key frame",
                metadata: ["source": "\(configuration.sourceID)"])
        }
        failureReason = reason
    }

    /// A frame was written again after a failure.
    private func resumeAfterFailure() {
        logger.notice(
            "recording resumed after a failure",
            metadata: ["source": "\(configuration.sourceID)", "file": "\(path ?? "")"])
        failureReason = nil
        backoff = nil
    }

    /// At each key frame: below `minimumFreeSpace`, the file in progress is finished with
    /// the frames before this key frame and recording pauses; at the first key frame with
    /// room again, a new file starts.
    private func hasFreeSpace() -> Bool {
        var info = statvfs()
        guard statvfs(configuration.directory, &info) == 0 else { return true }
        let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        if free >= configuration.minimumFreeSpace {
            if pausedReason != nil {
                pausedReason = nil
                logger.notice(
                    "recording resumed", metadata: ["source": "\(configuration.sourceID)", "freeMiB": "\(free >> 20)"])
            }
            return true
        }
        if pausedReason == nil {
            flushVideo(until: nil)  // the frames before this key frame complete their group
            writeMetadata(upTo: nil)
            flushAudio(until: nil)
            closeFile()
            pausedReason =
                "only \(free >> 20) MiB free in \(configuration.directory) (the limit is \(configuration.minimumFreeSpace >> 20) MiB)"
            logger.error(
                "recording paused: \(pausedReason!); it resumes once there is room",
                metadata: ["source": "\(configuration.sourceID)"])
        }
        drop("diskFull")
        return false
    }

    /// `<source>-<UTC start time>.mov`, with a counter if that name is taken.
    private func uniquePath(wallTimeNs: UInt64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let stamp = formatter.string(from: Date(timeIntervalSince1970: Double(wallTimeNs) / 1e9))
        let base = "\(configuration.directory)/\(configuration.sourceID)-\(stamp)"
        var path = base + ".mov"
        var counter = 1
        while FileManager.default.fileExists(atPath: path) {
            path = "\(base)-\(counter).mov"
            counter += 1
        }
        return path
    }
}
