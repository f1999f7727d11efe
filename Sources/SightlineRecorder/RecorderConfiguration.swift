import SightlineCore

/// What a recorder records, where, and when it cuts files.
package struct RecorderConfiguration: Sendable {
    /// The source to record (its video, faces and metadata messages).
    package var sourceID: String
    package var directory: String
    /// How often a fragment is written and synced: at most this much is lost in a crash.
    package var fragmentInterval = MediaTime(value: 2, timescale: 1)
    /// Start a new file at the first key frame after this much media time.
    package var segmentDuration: MediaTime?
    /// Start a new file at the first key frame after a file reaches this size.
    package var maximumFileSize: UInt64?
    /// Pause recording, keeping what was written, while free space is below this.
    package var minimumFreeSpace: UInt64 = 512 << 20
    /// How long and how much this source's recordings are kept; the oldest finished files
    /// past it are deleted (see `RecordingRetention`).
    package var retention = RetentionPolicy()
    /// How long video waits for the metadata about it (detection runs behind capture).
    package var metadataDelay = MediaTime(value: 1, timescale: 1)
    /// Client metadata tracks every file has from its start, whether or not their
    /// identifiers have been seen yet (identifier and data type): a fixed file layout, and no
    /// new file when the first value of one arrives late.
    package var metadataTracks: [(identifier: String, dataType: MetadataDataType)] = []

    package init(sourceID: String, directory: String) {
        self.sourceID = sourceID
        self.directory = directory
    }
}

/// What a recorder did: every video message is written, dropped for a reason, or still
/// waiting in the alignment delay.
package struct RecorderCounters: Sendable, Equatable, Codable {
    package var videoReceived = 0
    package var framesWritten = 0
    /// Video messages dropped, by reason: `gap` (waiting for a key frame after lost
    /// messages), `beforeKeyFrame` (joined mid-GOP), `malformed`, `diskFull` (paused below
    /// the minimum free space), `writeFailed` (in a fragment the disk refused, or while
    /// recording failed and waited to try a new file).
    package var framesDropped: [String: Int] = [:]
    /// Video messages lost on the way (sequence gaps), and how many gaps there were.
    package var messagesLost = 0
    package var gaps = 0
    /// Times the source was away (a camera or stream interrupted, or stalled): each ends the
    /// file at the outage, and the next file starts at the first key frame after it.
    package var sourceOutages = 0
    /// Times recording failed (a write or a new file) and left a gap until it resumed.
    package var writeFailures = 0
    package var metadataWritten = 0
    /// Metadata dropped, by reason: `late` (its time was already written), `malformed`,
    /// `impossibleTime`, `overflow` (more waiting for its video than a recorder holds: 8,192
    /// groups and objects together).
    package var metadataDropped: [String: Int] = [:]
    /// Audio frames written, and dropped by reason: `beforeFile` (heard before the file's
    /// first frame), `noTrackInFile` (the audio started or changed format while a file was
    /// open: the next file has it), `overlap`, `noFile` (waiting too long for a key frame),
    /// `malformed`.
    package var audioWritten = 0
    package var audioDropped: [String: Int] = [:]
    /// Times the audio's timestamps jumped (gaps, overlaps, another clock).
    package var audioJumps = 0
    package var files: [String] = []
    package var bytesWritten: UInt64 = 0

    package init() {}
}
