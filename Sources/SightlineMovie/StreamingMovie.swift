import SightlineCore

/// Fragmented MP4 for a browser's Media Source Extensions: an initialization segment
/// (`ftyp`, `moov` with `mvex`, one H.264 track) and then one `moof`/`mdat` pair per access
/// unit, so a frame can be shown as soon as it arrives. Nothing is re-encoded: the samples
/// are the source's own.
///
/// Times are the source's media times in the track's timescale, so the browser's
/// `mediaTime` for a presented frame is the `time` of the bus messages about that frame.
///
/// Not thread-safe: one owner (the console's bus thread) calls it, in decode order.
package struct StreamingMovie: Sendable {
    package let format: VideoTrackFormat
    /// `ftyp` and `moov`: what a player needs before any fragment.
    package let initialization: [UInt8]
    private var sequence: UInt32 = 0
    private var lastDecodeTime: Int64?
    private var lastDuration: Int64

    package init(format: VideoTrackFormat, frameRate: Double = 30) {
        self.format = format
        let track = TrackLayout(
            id: 1, handler: "vide", timescale: UInt32(format.timescale), sampleEntry: format.sampleEntry,
            width: UInt32(format.width), height: UInt32(format.height))
        initialization =
            MovieBoxes.fileType(.mp4)
            + MovieBoxes.movie(
                tracks: [track], timescale: UInt32(format.timescale), fragmented: true, creationTime: MovieBoxes.now)
        lastDuration = max(Int64((Double(format.timescale) / frameRate).rounded()), 1)
    }

    /// The RFC 6381 codec of the track, for `MediaSource.isTypeSupported` and `addSourceBuffer`.
    package var codec: String { format.codecString }

    /// One fragment holding `unit`; nil for a unit whose decode time does not increase (a
    /// source that started again needs a new stream) or that has no picture data.
    package mutating func fragment(_ unit: VideoAccessUnit) -> [UInt8]? {
        let data = unit.sampleData
        let decodeTime = unit.decodeTime.converted(to: format.timescale).value
        let presentationTime = unit.presentationTime.converted(to: format.timescale).value
        guard !data.isEmpty, data.count < 1 << 30, decodeTime >= 0, presentationTime >= decodeTime,
            presentationTime - decodeTime <= Int64(UInt32.max), lastDecodeTime.map({ decodeTime > $0 }) ?? true
        else { return nil }
        // A sample lasts until the next one, which has not come yet: its own duration when
        // the source gives one, else the last gap between frames.
        if let last = lastDecodeTime { lastDuration = min(decodeTime - last, Int64(UInt32.max)) }
        let duration = unit.duration.map { $0.converted(to: format.timescale).value } ?? lastDuration
        lastDecodeTime = decodeTime
        sequence &+= 1
        var run = FragmentRun(
            trackID: 1, baseDecodeTime: UInt64(decodeTime), dataOffset: 0, absoluteOffset: nil,
            sizes: [UInt32(data.count)], durations: [UInt32(clamping: max(duration, 1))],
            compositionOffsets: [UInt32(presentationTime - decodeTime)], isSync: [unit.isKeyFrame])
        let header = MovieBoxes.mediaDataHeader(payloadSize: UInt64(data.count))
        run.dataOffset = MovieBoxes.fragmentSize(runs: [run]) + header.count
        return MovieBoxes.fragment(sequence: sequence, runs: [run]) + header + data
    }
}
