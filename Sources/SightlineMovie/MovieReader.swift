import SightlineCore

/// One sample of a track, in decode order.
package struct MovieSample: Sendable, Hashable {
    package var offset: UInt64
    package var size: UInt32
    /// Media ticks from the start of the track's media.
    package var decodeTime: Int64
    package var duration: UInt32
    package var compositionOffset: Int32
    package var isSync: Bool
}

/// A track as `MovieReader` finds it.
package struct MovieTrack: Sendable {
    package var id: UInt32
    /// The media handler: `vide`, `soun`, `meta` …
    package var mediaType: FourCC
    /// The sample entry's format: `avc1`, `mebx` …
    package var format: FourCC
    package var timescale: UInt32
    package var width: UInt32 = 0
    package var height: UInt32 = 0
    /// Tracks this one describes (`tref/cdsc`); empty for movie-wide metadata.
    package var describes: [UInt32] = []
    /// The key table, for `mebx` tracks.
    package var metadataFormat: MetadataTrackFormat?
    package var samples: [MovieSample] = []
    /// Media time shown at movie time 0: the first edit's media_time, less the empty edits
    /// before it (negative when the media starts later than the movie).
    package var editMediaTime: Int64 = 0
    /// How long the edit list shows the track, when it has one.
    package var editedDuration: MediaTime?
    /// How long the track is shown: its edit list's duration, or its media's without one.
    package var presentedDuration: MediaTime { editedDuration ?? mediaDuration }
    /// The whole sample-entry box, byte for byte.
    package var sampleEntry: [UInt8] = []
    /// The display matrix (`tkhd`): a b u c d v x y w.
    package var matrix: [Int32] = DisplayMatrix.identity
    /// How the matrix turns the track's frames for display, as an EXIF orientation (1
    /// upright … 8); 1 for a matrix that only scales or moves.
    package var orientation: Int { DisplayMatrix.exifOrientation(matrix) }

    /// The codec of a video track Sightline reads the samples of (`avc1`, `hvc1`; FFmpeg's
    /// `hev1` too, whose parameter sets may also be in-band).
    package var videoCodec: VideoCodec? {
        switch format {
        case "avc1": .h264
        case "hvc1", "hev1": .hevc
        default: nil
        }
    }

    /// The configuration record of such a track (`avcC`, `hvcC`): what its decoder is
    /// configured with.
    package var codecConfiguration: [UInt8]? {
        guard let videoCodec else { return nil }
        // An 8-byte header and 78 bytes of visual sample entry, then child boxes.
        var offset = 86
        while offset + 8 <= sampleEntry.count {
            let size = sampleEntry[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8, offset + size <= sampleEntry.count else { return nil }
            if sampleEntry[(offset + 4)..<(offset + 8)].elementsEqual(videoCodec.configurationBoxType.utf8) {
                return Array(sampleEntry[(offset + 8)..<(offset + size)])
            }
            offset += size
        }
        return nil
    }

    package var mediaDuration: MediaTime {
        MediaTime(value: samples.reduce(0) { $0 + Int64($1.duration) }, timescale: Int32(clamping: max(timescale, 1)))
    }

    /// Movie time of a sample's presentation: its media time less the edit's start.
    package func presentationTime(of sample: MovieSample) -> MediaTime {
        MediaTime(
            value: sample.decodeTime &+ Int64(sample.compositionOffset) &- editMediaTime,
            timescale: Int32(clamping: max(timescale, 1)))
    }
}

/// Reads QuickTime and ISO movies, classic or fragmented, ours and Apple's: tracks, sample
/// tables, and each metadata track's timed groups (the analogue of
/// `AVAssetReaderOutputMetadataAdaptor`).
///
/// Hostile input gives an error or a partial result with `warnings`, never a crash: every
/// size and count is checked against the bytes that hold it before anything is allocated.
package final class MovieReader {
    package let path: String
    package private(set) var tracks: [MovieTrack] = []
    /// Whether the samples came from movie fragments (a recording not finalised).
    package private(set) var isFragmented = false
    /// The top-level boxes, in file order.
    package private(set) var topLevelBoxes: [(type: FourCC, start: UInt64, size: UInt64)] = []
    /// Problems that did not stop reading: a truncated tail, a track that could not be read.
    package private(set) var warnings: [String] = []
    package let fileSize: UInt64

    /// More samples than this in one track is treated as a hostile file.
    package static let maximumSampleCount = 50_000_000
    private static let maximumHeaderSize: UInt64 = 512 << 20
    private let file: MovieFile

    package init(path: String) throws {
        self.path = path
        file = try MovieFile(path: path, mode: .read)
        fileSize = try file.size
        do {
            try read()
        } catch let error as MovieError {
            if case .io = error { throw error }
            throw MovieError.unreadable(path: path, reason: error.description)
        }
    }

    /// Reads a metadata track's timed groups one at a time, in order, like
    /// `AVAssetReaderOutputMetadataAdaptor.nextTimedMetadataGroup()`; NULL samples give empty
    /// groups ("nothing during this time").
    package func metadataGroupReader(track id: UInt32) throws -> MetadataGroupReader {
        guard let track = tracks.first(where: { $0.id == id }), track.metadataFormat != nil else {
            throw MovieError.invalidInput("\(path) has no metadata track \(id)")
        }
        return MetadataGroupReader(movie: self, track: track)
    }

    /// All of a metadata track's timed groups.
    package func metadataGroups(track id: UInt32) throws -> [TimedMetadataGroup] {
        let reader = try metadataGroupReader(track: id)
        var groups: [TimedMetadataGroup] = []
        while let group = try reader.next() { groups.append(group) }
        return groups
    }

    package func readSample(_ sample: MovieSample) throws -> [UInt8] {
        try file.read(Int(sample.size), at: sample.offset)
    }

    // MARK: Parsing

    private func read() throws {
        let scan = try file.topLevelBoxes()
        topLevelBoxes = scan.boxes
        if let damaged = scan.incompleteAt {
            warnings.append("the file ends inside a box at byte \(damaged) of \(fileSize): it was cut off")
        }
        let movies = topLevelBoxes.filter { $0.type == "moov" }
        guard !movies.isEmpty else {
            throw MovieError.malformed(
                topLevelBoxes.first?.type == "ftyp"
                    ? "no 'moov' box (cut off before its header was written)" : "not a QuickTime or MP4 file")
        }
        var chosen: (bytes: [UInt8], boxes: [Box], fragmented: Bool)?
        for movie in movies {
            let bytes = try loadBox(movie)
            let children = try Box.children(of: bytes, in: 8..<bytes.count)
            let fragmented = children.first("mvex") != nil
            // A finalised movie wins over a fragmented header left in place by a crash mid-finalise.
            if chosen == nil || (chosen!.fragmented && !fragmented) { chosen = (bytes, children, fragmented) }
        }
        guard let (bytes, children, fragmented) = chosen else { return }
        isFragmented = fragmented
        var movieTimescale: UInt32 = 0
        if let mvhd = children.first("mvhd") {
            var r = ByteReader(bytes, range: mvhd.payload)
            let (version, _) = try r.versionAndFlags()
            try r.skip(version == 1 ? 16 : 8)
            movieTimescale = try r.u32()
        }
        for trak in children.all("trak") {
            do {
                tracks.append(try parseTrack(bytes, trak, movieTimescale: movieTimescale))
            } catch {
                warnings.append("track at byte \(trak.start) of 'moov' skipped: \(error)")
            }
        }
        if fragmented {
            let defaults = try parseTrackExtends(bytes, children.first("mvex"))
            for fragment in topLevelBoxes where fragment.type == "moof" {
                do {
                    try parseFragment(try loadBox(fragment), at: fragment.start, defaults: defaults)
                } catch {
                    warnings.append("fragment at byte \(fragment.start) skipped: \(error)")
                    break
                }
            }
        }
    }

    private func loadBox(_ box: (type: FourCC, start: UInt64, size: UInt64)) throws -> [UInt8] {
        guard box.size <= Self.maximumHeaderSize else {
            throw MovieError.malformed(
                "'\(box.type)' at byte \(box.start) is \(box.size) bytes, too large for a header")
        }
        return try file.read(Int(box.size), at: box.start)
    }

    private func child(_ bytes: [UInt8], _ box: Box?, _ path: [FourCC]) throws -> Box? {
        var current = box
        for type in path {
            guard let parent = current else { return nil }
            current = try Box.children(of: bytes, in: parent.payload).first(type)
        }
        return current
    }

    private func parseTrack(_ bytes: [UInt8], _ trak: Box, movieTimescale: UInt32) throws -> MovieTrack {
        guard let tkhd = try child(bytes, trak, ["tkhd"]) else { throw MovieError.malformed("no 'tkhd'") }
        var r = ByteReader(bytes, range: tkhd.payload)
        let (version, _) = try r.versionAndFlags()
        try r.skip(version == 1 ? 16 : 8)
        let id = try r.u32()
        try r.skip(version == 1 ? 12 : 8)  // reserved, duration
        try r.skip(16)  // reserved, layer, group, volume, reserved
        let matrix = try (0..<9).map { _ in try r.i32() }
        let width = try r.u32() >> 16
        let height = try r.u32() >> 16

        guard let mdia = try child(bytes, trak, ["mdia"]), let mdhd = try child(bytes, mdia, ["mdhd"]) else {
            throw MovieError.malformed("track \(id) has no 'mdia/mdhd'")
        }
        r = ByteReader(bytes, range: mdhd.payload)
        let (mdhdVersion, _) = try r.versionAndFlags()
        try r.skip(mdhdVersion == 1 ? 16 : 8)
        let timescale = try r.u32()
        guard timescale > 0 else { throw MovieError.malformed("track \(id) has timescale 0") }

        var mediaType: FourCC = "    "
        if let hdlr = try child(bytes, mdia, ["hdlr"]) {
            r = ByteReader(bytes, range: hdlr.payload)
            try r.skip(8)
            mediaType = try r.fourCC()
        }
        var track = MovieTrack(
            id: id, mediaType: mediaType, format: "    ", timescale: timescale, width: width, height: height)
        track.matrix = matrix
        if let cdsc = try child(bytes, trak, ["tref", "cdsc"]) {
            r = ByteReader(bytes, range: cdsc.payload)
            while r.remaining >= 4 { track.describes.append(try r.u32()) }
        }
        if let elst = try child(bytes, trak, ["edts", "elst"]) {
            (track.editMediaTime, track.editedDuration) = try Self.editList(
                ByteReader(bytes, range: elst.payload), timescale: timescale, movieTimescale: movieTimescale)
        }
        guard let stbl = try child(bytes, mdia, ["minf", "stbl"]) else {
            throw MovieError.malformed("track \(id) has no 'stbl'")
        }
        let tables = try Box.children(of: bytes, in: stbl.payload)
        if let stsd = tables.first("stsd") {
            r = ByteReader(bytes, range: stsd.payload)
            try r.skip(8)
            if let entry = try Box.children(of: bytes, in: r.position..<stsd.end).first {
                track.format = entry.type
                track.sampleEntry = Array(bytes[entry.start..<entry.end])
                if entry.type == "mebx" {
                    track.metadataFormat = try MetadataCoding.parseSampleEntry(
                        bytes, payload: entry.payload, describesVideo: !track.describes.isEmpty)
                }
            }
        }
        track.samples = try SampleTableParser(bytes: bytes, boxes: tables, fileSize: fileSize).samples()
        return track
    }

    /// Where an edit list starts showing the media, in the track's ticks: its first media
    /// edit's time, less the empty edits before it; and how long the edits show, in the
    /// movie's ticks (what players and ffprobe call the track's duration). At most 16 edits
    /// are read.
    private static func editList(
        _ elst: ByteReader, timescale: UInt32, movieTimescale: UInt32
    ) throws -> (mediaTime: Int64, duration: MediaTime?) {
        var r = elst
        let (version, _) = try r.versionAndFlags()
        var first: Int64?
        var empty: UInt64 = 0  // movie ticks of empty edits before the first media
        var total: UInt64 = 0
        for _ in 0..<min(try r.u32(), 16) {
            let duration: UInt64
            let mediaTime: Int64
            if version == 1 {
                duration = try r.u64()
                mediaTime = try r.i64()
            } else {
                duration = UInt64(try r.u32())
                mediaTime = Int64(try r.i32())
            }
            try r.skip(4)
            total = total.addingReportingOverflow(duration).partialValue
            if first != nil { continue }
            if mediaTime >= 0 {
                first = mediaTime
            } else {
                empty &+= duration  // -1 is an empty edit: nothing shown meanwhile
            }
        }
        let delay =
            movieTimescale > 0
            ? Int64(min((Double(empty) * Double(timescale) / Double(movieTimescale)).rounded(), 1e15)) : 0
        let duration =
            movieTimescale > 0 && total > 0 && total < UInt64(Int64.max)
            ? MediaTime(value: Int64(total), timescale: Int32(clamping: movieTimescale)) : nil
        return ((first ?? 0) &- delay, duration)
    }

    private struct TrackDefaults {
        var duration: UInt32 = 0
        var size: UInt32 = 0
        var flags: UInt32 = 0
    }

    private func parseTrackExtends(_ bytes: [UInt8], _ mvex: Box?) throws -> [UInt32: TrackDefaults] {
        var defaults: [UInt32: TrackDefaults] = [:]
        guard let mvex else { return defaults }
        for trex in try Box.children(of: bytes, in: mvex.payload).all("trex") {
            var r = ByteReader(bytes, range: trex.payload)
            try r.skip(4)
            let id = try r.u32()
            try r.skip(4)
            defaults[id] = TrackDefaults(duration: try r.u32(), size: try r.u32(), flags: try r.u32())
        }
        return defaults
    }

    /// Adds a fragment's samples to the tracks, all or none.
    private func parseFragment(_ bytes: [UInt8], at start: UInt64, defaults: [UInt32: TrackDefaults]) throws {
        var parsed = tracks
        try parseFragment(bytes, at: start, defaults: defaults, into: &parsed)
        tracks = parsed
    }

    private func parseFragment(
        _ bytes: [UInt8], at start: UInt64, defaults: [UInt32: TrackDefaults], into tracks: inout [MovieTrack]
    ) throws {
        for traf in try Box.children(of: bytes, in: 8..<bytes.count).all("traf") {
            let children = try Box.children(of: bytes, in: traf.payload)
            guard let tfhd = children.first("tfhd") else { throw MovieError.malformed("'traf' without 'tfhd'") }
            var r = ByteReader(bytes, range: tfhd.payload)
            let (_, flags) = try r.versionAndFlags()
            let id = try r.u32()
            guard let index = tracks.firstIndex(where: { $0.id == id }) else { continue }
            var base = start
            var trackDefaults = defaults[id] ?? TrackDefaults()
            if flags & 0x1 != 0 { base = try r.u64() }
            if flags & 0x2 != 0 { try r.skip(4) }
            if flags & 0x8 != 0 { trackDefaults.duration = try r.u32() }
            if flags & 0x10 != 0 { trackDefaults.size = try r.u32() }
            if flags & 0x20 != 0 { trackDefaults.flags = try r.u32() }
            var decodeTime = tracks[index].samples.last.map { $0.decodeTime &+ Int64($0.duration) } ?? 0
            if let tfdt = children.first("tfdt") {
                r = ByteReader(bytes, range: tfdt.payload)
                let (version, _) = try r.versionAndFlags()
                decodeTime = version == 1 ? Int64(clamping: try r.u64()) : Int64(try r.u32())
            }
            for trun in children.all("trun") {
                try parseRun(
                    ByteReader(bytes, range: trun.payload), base: base, defaults: trackDefaults,
                    decodeTime: &decodeTime, into: &tracks[index])
            }
        }
    }

    /// One `trun`: its samples, from `base` (or its own data offset) and `decodeTime` on,
    /// each field the run leaves out taken from `defaults`.
    private func parseRun(
        _ trun: ByteReader, base: UInt64, defaults: TrackDefaults, decodeTime: inout Int64, into track: inout MovieTrack
    ) throws {
        var r = trun
        let id = track.id
        let (version, runFlags) = try r.versionAndFlags()
        let fieldsPerSample = [0x100, 0x200, 0x400, 0x800].filter { runFlags & $0 != 0 }.count
        let declared = try r.u32()
        var offset = base
        if runFlags & 0x1 != 0 {
            let signed = Int64(clamping: base) + Int64(try r.i32())
            guard signed >= 0 else {
                throw MovieError.malformed("track \(id) has a sample outside the file at byte \(signed)")
            }
            offset = UInt64(signed)
        }
        let firstFlags = runFlags & 0x4 != 0 ? try r.u32() : nil
        let count =
            fieldsPerSample > 0 ? try r.checkEntries(declared, size: 4 * fieldsPerSample, in: "trun") : Int(declared)
        guard track.samples.count + count <= Self.maximumSampleCount else {
            throw MovieError.malformed("track \(id) declares more than \(Self.maximumSampleCount) samples")
        }
        for sampleIndex in 0..<count {
            let duration = runFlags & 0x100 != 0 ? try r.u32() : defaults.duration
            let size = runFlags & 0x200 != 0 ? try r.u32() : defaults.size
            var sampleFlags = runFlags & 0x400 != 0 ? try r.u32() : defaults.flags
            if sampleIndex == 0, let firstFlags { sampleFlags = firstFlags }
            let cto: Int32 = runFlags & 0x800 != 0 ? (version == 0 ? Int32(clamping: try r.u32()) : try r.i32()) : 0
            guard size > 0, offset <= fileSize, UInt64(size) <= fileSize - offset else {
                throw MovieError.malformed("track \(id) has a sample outside the file at byte \(offset)")
            }
            let (nextDecodeTime, overflow) = decodeTime.addingReportingOverflow(Int64(duration))
            guard !overflow else { throw MovieError.malformed("track \(id) has decode times past 2^63") }
            track.samples.append(
                MovieSample(
                    offset: offset, size: size, decodeTime: decodeTime, duration: duration, compositionOffset: cto,
                    isSync: sampleFlags & 0x0001_0000 == 0))
            offset += UInt64(size)
            decodeTime = nextDecodeTime
        }
    }
}

/// Decodes one metadata track's samples into groups, in order.
package final class MetadataGroupReader {
    private let movie: MovieReader
    private let track: MovieTrack
    private let format: MetadataTrackFormat
    private var index = 0

    init(movie: MovieReader, track: MovieTrack) {
        self.movie = movie
        self.track = track
        format = track.metadataFormat!
    }

    /// The next group, or nil after the last.
    package func next() throws -> TimedMetadataGroup? {
        guard index < track.samples.count else { return nil }
        let sample = track.samples[index]
        index += 1
        let bytes = try movie.readSample(sample)
        return TimedMetadataGroup(
            time: track.presentationTime(of: sample),
            duration: MediaTime(value: Int64(sample.duration), timescale: Int32(clamping: max(track.timescale, 1))),
            items: MetadataCoding.items(in: bytes, range: bytes.indices, format: format))
    }
}

/// Expands `stts`, `ctts`, `stss`, `stsc`, `stsz` and `stco`/`co64` into samples.
private struct SampleTableParser {
    let bytes: [UInt8]
    let boxes: [Box]
    let fileSize: UInt64

    private func entries(_ type: FourCC, fields: Int) throws -> [[UInt32]] {
        guard let box = boxes.first(type) else { return [] }
        var r = ByteReader(bytes, range: box.payload)
        try r.skip(4)
        let count = try r.checkEntries(try r.u32(), size: 4 * fields, in: type)
        return try (0..<count).map { _ in try (0..<fields).map { _ in try r.u32() } }
    }

    func samples() throws -> [MovieSample] {
        let sizes = try sampleSizes()
        guard !sizes.isEmpty else { return [] }
        let offsets = try sampleOffsets(sizes: sizes)
        let count = offsets.count

        // Times.
        var durations: [UInt32] = []
        durations.reserveCapacity(count)
        for run in try entries("stts", fields: 2) where durations.count < count {
            durations.append(contentsOf: repeatElement(run[1], count: min(Int(run[0]), count - durations.count)))
        }
        while durations.count < count { durations.append(durations.last ?? 0) }
        var offsetsInTime: [Int32] = []
        for run in try entries("ctts", fields: 2) where offsetsInTime.count < count {
            offsetsInTime.append(
                contentsOf: repeatElement(
                    Int32(bitPattern: run[1]), count: min(Int(run[0]), count - offsetsInTime.count)))
        }
        var sync = [Bool](repeating: boxes.first("stss") == nil, count: count)
        for entry in try entries("stss", fields: 1) where entry[0] >= 1 && Int(entry[0]) <= count {
            sync[Int(entry[0]) - 1] = true
        }

        var samples: [MovieSample] = []
        samples.reserveCapacity(count)
        var decodeTime: Int64 = 0
        for index in 0..<count {
            guard sizes[index] > 0, offsets[index] <= fileSize, UInt64(sizes[index]) <= fileSize - offsets[index] else {
                break
            }
            samples.append(
                MovieSample(
                    offset: offsets[index], size: sizes[index], decodeTime: decodeTime, duration: durations[index],
                    compositionOffset: index < offsetsInTime.count ? offsetsInTime[index] : 0, isSync: sync[index]))
            decodeTime += Int64(durations[index])
        }
        return samples
    }

    /// Each sample's size (`stsz`).
    private func sampleSizes() throws -> [UInt32] {
        var sizes: [UInt32] = []
        if let stsz = boxes.first("stsz") {
            var r = ByteReader(bytes, range: stsz.payload)
            try r.skip(4)
            let constant = try r.u32()
            let declared = try r.u32()
            if constant == 0 {
                let count = try r.checkEntries(declared, size: 4, in: "stsz")
                sizes = try (0..<count).map { _ in try r.u32() }
            } else {
                guard UInt64(declared) * UInt64(constant) <= fileSize, Int(declared) <= MovieReader.maximumSampleCount
                else {
                    throw MovieError.malformed(
                        "'stsz' declares \(declared) samples of \(constant) bytes, more than the file holds")
                }
                sizes = Array(repeating: constant, count: Int(declared))
            }
        }
        return sizes
    }

    /// Where each sample starts: its chunk's offset (`stco`, `co64`) and the sizes of the
    /// samples before it in the chunk (`stsc` says how many a chunk has). Samples beyond the
    /// chunks are left out.
    private func sampleOffsets(sizes: [UInt32]) throws -> [UInt64] {
        var chunkOffsets: [UInt64] = try entries("stco", fields: 1).map { UInt64($0[0]) }
        if chunkOffsets.isEmpty, let co64 = boxes.first("co64") {
            var r = ByteReader(bytes, range: co64.payload)
            try r.skip(4)
            let count = try r.checkEntries(try r.u32(), size: 8, in: "co64")
            chunkOffsets = try (0..<count).map { _ in try r.u64() }
        }
        let chunkRuns = try entries("stsc", fields: 3)

        // Offsets: walk chunks, each with the samples-per-chunk of the stsc run it is in.
        var offsets: [UInt64] = []
        offsets.reserveCapacity(sizes.count)
        var runIndex = 0
        for (chunk, chunkOffset) in chunkOffsets.enumerated() where offsets.count < sizes.count {
            while runIndex + 1 < chunkRuns.count, Int(chunkRuns[runIndex + 1][0]) <= chunk + 1 { runIndex += 1 }
            guard runIndex < chunkRuns.count else { break }
            var offset = chunkOffset
            for _ in 0..<min(Int(chunkRuns[runIndex][1]), sizes.count - offsets.count) {
                offsets.append(offset)
                offset = offset.addingReportingOverflow(UInt64(sizes[offsets.count - 1])).partialValue
            }
        }
        return offsets
    }
}
