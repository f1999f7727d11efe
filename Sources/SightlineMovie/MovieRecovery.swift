/// Finalises a recording that was cut off while its fragments were being written (process
/// killed, power lost): everything up to the last complete fragment is kept.
public enum MovieRecovery {
    public enum Outcome: Sendable, Equatable {
        /// The file already has a complete movie header; nothing was changed.
        case alreadyFinalised
        /// `fragments` complete fragments kept; `discardedBytes` of a partial one removed.
        case recovered(fragments: Int, discardedBytes: UInt64)
    }

    /// Recovers `path` in place.
    public static func recover(path: String) throws -> Outcome {
        let file = try MovieFile(path: path, mode: .update)
        defer { file.close() }
        let scan = try file.topLevelBoxes()
        let originalSize = try file.size
        let movies = scan.boxes.filter { $0.type == "moov" }
        guard scan.boxes.first?.type == "ftyp" else {
            throw MovieError.unreadable(path: path, reason: "not a QuickTime or MP4 file")
        }
        guard let initial = movies.first else {
            throw MovieError.unreadable(
                path: path, reason: "no 'moov' box: the recording died before its header was written")
        }
        let headers = scan.boxes.filter { $0.type == "moof" || $0 == initial }.map(\.start)
        let reader = try MovieReader(path: path)
        if !reader.isFragmented {
            // Finalised, perhaps by a run that died before hiding every fragment header.
            if movies.count > 1 { try hideFragmentHeaders(in: file, at: headers) }
            return .alreadyFinalised
        }

        // Keep whole moof+mdat pairs; cut everything after the last one.
        var end = initial.start + initial.size
        var fragments = 0
        var index = scan.boxes.firstIndex { $0 == initial }! + 1
        while index + 1 < scan.boxes.count, scan.boxes[index].type == "moof", scan.boxes[index + 1].type == "mdat" {
            end = scan.boxes[index + 1].start + scan.boxes[index + 1].size
            fragments += 1
            index += 2
        }
        try file.truncate(to: end)
        let kept = try MovieReader(path: path)
        guard kept.warnings.isEmpty else {
            throw MovieError.unreadable(path: path, reason: kept.warnings.joined(separator: "; "))
        }

        let tracks = kept.tracks.map(TrackLayout.init(recovering:))
        let timescale = tracks.first(where: \.isVideo)?.timescale ?? tracks.first?.timescale ?? 600
        let movie = MovieBoxes.movie(
            tracks: tracks, timescale: timescale, fragmented: false, creationTime: MovieBoxes.now)
        try file.write(movie, at: end)
        try file.sync()
        try hideFragmentHeaders(in: file, at: headers.filter { $0 < end })
        return .recovered(fragments: fragments, discardedBytes: originalSize - end)
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
