import SightlineCore

/// What a `MovieWriter` is given and says: its configuration, the tracks and samples it
/// copies from other movies, and what became of a metadata group.
extension MovieWriter {
    /// The file's brand: QuickTime (`.mov`, what recordings are) or MP4 (`.mp4`, for players
    /// that want one; the boxes are the same).
    package enum Brand: Sendable { case quickTime, mp4 }

    package struct Configuration: Sendable {
        /// How often to cut a fragment (at the next key frame); `nil` writes a classic movie
        /// that is readable only once finished.
        package var fragmentInterval: MediaTime? = MediaTime(value: 2, timescale: 1)
        /// `fsync` each fragment and the finished file: what makes a recording survive power
        /// loss. An export that renames its file into place when done can go without.
        package var syncEachFragment = true
        /// Show only this span of the video's presentation times (an edit list): a clip
        /// starts at the key frame before its first instant and may need frames after its
        /// last to decode, and those are not shown. Movie time 0 is the span's start; timed
        /// metadata is timed from there. nil: from the first frame, all of it.
        package var presentationRange: Range<MediaTime>?
        /// The video track's display matrix (`tkhd`, nine values: a b u c d v x y w), as
        /// `MovieTrack.matrix` reads it; identity by default.
        package var videoMatrix: [Int32]?
        package var brand = Brand.quickTime

        package init(
            fragmentInterval: MediaTime? = MediaTime(value: 2, timescale: 1), syncEachFragment: Bool = true,
            presentationRange: Range<MediaTime>? = nil, videoMatrix: [Int32]? = nil, brand: Brand = .quickTime
        ) {
            self.fragmentInterval = fragmentInterval
            self.syncEachFragment = syncEachFragment
            self.presentationRange = presentationRange
            self.videoMatrix = videoMatrix
            self.brand = brand
        }
    }

    /// A track copied as it is from another movie (audio, typically): its media handler,
    /// timescale and whole sample-entry box (`mp4a` with its `esds` …).
    package struct PassthroughTrackFormat: Sendable {
        package var handler: FourCC
        package var timescale: UInt32
        package var sampleEntry: [UInt8]

        package init(handler: FourCC, timescale: UInt32, sampleEntry: [UInt8]) {
            self.handler = handler
            self.timescale = timescale
            self.sampleEntry = sampleEntry
        }
    }

    /// One sample of a passthrough track: its bytes, its presentation time on the video's
    /// timeline, and its duration in the track's ticks.
    package struct PassthroughSample: Sendable {
        package var data: [UInt8]
        package var time: MediaTime
        package var duration: UInt32

        package init(data: [UInt8], time: MediaTime, duration: UInt32) {
            self.data = data
            self.time = time
            self.duration = duration
        }
    }

    /// What happened to an appended metadata group.
    package enum MetadataAppendResult: Sendable, Equatable {
        case queued
        /// Its time is already written (before the last fragment cut); it was dropped.
        case tooLate
    }
}
