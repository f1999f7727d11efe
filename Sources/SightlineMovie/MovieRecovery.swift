import Glibc
import SightlineCore

/// Finalises a recording that was cut off while its fragments were being written (process
/// killed, power lost): everything up to the last complete fragment is kept. A recording
/// cut off before its first fragment was complete holds no frame that any player could
/// show, so it is removed rather than "finalised" into a movie that players refuse.
package enum MovieRecovery {
    package enum Outcome: Sendable, Equatable {
        /// The file already has a complete movie header; nothing was changed.
        case alreadyFinalised
        /// `fragments` complete fragments kept; `discardedBytes` of a partial one removed.
        case recovered(fragments: Int, discardedBytes: UInt64)
        /// The recording held no complete fragment (no frame): the file was deleted.
        case removedEmpty(bytes: UInt64)
        /// A writer holds the file's lock: it is being recorded, and was left alone.
        case inUse
    }

    /// Recovers `path` in place, or removes it when it holds no frame. A file too short to
    /// hold even one box header (a recorder killed between creating its file and writing
    /// to it) says nothing of what it is: it is removed only when `isRecording`, that is when
    /// it is named as a recorder names its files, and refused otherwise.
    package static func recover(path: String, isRecording: Bool = false) throws -> Outcome {
        let file = try MovieFile(path: path, mode: .update)
        defer { file.close() }
        guard file.tryLock() else { return .inUse }
        let scan = try file.topLevelBoxes()
        let originalSize = try file.size
        let movies = scan.boxes.filter { $0.type == "moov" }
        if (originalSize < 8 && isRecording) || (scan.boxes.isEmpty && (try? file.read(4, at: 4)) == Array("ftyp".utf8))
        {
            // Killed between creating the file and writing its first box: nothing to keep.
            return try remove(path, bytes: originalSize)
        }
        guard scan.boxes.first?.type == "ftyp" else {
            throw MovieError.unreadable(path: path, reason: "not a QuickTime or MP4 file")
        }
        guard let initial = movies.first else {
            // Media without a header is another muxer's file cut short: not ours to delete.
            let cutInside = scan.incompleteAt.flatMap { try? file.read(4, at: $0 + 4) }
            if !scan.boxes.contains(where: { $0.type == "mdat" }) && cutInside != Array("mdat".utf8) {
                return try remove(path, bytes: originalSize)
            }
            throw MovieError.unreadable(
                path: path, reason: "no 'moov' box: the recording died before its header was written")
        }
        if scan.incompleteAt == nil, movies.count == 1, scan.boxes.last! == initial,
            scan.boxes.contains(where: { $0.type == "mdat" && $0.start < initial.start })
        {
            // A movie header after the media ends a finalised file: no need to parse it.
            return .alreadyFinalised
        }
        let headers = scan.boxes.filter { $0.type == "moof" || $0 == initial }.map(\.start)
        let reader = try MovieReader(path: path)
        if !reader.isFragmented {
            // Finalised, perhaps by a run that died before hiding every fragment header.
            if movies.count > 1 { try hideFragmentHeaders(in: file, at: headers) }
            return .alreadyFinalised
        }

        // Keep whole moof+mdat pairs; cut everything after the last one.
        let (end, fragments) = wholeFragments(scan.boxes, after: scan.boxes.firstIndex { $0 == initial }!)
        guard fragments > 0 else { return try remove(path, bytes: originalSize) }
        try file.truncate(to: end)
        let kept = try MovieReader(path: path)
        guard kept.warnings.isEmpty else {
            throw MovieError.unreadable(path: path, reason: kept.warnings.joined(separator: "; "))
        }

        var tracks = kept.tracks.map(TrackLayout.init(recovering:))
        placeSoundTracks(&tracks, read: kept.tracks)
        let timescale = tracks.first(where: \.isVideo)?.timescale ?? tracks.first?.timescale ?? 600
        let movie = MovieBoxes.movie(
            tracks: tracks, timescale: timescale, fragmented: false, creationTime: MovieBoxes.now)
        try file.write(movie, at: end)
        try file.sync()
        try hideFragmentHeaders(in: file, at: headers.filter { $0 < end })
        return .recovered(fragments: fragments, discardedBytes: originalSize - end)
    }

    /// How many whole `moof`+`mdat` pairs follow the movie header at `header`, and where the
    /// last one ends (the header's end when none does): what a crash left complete.
    private static func wholeFragments(_ boxes: [(type: FourCC, start: UInt64, size: UInt64)], after header: Int) -> (
        end: UInt64, count: Int
    ) {
        var end = boxes[header].start + boxes[header].size
        var count = 0
        var index = header + 1
        while index + 1 < boxes.count, boxes[index].type == "moof", boxes[index + 1].type == "mdat" {
            end = boxes[index + 1].start + boxes[index + 1].size
            count += 1
            index += 2
        }
        return (end, count)
    }

    /// One line for a person: what recovery did to a file.
    package static func describe(_ outcome: Outcome) -> String {
        switch outcome {
        case .alreadyFinalised: "already finalised"
        case .recovered(let fragments, let discarded):
            "recovered \(fragments) fragments, discarded \(discarded) bytes of an incomplete one"
        case .removedEmpty(let bytes):
            "removed: cut off before its first fragment was complete (\(bytes) bytes, no frame)"
        case .inUse: "left alone: another process is recording it"
        }
    }

    /// Puts each sound track in step with the video, as the writer would have: their
    /// fragments share the video's decode timeline, so the first sound sample's decode time
    /// against the video's first presentation says how much to cut or to wait.
    private static func placeSoundTracks(_ tracks: inout [TrackLayout], read: [MovieTrack]) {
        guard let video = tracks.first(where: \.isVideo) else { return }
        for index in tracks.indices where tracks[index].isSound {
            guard let first = read[index].samples.first else { continue }
            let scale = Int32(clamping: tracks[index].timescale)
            let lead =
                MediaTime(value: video.editMediaTime, timescale: Int32(clamping: video.timescale)).converted(to: scale)
                .value - first.decodeTime
            tracks[index].align(lead: lead, movieTimescale: Int32(clamping: video.timescale))
        }
    }

    private static func remove(_ path: String, bytes: UInt64) throws -> Outcome {
        guard unlink(path) == 0 else { throw MovieError.io(path: path, operation: "removing", code: errno) }
        return .removedEmpty(bytes: bytes)
    }

    /// Turns the fragmented header and each fragment header into `free` boxes of the same
    /// size, once a complete `moov` follows them; no offset changes.
    static func hideFragmentHeaders(in file: MovieFile, at offsets: [UInt64]) throws {
        guard !offsets.isEmpty else { return }
        for offset in offsets { try file.write(Array("free".utf8), at: offset + 4) }
        try file.sync()
    }
}

extension TrackLayout {
    /// The layout of a track read back from fragments: samples grouped into chunks wherever
    /// they sit back to back in the file.
    init(recovering track: MovieTrack) {
        self.init(
            id: track.id, handler: track.mediaType, timescale: track.timescale, sampleEntry: track.sampleEntry,
            width: track.width, height: track.height, describes: track.describes)
        let firstPresentation = track.samples.map { $0.decodeTime &+ Int64($0.compositionOffset) }.min() ?? 0
        editMediaTime = track.mediaType == "vide" ? firstPresentation : track.editMediaTime
        var nextOffset: UInt64?
        for sample in track.samples {
            if sample.offset == nextOffset {
                table.chunks[table.chunks.count - 1].count += 1
            } else {
                table.chunks.append((sample.offset, 1))
            }
            nextOffset = sample.offset + UInt64(sample.size)
            table.append(
                size: sample.size, duration: sample.duration,
                compositionOffset: UInt32(clamping: sample.compositionOffset),
                isSync: sample.isSync)
        }
    }
}
