import SightlineCapture
import SightlineCore
import SightlineMovie

/// A JPEG of one frame of a recording with its faces and codes drawn in, as the frame is
/// stored (the player turns it by the orientation track; a snapshot does not):
/// `/api/recordings/<name>/snapshot?t=SECONDS`.
///
/// The frame is decoded from the nearest key frame at or before it with libavcodec, the
/// boxes are drawn into the decoded picture, and the result is scaled to `maximumWidth`
/// and encoded with libavcodec's JPEG encoder.
enum Snapshot {
    /// Box colours in limited-range YCbCr (BT.601): the player's green for faces, amber
    /// for codes.
    static let faceColour: (y: UInt8, u: UInt8, v: UInt8) = (145, 54, 34)
    static let codeColour: (y: UInt8, u: UInt8, v: UInt8) = (170, 41, 165)

    static func jpeg(path: String, at seconds: Double, metadata: PlayerMetadata, maximumWidth: Int?) throws -> [UInt8] {
        let movie = try MovieReader(path: path)
        guard let track = movie.tracks.first(where: { $0.mediaType == "vide" && $0.format == "avc1" }),
            !track.samples.isEmpty, let avcC = avcConfiguration(in: track.sampleEntry)
        else {
            throw RecordingError.unreadable(name: metadata.name, reason: "it has no H.264 video to take a frame from")
        }

        // The frame shown at `seconds`: the last one presented at or before it.
        let times = track.samples.map { track.presentationTime(of: $0).value }
        let wanted = MediaTime(seconds: max(0, seconds), timescale: Int32(clamping: track.timescale)).value
        let target =
            times.indices.filter { times[$0] <= wanted }.max { times[$0] < times[$1] }
            ?? times.indices.min { times[$0] < times[$1] }!
        let first = track.samples[...target].lastIndex(where: \.isSync) ?? 0
        // Frames shown before the target may be decoded after it (B-frames): decode on to
        // the next key frame.
        let last = track.samples[(target + 1)...].firstIndex(where: \.isSync).map { $0 - 1 } ?? track.samples.count - 1
        let decoder = try H264SampleDecoder(avcConfiguration: avcC)
        let picture = try decoder.decode(
            samples: try track.samples[first...last].map(movie.readSample),
            presentationTimes: Array(times[first...last]), wanted: times[target])

        let shownAt = Double(times[target]) / Double(track.timescale)
        let thickness = max(2, picture.width / 240)
        for face in metadata.faces.active(at: shownAt) ?? [] {
            drawBox(face.bounds, colour: faceColour, thickness: thickness, on: picture)
        }
        for code in metadata.codes.active(at: shownAt) ?? [] {
            drawBox(code.bounds, colour: codeColour, thickness: thickness, on: picture)
        }
        let width = min(maximumWidth ?? picture.width, picture.width)
        let snapshotter = try FrameSnapshotter(
            format: .jpeg, maximumWidth: max(16, width), maximumHeight: max(16, picture.height), jpegQuality: 3)
        return try snapshotter.snapshot(picture).bytes
    }

    /// The `avcC` record inside an `avc1` sample entry.
    static func avcConfiguration(in entry: [UInt8]) -> [UInt8]? {
        // avc1: 8-byte header and 78 bytes of visual sample entry, then child boxes.
        var offset = 86
        while offset + 8 <= entry.count {
            let size =
                Int(entry[offset]) << 24 | Int(entry[offset + 1]) << 16 | Int(entry[offset + 2]) << 8
                | Int(entry[offset + 3])
            guard size >= 8, offset + size <= entry.count else { return nil }
            if entry[(offset + 4)..<(offset + 8)].elementsEqual("avcC".utf8) {
                return Array(entry[(offset + 8)..<(offset + size)])
            }
            offset += size
        }
        return nil
    }

    /// Draws the outline of `bounds` (normalised) into a yuv420p picture this code owns.
    static func drawBox(
        _ bounds: [Double], colour: (y: UInt8, u: UInt8, v: UInt8), thickness: Int, on picture: PixelBuffer
    ) {
        guard picture.format == .yuv420p, bounds.count == 4 else { return }
        let (width, height) = (picture.width, picture.height)
        let left = Int((bounds[0] * Double(width)).rounded())
        let top = Int((bounds[1] * Double(height)).rounded())
        let right = Int(((bounds[0] + bounds[2]) * Double(width)).rounded()) - 1
        let bottom = Int(((bounds[1] + bounds[3]) * Double(height)).rounded()) - 1
        func fill(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) {
            let (x0, x1) = (max(0, x0), min(width - 1, x1))
            let (y0, y1) = (max(0, y0), min(height - 1, y1))
            guard x0 <= x1, y0 <= y1 else { return }
            for (index, value) in [colour.y, colour.u, colour.v].enumerated() {
                let plane = picture.planes[index]
                let shift = index == 0 ? 0 : 1
                let base = UnsafeMutableRawPointer(mutating: plane.baseAddress)
                for row in (y0 >> shift)...(y1 >> shift) {
                    (base + row * plane.bytesPerRow + (x0 >> shift)).initializeMemory(
                        as: UInt8.self, repeating: value, count: (x1 >> shift) - (x0 >> shift) + 1)
                }
            }
        }
        fill(left, top, right, top + thickness - 1)
        fill(left, bottom - thickness + 1, right, bottom)
        fill(left, top, left + thickness - 1, bottom)
        fill(right - thickness + 1, top, right, bottom)
    }
}

extension Array {
    /// The value of the group shown at `seconds` in a list of timed groups, as the player
    /// finds it: the last group starting at or before then, unless its duration has run out.
    func active<Value>(at seconds: Double) -> Value? where Element == PlayerMetadata.Group<Value> {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle].t <= seconds + 1e-6 { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let group = self[low - 1]
        if let duration = group.d, seconds >= group.t + duration - 1e-6 { return nil }
        return group.v
    }
}
