import SightlineCore

/// What the recorder does with each video frame, as a value: which frames are dropped and
/// why, which key frame starts a new file (segment length, file size, new parameter sets, a
/// track new files have), when recording pauses for disk space and resumes, and the back-off
/// after a failed write. Events in, decisions out, with no disk and no bus: `Recorder`
/// measures (free space, the open file's size) and carries the decisions out on files.
struct VideoDecisions {
    /// When files are cut, and how much free space recording needs.
    struct Limits {
        var segmentDuration: MediaTime?
        var maximumFileSize: UInt64?
        var minimumFreeSpace: UInt64

        init(_ configuration: RecorderConfiguration) {
            segmentDuration = configuration.segmentDuration
            maximumFileSize = configuration.maximumFileSize
            minimumFreeSpace = configuration.minimumFreeSpace
        }
    }

    /// A well-formed video frame as it arrives.
    struct Frame {
        var isKeyFrame: Bool
        var time: MediaTime
        /// A key frame's SPS and PPS (none on other frames).
        var parameterSets: [ArraySlice<UInt8>]
    }

    /// What the recorder's files are when a frame arrives.
    struct Files {
        /// A file is open, or a key frame waiting in the delay will open one.
        var fileComing: Bool
        /// The open file's size, while no key frame waiting in the delay starts its
        /// successor (nil otherwise: its size then decides nothing).
        var openFileBytes: UInt64?
    }

    enum Action: Equatable {
        /// Dropped, counted under `reason`; `why` is logged (rate-limited) when given.
        case drop(reason: String, why: String? = nil)
        /// Goes to the file that is open or coming.
        case append
        /// Starts a new file once it leaves the metadata delay.
        case startFile
    }

    /// Disk space crossed the limit at this key frame.
    enum SpaceChange: Equatable {
        /// Below the limit: the file in progress ends with the frames before this one.
        case paused(freeBytes: UInt64)
        case resumed(freeBytes: UInt64)
    }

    struct Decision: Equatable {
        var space: SpaceChange? = nil
        var action: Action
    }

    let limits: Limits
    /// Free space when recording paused for the lack of it; nil while recording.
    private(set) var pausedWithFreeBytes: UInt64?
    /// Why the last write or new file failed, until a frame is written again.
    private(set) var failureReason: String?
    /// While failing: from when a key frame may try a new file (nil once one has), and the
    /// back-off, doubling from 0.5 s to 2 s with each failure until a frame is written.
    private(set) var nextAttempt: ContinuousClock.Instant?
    private var backoff: Duration?
    private var lastSequence: UInt64?
    private var waitingForKeyFrame = false
    private var parameterSets: [[UInt8]] = []
    private var segmentStart: MediaTime?
    /// New files differ from the open one (a track, the sound, the orientation).
    private var wantsNewFile = false

    init(limits: Limits) { self.limits = limits }

    /// A video message's sequence number, before anything else is looked at: the messages
    /// lost since the last one, when some were (then frames wait for a key frame).
    mutating func sequence(_ seq: UInt64) -> Int? {
        defer { lastSequence = seq }
        guard let last = lastSequence, seq != last &+ 1 else { return nil }
        waitingForKeyFrame = true
        return seq > last ? Int(clamping: seq - last - 1) : 0
    }

    /// What becomes of `frame`. `freeSpace` is asked at key frames only (nil: unknown,
    /// taken as room).
    mutating func decide(
        _ frame: Frame, files: Files, freeSpace: () -> UInt64?, now: ContinuousClock.Instant
    ) -> Decision {
        if pausedWithFreeBytes != nil, !frame.isKeyFrame { return Decision(action: .drop(reason: "diskFull")) }
        if let attempt = nextAttempt {
            guard frame.isKeyFrame, now >= attempt else { return Decision(action: .drop(reason: "writeFailed")) }
            nextAttempt = nil  // this key frame tries a new file; the frames after it follow
        }
        if !files.fileComing || waitingForKeyFrame {
            guard frame.isKeyFrame else {
                return Decision(action: .drop(reason: waitingForKeyFrame ? "gap" : "beforeKeyFrame"))
            }
            waitingForKeyFrame = false
        }
        guard frame.isKeyFrame else { return Decision(action: .append) }
        var space: SpaceChange?
        if let free = freeSpace() {
            if free < limits.minimumFreeSpace {
                let paused = pausedWithFreeBytes == nil ? SpaceChange.paused(freeBytes: free) : nil
                pausedWithFreeBytes = pausedWithFreeBytes ?? free
                return Decision(space: paused, action: .drop(reason: "diskFull"))
            }
            if pausedWithFreeBytes != nil {
                pausedWithFreeBytes = nil
                space = .resumed(freeBytes: free)
            }
        }
        guard !files.fileComing || startsNewFile(frame, files) else { return Decision(space: space, action: .append) }
        guard !frame.parameterSets.isEmpty else {
            return Decision(
                space: space, action: .drop(reason: "malformed", why: "a key frame came without its SPS and PPS"))
        }
        parameterSets = frame.parameterSets.map(Array.init)
        segmentStart = frame.time
        wantsNewFile = false
        return Decision(space: space, action: .startFile)
    }

    private func startsNewFile(_ frame: Frame, _ files: Files) -> Bool {
        if !frame.parameterSets.isEmpty, frame.parameterSets.map(Array.init) != parameterSets { return true }
        if let duration = limits.segmentDuration, let start = segmentStart, frame.time - start >= duration {
            return true
        }
        if let limit = limits.maximumFileSize, let bytes = files.openFileBytes, bytes >= limit { return true }
        return wantsNewFile
    }

    /// New files will differ from the open one: the next key frame starts one.
    mutating func wantNewFile() { wantsNewFile = true }

    /// A file opened with everything learned so far.
    mutating func fileOpened() { wantsNewFile = false }

    /// A frame could not be written: the frames after it wait for a key frame.
    mutating func waitForKeyFrame() { waitingForKeyFrame = true }

    /// The source's next run numbers its messages from 0 again.
    mutating func startNewRun() { lastSequence = nil }

    /// A write or a new file failed: a key frame may try a new file after the back-off.
    /// True for the first failure of a run of them (the one to log and count).
    mutating func failed(_ reason: String, now: ContinuousClock.Instant) -> Bool {
        let backoff = min((backoff ?? .milliseconds(250)) * 2, .seconds(2))
        self.backoff = backoff
        nextAttempt = now + backoff
        defer { failureReason = reason }
        return failureReason == nil
    }

    /// A frame was written: true when that ends a failure (the one to log).
    mutating func frameWritten() -> Bool {
        guard failureReason != nil else { return false }
        failureReason = nil
        backoff = nil
        return true
    }
}
