import Glibc
import SightlineCore

/// What one track of a movie holds: enough to write its `trak` box, for a fresh recording,
/// a finalised one, or one rebuilt from fragments after a crash.
struct TrackLayout {
    var id: UInt32
    /// `vide` or `meta`.
    var handler: FourCC
    var timescale: UInt32
    /// The whole sample-entry box (`avc1…` or `mebx…`).
    var sampleEntry: [UInt8]
    var width: UInt32 = 0
    var height: UInt32 = 0
    /// Tracks this one describes (`tref/cdsc`).
    var describes: [UInt32] = []
    /// Movie ticks of nothing before the media starts (an empty edit): a sound track that
    /// starts after the video.
    var emptyEditDuration: UInt64 = 0
    /// Media time shown at movie time 0, or where the empty edit ends (the edit list's
    /// media_time).
    var editMediaTime: Int64 = 0
    /// How much media the edit shows, in the track's ticks; nil: all of it from
    /// `editMediaTime` on.
    var editDuration: UInt64?
    /// The display matrix (`tkhd`): a b u c d v x y w, 16.16 fixed point but u, v, w (2.30).
    var matrix = DisplayMatrix.identity
    var table = SampleTable()

    var isVideo: Bool { handler == "vide" }
    var isMetadata: Bool { handler == "meta" }
    var isSound: Bool { handler == "soun" }

    /// Shows the track in step with the video: `lead` (in the track's ticks) is how much of
    /// its media comes before the video's first frame; a lead is cut by the edit, a lag
    /// waited out with an empty edit.
    mutating func align(lead: Int64, movieTimescale: Int32) {
        editMediaTime = max(lead, 0)
        emptyEditDuration = UInt64(
            MediaTime(value: max(-lead, 0), timescale: Int32(clamping: timescale)).converted(to: movieTimescale).value)
    }
}

/// A track's samples in decode order, grouped into chunks (one per fragment).
struct SampleTable {
    var sizes: [UInt32] = []
    var durations: [UInt32] = []
    var compositionOffsets: [UInt32] = []
    var isSync: [Bool] = []
    var chunks: [(offset: UInt64, count: UInt32)] = []

    var duration: UInt64 { durations.reduce(0) { $0 + UInt64($1) } }

    mutating func append(size: UInt32, duration: UInt32, compositionOffset: UInt32, isSync: Bool) {
        sizes.append(size)
        durations.append(duration)
        compositionOffsets.append(compositionOffset)
        self.isSync.append(isSync)
    }
}

/// One fragment's samples for one track, as its `traf` describes them.
struct FragmentRun {
    var trackID: UInt32
    var baseDecodeTime: UInt64
    /// Offset of the first sample from the start of the `moof`, which `trun` holds in 32
    /// bits; past 1 GiB the run gives the file offset in `tfhd` (`absoluteOffset`) instead.
    var dataOffset: Int
    var absoluteOffset: UInt64?
    var sizes: [UInt32]
    var durations: [UInt32]
    var compositionOffsets: [UInt32]
    var isSync: [Bool]
}

/// Builds the boxes that frame the samples: file type, movie headers, fragments.
enum MovieBoxes {
    /// `ftyp` (and QuickTime's `wide`, which leaves room for a 64-bit `mdat` header).
    static func fileType(_ brand: MovieWriter.Brand) -> [UInt8] {
        boxBytes { w in
            switch brand {
            case .quickTime:
                w.box("ftyp") {
                    $0.fourCC("qt  ")
                    $0.u32(0)
                    $0.fourCC("qt  ")
                }
                w.box("wide") { _ in }
            case .mp4:
                w.box("ftyp") {
                    $0.fourCC("isom")
                    $0.u32(0x200)
                    for compatible: FourCC in ["isom", "iso2", "avc1", "mp41"] { $0.fourCC(compatible) }
                }
                w.box("free") { _ in }
            }
        }
    }

    /// Seconds since 1904-01-01, QuickTime's epoch.
    static var now: UInt64 { UInt64(time(nil)) + 2_082_844_800 }

    /// `moov` for `tracks`: with `mvex` and empty tables while recording fragments, or with
    /// full sample tables once finalised.
    static func movie(tracks: [TrackLayout], timescale: UInt32, fragmented: Bool, creationTime: UInt64) -> [UInt8] {
        boxBytes { w in
            w.box("moov") { w in
                let duration = tracks.map { movieDuration(of: $0, movieTimescale: timescale) }.max() ?? 0
                let wide = duration > UInt32.max || creationTime > UInt32.max
                w.fullBox("mvhd", version: wide ? 1 : 0, flags: 0) { w in
                    times(&w, wide: wide, creation: creationTime)
                    w.u32(timescale)
                    if wide { w.u64(duration) } else { w.u32(UInt32(duration)) }
                    w.u32(0x0001_0000)  // rate 1.0
                    w.u16(0x0100)  // volume 1.0
                    w.zeros(10)
                    matrix(&w)
                    w.zeros(24)  // QuickTime preview, poster, selection and current times
                    w.u32((tracks.map(\.id).max() ?? 0) + 1)
                }
                for track in tracks { trak(&w, track, movieTimescale: timescale, creationTime: creationTime) }
                if fragmented {
                    w.box("mvex") { w in
                        for track in tracks {
                            w.fullBox("trex", version: 0, flags: 0) { w in
                                w.u32(track.id)
                                w.u32(1)
                                w.zeros(12)
                            }
                        }
                    }
                }
            }
        }
    }

    static func movieDuration(of track: TrackLayout, movieTimescale: UInt32) -> UInt64 {
        mediaEditDuration(of: track, movieTimescale: movieTimescale) + track.emptyEditDuration
    }

    /// How long the edit that shows media lasts, in movie ticks.
    static func mediaEditDuration(of track: TrackLayout, movieTimescale: UInt32) -> UInt64 {
        let media = track.editDuration ?? track.table.duration
        guard track.timescale != movieTimescale, track.timescale > 0 else { return media }
        return UInt64((Double(media) * Double(movieTimescale) / Double(track.timescale)).rounded())
    }

    private static func times(_ w: inout ByteWriter, wide: Bool, creation: UInt64) {
        if wide {
            w.u64(creation)
            w.u64(creation)
        } else {
            w.u32(UInt32(creation))
            w.u32(UInt32(creation))
        }
    }

    private static func matrix(_ w: inout ByteWriter, _ values: [Int32] = DisplayMatrix.identity) {
        for value in values { w.i32(value) }
    }

    private static func trak(_ w: inout ByteWriter, _ track: TrackLayout, movieTimescale: UInt32, creationTime: UInt64)
    {
        let duration = movieDuration(of: track, movieTimescale: movieTimescale)
        let mediaDuration = track.table.duration
        let wide = duration > UInt32.max || mediaDuration > UInt32.max || creationTime > UInt32.max
        w.box("trak") { w in
            // Metadata tracks carry iOS's flags: enabled, in movie, in preview, in poster.
            w.fullBox("tkhd", version: wide ? 1 : 0, flags: track.isMetadata ? 0xF : 0x3) { w in
                times(&w, wide: wide, creation: creationTime)
                w.u32(track.id)
                w.u32(0)
                if wide { w.u64(duration) } else { w.u32(UInt32(duration)) }
                w.zeros(8)
                w.zeros(4)  // layer, alternate group
                w.u16(track.isSound ? 0x0100 : 0)  // volume
                w.u16(0)
                matrix(&w, track.matrix)
                w.u32(track.width << 16)
                w.u32(track.height << 16)
            }
            if duration > 0 { editList(&w, track, duration: duration, movieTimescale: movieTimescale) }
            if !track.describes.isEmpty {
                w.box("tref") { w in w.box("cdsc") { w in for id in track.describes { w.u32(id) } } }
            }
            w.box("mdia") { w in
                w.fullBox("mdhd", version: wide ? 1 : 0, flags: 0) { w in
                    times(&w, wide: wide, creation: creationTime)
                    w.u32(track.timescale)
                    if wide { w.u64(mediaDuration) } else { w.u32(UInt32(mediaDuration)) }
                    w.u16(0x55C4)  // 'und'
                    w.u16(0)
                }
                handler(
                    &w, type: "mhlr", subtype: track.handler,
                    name: track.isVideo
                        ? "Core Media Video" : track.isSound ? "Core Media Audio" : "Core Media Metadata")
                mediaInformation(&w, track)
            }
        }
    }

    /// The edit list: an empty edit first when the track starts after the movie, then its
    /// media from `editMediaTime` for as long as it is shown.
    private static func editList(_ w: inout ByteWriter, _ track: TrackLayout, duration: UInt64, movieTimescale: UInt32)
    {
        w.box("edts") { w in
            let wideEdit = duration > UInt32.max || Int32(exactly: track.editMediaTime) == nil
            let edits: [(duration: UInt64, mediaTime: Int64)] =
                (track.emptyEditDuration > 0 ? [(track.emptyEditDuration, Int64(-1))] : [])
                + [(mediaEditDuration(of: track, movieTimescale: movieTimescale), track.editMediaTime)]
            w.fullBox("elst", version: wideEdit ? 1 : 0, flags: 0) { w in
                w.u32(UInt32(edits.count))
                for edit in edits {
                    if wideEdit {
                        w.u64(edit.duration)
                        w.i64(edit.mediaTime)
                    } else {
                        w.u32(UInt32(edit.duration))
                        w.i32(Int32(edit.mediaTime))
                    }
                    w.u32(0x0001_0000)
                }
            }
        }
    }

    /// `minf`: the media's header, its data reference (in this file) and its sample table.
    private static func mediaInformation(_ w: inout ByteWriter, _ track: TrackLayout) {
        w.box("minf") { w in
            if track.isVideo {
                w.fullBox("vmhd", version: 0, flags: 1) { $0.zeros(8) }
            } else if track.isSound {
                w.fullBox("smhd", version: 0, flags: 0) { $0.zeros(4) }  // balance, reserved
            } else {
                w.box("gmhd") { w in
                    w.fullBox("gmin", version: 0, flags: 0) { w in
                        w.u16(0x40)
                        for _ in 0..<3 { w.u16(0x8000) }
                        w.zeros(4)
                    }
                }
            }
            handler(&w, type: "dhlr", subtype: "alis", name: "Core Media Data Handler")
            w.box("dinf") { w in
                w.fullBox("dref", version: 0, flags: 0) { w in
                    w.u32(1)
                    w.fullBox("alis", version: 0, flags: 1) { _ in }
                }
            }
            sampleTable(&w, track)
        }
    }

    private static func handler(_ w: inout ByteWriter, type: FourCC, subtype: FourCC, name: String) {
        w.fullBox("hdlr", version: 0, flags: 0) { w in
            w.fourCC(type)
            w.fourCC(subtype)
            w.fourCC("appl")
            w.u32(subtype == "alis" ? 0 : 1)
            w.u32(0)
            w.pascalString(name)
        }
    }

    private static func sampleTable(_ w: inout ByteWriter, _ track: TrackLayout) {
        let table = track.table
        w.box("stbl") { w in
            w.fullBox("stsd", version: 0, flags: 0) {
                $0.u32(1)
                $0.append(track.sampleEntry)
            }
            runLengthTable(&w, "stts", table.durations)
            if table.compositionOffsets.contains(where: { $0 != 0 }) {
                runLengthTable(&w, "ctts", table.compositionOffsets)
            }
            // No stss means every sample is a sync sample, as for all metadata.
            if track.isVideo, table.isSync.contains(false) {
                let sync = table.isSync.indices.filter { table.isSync[$0] }
                w.fullBox("stss", version: 0, flags: 0) { w in
                    w.u32(UInt32(sync.count))
                    for index in sync { w.u32(UInt32(index + 1)) }
                }
            }
            let chunkRuns = runs(table.chunks.map(\.count))
            w.fullBox("stsc", version: 0, flags: 0) { w in
                w.u32(UInt32(chunkRuns.count))
                var firstChunk: UInt32 = 1
                for run in chunkRuns {
                    w.u32(firstChunk)
                    w.u32(run.value)
                    w.u32(1)
                    firstChunk += run.count
                }
            }
            w.fullBox("stsz", version: 0, flags: 0) { w in
                w.u32(0)
                w.u32(UInt32(table.sizes.count))
                for size in table.sizes { w.u32(size) }
            }
            if table.chunks.contains(where: { $0.offset > UInt32.max }) {
                w.fullBox("co64", version: 0, flags: 0) { w in
                    w.u32(UInt32(table.chunks.count))
                    for chunk in table.chunks { w.u64(chunk.offset) }
                }
            } else {
                w.fullBox("stco", version: 0, flags: 0) { w in
                    w.u32(UInt32(table.chunks.count))
                    for chunk in table.chunks { w.u32(UInt32(chunk.offset)) }
                }
            }
        }
    }

    /// A `(count, value)` table: `stts` (durations) and `ctts` (composition offsets).
    private static func runLengthTable(_ w: inout ByteWriter, _ type: FourCC, _ values: [UInt32]) {
        let valueRuns = runs(values)
        w.fullBox(type, version: 0, flags: 0) { w in
            w.u32(UInt32(valueRuns.count))
            for run in valueRuns {
                w.u32(run.count)
                w.u32(run.value)
            }
        }
    }

    /// Run-length encoding, as stts, ctts and stsc want.
    private static func runs(_ values: [UInt32]) -> [(count: UInt32, value: UInt32)] {
        var result: [(count: UInt32, value: UInt32)] = []
        for value in values {
            if let last = result.last, last.value == value {
                result[result.count - 1].count += 1
            } else {
                result.append((1, value))
            }
        }
        return result
    }

    /// `moof` for one fragment. Sample data offsets are relative to the `moof`'s first byte
    /// (default-base-is-moof), so the caller fills them in knowing the `moof`'s size: this
    /// returns the size a `moof` for `runs` will have.
    static func fragmentSize(runs: [FragmentRun]) -> Int { fragment(sequence: 0, runs: runs).count }

    static func fragment(sequence: UInt32, runs: [FragmentRun]) -> [UInt8] {
        boxBytes { w in
            w.box("moof") { w in
                w.fullBox("mfhd", version: 0, flags: 0) { $0.u32(sequence) }
                for run in runs {
                    w.box("traf") { w in
                        if let absolute = run.absoluteOffset {
                            w.fullBox("tfhd", version: 0, flags: 0x1) {
                                $0.u32(run.trackID)
                                $0.u64(absolute)
                            }
                        } else {
                            w.fullBox("tfhd", version: 0, flags: 0x02_0000) { $0.u32(run.trackID) }
                        }
                        w.fullBox("tfdt", version: 1, flags: 0) { $0.u64(run.baseDecodeTime) }
                        let hasOffsets = run.compositionOffsets.contains { $0 != 0 }
                        let flags: UInt32 = 0x1 | 0x100 | 0x200 | 0x400 | (hasOffsets ? 0x800 : 0)
                        w.fullBox("trun", version: 0, flags: flags) { w in
                            w.u32(UInt32(run.sizes.count))
                            w.i32(run.absoluteOffset == nil ? Int32(run.dataOffset) : 0)
                            for index in run.sizes.indices {
                                w.u32(run.durations[index])
                                w.u32(run.sizes[index])
                                w.u32(run.isSync[index] ? 0x0200_0000 : 0x0101_0000)
                                if hasOffsets { w.u32(run.compositionOffsets[index]) }
                            }
                        }
                    }
                }
            }
        }
    }

    /// An `mdat` header for `payloadSize` bytes, 64-bit when it must be.
    static func mediaDataHeader(payloadSize: UInt64) -> [UInt8] {
        boxBytes { w in
            if payloadSize + 8 <= UInt32.max {
                w.u32(UInt32(payloadSize + 8))
                w.fourCC("mdat")
            } else {
                w.u32(1)
                w.fourCC("mdat")
                w.u64(payloadSize + 16)
            }
        }
    }
}
