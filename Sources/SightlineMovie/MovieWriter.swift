import SightlineCore

/// Writes a QuickTime movie: one H.264 video track and any number of timed metadata tracks
/// (`mebx`), like `AVAssetWriter` with metadata adaptors.
///
/// The lifecycle follows FFmpeg's muxers: `init` writes the header, `append` writes samples,
/// `finish` writes the trailer. While recording, the movie is written as fragments
/// (`moov` with `mvex`, then `moof`/`mdat` pairs cut on key frames and synced to disk), so
/// a process that dies loses at most the fragment in progress; `MovieRecovery` finalises
/// such a file. `finish` appends a complete classic `moov` and turns the fragment headers
/// into `free` boxes, so every reader, exiftool included, sees all samples and no media
/// byte moves.
///
/// Not thread-safe: one owner calls it, in order.
package final class MovieWriter {
    package let path: String
    package let configuration: Configuration
    package private(set) var bytesWritten: UInt64 = 0
    package private(set) var fragmentsWritten = 0
    /// Video samples on disk (appended samples wait in memory until their fragment is cut).
    package private(set) var videoSamplesWritten = 0

    private let file: MovieFile
    private var tracks: [TrackLayout]
    private let metadataFormats: [MetadataTrackFormat]
    private var timelines: [MetadataTimeline]
    private let timescale: Int32
    private let creationTime = MovieBoxes.now
    private var initialMovieOffset: UInt64?
    private var fragmentOffsets: [UInt64] = []
    private var state = State.writing

    private enum State { case writing, failed, finished }

    // Video in decode order since the last cut, in the track's ticks.
    private struct PendingVideo {
        var data: [UInt8]
        var decodeTime: Int64
        var presentationTime: Int64
        var duration: Int64?
        var isSync: Bool
    }
    private var pending: [PendingVideo] = []
    private var firstDecodeTime: Int64?
    /// Movie time zero: the first frame's presentation time.
    private var origin: Int64?
    private var lastDecodeTime: Int64?
    private var lastDuration: Int64?
    private var presentationEnd: Int64 = 0
    private var fragmentStart: Int64 = 0
    /// Passthrough samples waiting for their fragment, by passthrough track, and when each
    /// track's first sample is presented.
    private var pendingPassthrough: [[PassthroughSample]]
    private var passthroughStarts: [MediaTime?]
    /// Where each passthrough track's first fragment starts on the video's decode timeline.
    private var passthroughMediaStarts: [UInt64?]

    package init(
        path: String, video: VideoTrackFormat, metadataTracks: [MetadataTrackFormat] = [],
        passthroughTracks: [PassthroughTrackFormat] = [], configuration: Configuration = Configuration()
    ) throws {
        self.path = path
        self.configuration = configuration
        timescale = video.timescale
        metadataFormats = metadataTracks
        timelines = Array(repeating: MetadataTimeline(), count: metadataTracks.count)
        var layouts = [
            TrackLayout(
                id: 1, handler: "vide", timescale: UInt32(video.timescale), sampleEntry: video.sampleEntry,
                width: UInt32(video.width), height: UInt32(video.height))
        ]
        if let matrix = configuration.videoMatrix {
            guard matrix.count == 9 else { throw MovieError.invalidInput("a display matrix has nine values") }
            layouts[0].matrix = matrix
        }
        for (index, format) in metadataTracks.enumerated() {
            guard !format.keys.isEmpty else { throw MovieError.invalidInput("metadata track \(index + 1) has no keys") }
            layouts.append(
                TrackLayout(
                    id: UInt32(index + 2), handler: "meta", timescale: UInt32(video.timescale),
                    sampleEntry: MetadataCoding.sampleEntry(format), describes: format.describesVideo ? [1] : []))
        }
        for (index, format) in passthroughTracks.enumerated() {
            guard format.timescale > 0 else {
                throw MovieError.invalidInput("passthrough track \(index + 1) has timescale 0")
            }
            layouts.append(
                TrackLayout(
                    id: UInt32(layouts.count + 1), handler: format.handler, timescale: format.timescale,
                    sampleEntry: format.sampleEntry))
        }
        pendingPassthrough = Array(repeating: [], count: passthroughTracks.count)
        passthroughStarts = Array(repeating: nil, count: passthroughTracks.count)
        passthroughMediaStarts = Array(repeating: nil, count: passthroughTracks.count)
        tracks = layouts
        file = try MovieFile(path: path, mode: .create)
        guard file.tryLock() else { throw MovieError.inUse(path: path) }
        try write(MovieBoxes.fileType(configuration.brand))
        if configuration.fragmentInterval != nil {
            initialMovieOffset = bytesWritten
            try write(
                MovieBoxes.movie(
                    tracks: tracks, timescale: UInt32(timescale), fragmented: true, creationTime: creationTime))
        }
        if configuration.syncEachFragment { try file.sync() }
    }

    /// Appends one access unit, in decode order, as its sample (length-prefixed, its
    /// parameter sets in the track's `avcC`).
    package func append(_ sample: VideoAccessUnit) throws {
        try checkWriting()
        let data = sample.sampleData
        let decodeTime = sample.decodeTime.converted(to: timescale).value
        let presentationTime = sample.presentationTime.converted(to: timescale).value
        if let last = lastDecodeTime, decodeTime <= last {
            throw MovieError.invalidInput(
                "video decode time \(sample.decodeTime) does not increase (previous \(last)/\(timescale))")
        }
        guard presentationTime >= decodeTime else {
            throw MovieError.invalidInput("video presentation time \(sample.presentationTime) precedes its decode time")
        }
        guard !data.isEmpty, data.count <= UInt32.max else {
            throw MovieError.invalidInput("a video sample of \(data.count) bytes cannot be written")
        }
        if origin == nil {
            guard sample.isKeyFrame else { throw MovieError.invalidInput("the first video sample must be a key frame") }
            let shown = configuration.presentationRange?.lowerBound.converted(to: timescale).value ?? presentationTime
            guard shown >= presentationTime else {
                throw MovieError.invalidInput("the clip starts before its first key frame")
            }
            origin = shown
            firstDecodeTime = decodeTime
            fragmentStart = decodeTime
            tracks[0].editMediaTime = shown - decodeTime
            for index in timelines.indices { timelines[index].start(at: shown) }
        }
        // A sample lasts until the next one, whatever duration it came with: a camera that
        // lost frames leaves a gap in decode times, and the movie's timeline (its durations)
        // must keep it, or the video runs ahead of its sound and its metadata. Known now,
        // before a cut writes it.
        if let last = pending.last {
            pending[pending.count - 1].duration = decodeTime - last.decodeTime
        }
        // A classic movie is written in the same steps, without fragment headers, so memory stays bounded.
        let interval = configuration.fragmentInterval ?? MediaTime(value: 2, timescale: 1)
        if sample.isKeyFrame, !pending.isEmpty, decodeTime - fragmentStart >= interval.converted(to: timescale).value {
            try cut(metadataUntil: presentationTime, passthroughUntil: presentationTime)
            fragmentStart = decodeTime
        }
        let duration = sample.duration.map { $0.converted(to: timescale).value }
        pending.append(
            PendingVideo(
                data: data, decodeTime: decodeTime, presentationTime: presentationTime, duration: duration,
                isSync: sample.isKeyFrame))
        lastDecodeTime = decodeTime
    }

    /// Appends a timed metadata group to metadata track `track` (0-based, in the order given
    /// to `init`). An empty group ends the previous value; a group without a duration lasts
    /// until the next group of the track.
    @discardableResult
    package func append(_ group: TimedMetadataGroup, toMetadataTrack track: Int) throws -> MetadataAppendResult {
        try checkWriting()
        guard metadataFormats.indices.contains(track) else {
            throw MovieError.invalidInput("there is no metadata track \(track)")
        }
        let payload = try MetadataCoding.sample(group.items, format: metadataFormats[track])
        let start = group.time.converted(to: timescale).value
        let end = group.duration.map { start + $0.converted(to: timescale).value }
        return timelines[track].insert(start: start, end: end, payload: payload) == .queued ? .queued : .tooLate
    }

    /// Appends a sample to passthrough track `track` (0-based, in the order given to
    /// `init`), in presentation order. The track is shown from movie time 0 like the video:
    /// a sample that starts before it is cut by the edit list.
    package func append(_ sample: PassthroughSample, toPassthroughTrack track: Int) throws {
        try checkWriting()
        guard pendingPassthrough.indices.contains(track) else {
            throw MovieError.invalidInput("there is no passthrough track \(track)")
        }
        guard !sample.data.isEmpty, sample.data.count <= UInt32.max else {
            throw MovieError.invalidInput("a passthrough sample of \(sample.data.count) bytes cannot be written")
        }
        if let last = pendingPassthrough[track].last, sample.time < last.time {
            throw MovieError.invalidInput("passthrough sample times must not go back")
        }
        if passthroughStarts[track] == nil { passthroughStarts[track] = sample.time }
        pendingPassthrough[track].append(sample)
    }

    /// The metadata sample that means "nothing" (an empty group), as every track writes it.
    package static var emptyMetadataSample: [UInt8] { MetadataCoding.nullSample }

    /// Appends a sample copied from another movie's metadata track with the same key table
    /// (a clip of a recording): its bytes are written as they are, over `time` for
    /// `duration`, without decoding and encoding its items again.
    @discardableResult
    package func appendSample(_ payload: [UInt8], time: MediaTime, duration: MediaTime, toMetadataTrack track: Int)
        throws
        -> MetadataAppendResult
    {
        try checkWriting()
        guard metadataFormats.indices.contains(track) else {
            throw MovieError.invalidInput("there is no metadata track \(track)")
        }
        guard payload.count >= 8 else { throw MovieError.invalidInput("a metadata sample is at least 8 bytes") }
        let start = time.converted(to: timescale).value
        let end = (time + duration).converted(to: timescale).value
        return timelines[track].insert(start: start, end: end, payload: payload) == .queued ? .queued : .tooLate
    }

    /// Writes what is pending and the final `moov`. After a failed write it still finalises
    /// what reached the disk; if even that fails, the file stays recoverable.
    package func finish() throws {
        switch state {
        case .finished: return
        case .failed: break
        case .writing:
            if let last = pending.last, last.duration == nil {
                pending[pending.count - 1].duration = lastDuration ?? Int64(timescale) / 30
            }
            var end = pending.reduce(presentationEnd) { max($0, $1.presentationTime + ($1.duration ?? 0)) }
            if let range = configuration.presentationRange, let origin {
                end = min(end, range.upperBound.converted(to: timescale).value)
                tracks[0].editDuration = UInt64(max(0, end - origin))
            }
            try cut(metadataUntil: end, passthroughUntil: nil)
            if let origin { placePassthroughTracks(origin: origin, end: end) }
        }
        let movie = MovieBoxes.movie(
            tracks: tracks, timescale: UInt32(timescale), fragmented: false, creationTime: creationTime)
        try file.write(movie, at: bytesWritten)
        bytesWritten += UInt64(movie.count)
        // The complete header must be on disk before the fragment headers are hidden.
        if configuration.syncEachFragment { try file.sync() }
        try MovieRecovery.hideFragmentHeaders(in: file, at: (initialMovieOffset.map { [$0] } ?? []) + fragmentOffsets)
        state = .finished
        file.close()
    }

    private func checkWriting() throws {
        guard state == .writing else { throw MovieError.writerClosed(path: path) }
    }

    private func write(_ bytes: [UInt8]) throws {
        try file.write(bytes, at: bytesWritten)
        bytesWritten += UInt64(bytes.count)
    }

    /// Each passthrough track's edit list: shown in step with the video from movie time 0,
    /// its media cut where it started earlier, or after an empty edit where it started
    /// later, for as long as the video.
    private func placePassthroughTracks(origin: Int64, end: Int64) {
        let firstPassthrough = 1 + metadataFormats.count
        for (index, start) in passthroughStarts.enumerated() {
            guard let start else { continue }
            let track = firstPassthrough + index
            let scale = Int32(clamping: tracks[track].timescale)
            let lead =
                MediaTime(value: origin, timescale: timescale).converted(to: scale).value
                - start.converted(to: scale).value
            let shown = MediaTime(value: end - origin, timescale: timescale).converted(to: scale).value + min(lead, 0)
            tracks[track].align(lead: lead, movieTimescale: timescale)
            tracks[track].editDuration = UInt64(
                max(0, min(Int64(tracks[track].table.duration) - max(lead, 0), shown)))
        }
    }

    /// Writes the pending video, each metadata track up to `metadataUntil` and the
    /// passthrough samples presented before `passthroughUntil` (nil: all), as one fragment
    /// (or one plain `mdat`).
    private func cut(metadataUntil: Int64, passthroughUntil: Int64?) throws {
        guard let origin, let firstDecodeTime else { return }
        var contents = FragmentContents()
        let video = pending
        pending.removeAll(keepingCapacity: true)
        if let last = video.last, let duration = last.duration { lastDuration = duration }
        if !video.isEmpty {
            contents.add(
                track: 1, baseDecodeTime: UInt64(video[0].decodeTime - firstDecodeTime), video.map(\.data),
                durations: video.map { UInt32(clamping: $0.duration ?? 0) },
                compositionOffsets: video.map { UInt32(clamping: $0.presentationTime - $0.decodeTime) },
                isSync: video.map(\.isSync))
            presentationEnd = video.reduce(presentationEnd) { max($0, $1.presentationTime + ($1.duration ?? 0)) }
        }
        for index in timelines.indices {
            let base = timelines[index].cursor - origin
            let samples = timelines[index].samples(until: metadataUntil, nullSample: MetadataCoding.nullSample)
            guard !samples.isEmpty else { continue }
            contents.add(
                track: UInt32(index + 2), baseDecodeTime: UInt64(max(base, 0)), samples.map(\.payload),
                durations: samples.map(\.duration))
        }
        for index in pendingPassthrough.indices {
            takePassthrough(index, until: passthroughUntil, firstDecodeTime: firstDecodeTime, into: &contents)
        }
        guard !contents.runs.isEmpty else { return }
        let start = try write(&contents)
        fragmentsWritten += 1
        videoSamplesWritten += video.count
        for run in contents.runs {
            let track = Int(run.trackID) - 1
            tracks[track].table.chunks.append((start + UInt64(run.dataOffset), UInt32(run.sizes.count)))
            for index in run.sizes.indices {
                tracks[track].table.append(
                    size: run.sizes[index], duration: run.durations[index],
                    compositionOffset: run.compositionOffsets[index], isSync: run.isSync[index])
            }
        }
    }

    /// Adds passthrough track `index`'s samples presented before `until` (nil: all) to
    /// `contents`.
    private func takePassthrough(
        _ index: Int, until: Int64?, firstDecodeTime: Int64, into contents: inout FragmentContents
    ) {
        let limit = until.map { MediaTime(value: $0, timescale: timescale) }
        let count =
            limit.map { limit in pendingPassthrough[index].prefix { $0.time < limit }.count }
            ?? pendingPassthrough[index].count
        guard count > 0 else { return }
        let samples = pendingPassthrough[index].prefix(count)
        pendingPassthrough[index].removeFirst(count)
        let track = 1 + metadataFormats.count + index
        if passthroughMediaStarts[index] == nil {
            // Timed from the video's first decode time, as the video's fragments are, so
            // a reader of the fragments (and recovery) finds the two in step.
            let scale = Int32(clamping: tracks[track].timescale)
            let videoStart = MediaTime(value: firstDecodeTime, timescale: timescale).converted(to: scale).value
            passthroughMediaStarts[index] = UInt64(max(0, samples.first!.time.converted(to: scale).value - videoStart))
        }
        contents.add(
            track: UInt32(track + 1), baseDecodeTime: passthroughMediaStarts[index]! + tracks[track].table.duration,
            samples.map(\.data), durations: samples.map(\.duration))
    }

    /// Writes `contents` as a fragment (`moof` and `mdat`), or as a plain `mdat` when the
    /// movie is not fragmented, and returns where it starts; the runs' data offsets are
    /// then the file's. A failed write leaves the file ending at the last whole fragment.
    private func write(_ contents: inout FragmentContents) throws -> UInt64 {
        let fragmented = configuration.fragmentInterval != nil
        let start = bytesWritten
        let header = MovieBoxes.mediaDataHeader(payloadSize: UInt64(contents.size))
        for index in contents.runs.indices where contents.runs[index].dataOffset > 1 << 30 {
            contents.runs[index].absoluteOffset = 0
        }
        let moofSize = fragmented ? MovieBoxes.fragmentSize(runs: contents.runs) : 0
        for index in contents.runs.indices {
            contents.runs[index].dataOffset += moofSize + header.count
            if contents.runs[index].absoluteOffset != nil {
                contents.runs[index].absoluteOffset = start + UInt64(contents.runs[index].dataOffset)
            }
        }
        do {
            var buffer =
                fragmented ? MovieBoxes.fragment(sequence: UInt32(fragmentOffsets.count + 1), runs: contents.runs) : []
            buffer += header
            // Small samples are gathered into few large writes; large ones go straight out.
            for part in contents.parts {
                if buffer.count + part.count > 1 << 20 {
                    try write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
                if part.count > 1 << 20 { try write(part) } else { buffer += part }
            }
            try write(buffer)
            if configuration.syncEachFragment { try file.sync() }
        } catch {
            // Keep the file ending at the last whole fragment, so it stays recoverable.
            state = .failed
            bytesWritten = start
            try? file.truncate(to: start)
            throw error
        }
        if fragmented { fragmentOffsets.append(start) }
        return start
    }
}

/// The runs of one fragment and their samples' bytes, in the order they are written.
private struct FragmentContents {
    private(set) var parts: [[UInt8]] = []
    var runs: [FragmentRun] = []
    /// The bytes of all parts: the next run's offset into the fragment's data.
    private(set) var size = 0

    /// A run of `track`'s samples `parts`; metadata and sound samples are each in sync with
    /// no composition offset.
    mutating func add(
        track: UInt32, baseDecodeTime: UInt64, _ parts: [[UInt8]], durations: [UInt32],
        compositionOffsets: [UInt32]? = nil, isSync: [Bool]? = nil
    ) {
        runs.append(
            FragmentRun(
                trackID: track, baseDecodeTime: baseDecodeTime, dataOffset: size,
                sizes: parts.map { UInt32($0.count) }, durations: durations,
                compositionOffsets: compositionOffsets ?? parts.map { _ in 0 },
                isSync: isSync ?? parts.map { _ in true }))
        self.parts += parts
        size += parts.reduce(0) { $0 + $1.count }
    }
}
