import SightlineCore
import SightlineMovie

/// A source's own H.264 from the bus, as the fragmented MP4 the grid plays through Media
/// Source Extensions: the stream's initialization segment, and the fragments since its last
/// key frame, so a viewer who joins starts playing at once.
///
/// A new stream starts when the parameter sets or the picture size change, or time goes back
/// (the source started again): viewers of the old one must start again with its
/// initialization segment.
struct LiveVideo {
    private(set) var movie: StreamingMovie?
    private var parameterSets: [UInt8] = []
    /// The fragments from the last key frame on, up to `maximumHeld` bytes.
    private(set) var sinceKeyFrame: [[UInt8]] = []
    private var heldBytes = 0
    /// The source started again: viewers of the stream before must start again too.
    private var viewersMustRestart = false

    static let maximumHeld = 16 << 20

    /// What adding one `video` message did.
    struct Added {
        /// The viewers' stream ended: a new one starts with this message.
        var restarted = false
        var keyFrame = false
        var fragment: [UInt8]?
    }

    /// Nothing of the stream is kept: the source stopped or started again.
    mutating func reset() {
        viewersMustRestart = viewersMustRestart || movie != nil
        movie = nil
        sinceKeyFrame = []
        heldBytes = 0
    }

    mutating func add(_ message: Message, payload: [UInt8]) -> Added {
        // Fragment times cannot be negative: the first frames of a source with B-frames
        // (decoded before time zero) are not shown; its first key frame after them is.
        guard let info = message.video, let time = message.time, !payload.isEmpty, info.decodeTime.value >= 0,
            let unit = VideoAccessUnit(info, time: time, payload: payload)
        else { return Added() }
        var added = Added(keyFrame: unit.isKeyFrame)
        if unit.isKeyFrame {
            let sets = H264.annexB(unit.parameterSets)
            let changed =
                sets != parameterSets || movie?.format.codec != unit.codec || movie?.format.width != info.width
                || movie?.format.height != info.height
            if movie == nil || changed {
                added.restarted = movie != nil || viewersMustRestart
                viewersMustRestart = false
                start(sets, codec: unit.codec, info: info, timescale: time.timescale)
            }
            sinceKeyFrame = []
            heldBytes = 0
        }
        guard movie != nil else { return added }
        var fragment = movie?.fragment(unit)
        if fragment == nil, unit.isKeyFrame {
            // Time went back at a key frame: the source started again.
            added.restarted = true
            start(parameterSets, codec: unit.codec, info: info, timescale: time.timescale)
            fragment = movie?.fragment(unit)
        }
        guard let fragment else { return added }
        if heldBytes + fragment.count <= Self.maximumHeld {
            sinceKeyFrame.append(fragment)
            heldBytes += fragment.count
        } else {
            // A viewer who joins now waits for the next key frame (players drop what comes
            // before one).
            sinceKeyFrame = []
            heldBytes = Self.maximumHeld + 1
        }
        added.fragment = fragment
        return added
    }

    private mutating func start(_ sets: [UInt8], codec: VideoCodec, info: VideoPacketInfo, timescale: Int32) {
        parameterSets = sets
        movie =
            (try? VideoTrackFormat(
                annexBParameterSets: sets, codec: codec, width: info.width, height: info.height, timescale: timescale))
            .map {
                StreamingMovie(format: $0)
            }
    }
}

/// What the grid draws over a source's live video, one message at a time: a kind's objects
/// at a media time (one detector's message), or, for `kind` `video`, when the frame at that
/// media time was captured (for the capture-to-paint delay). The page keeps a few seconds of
/// them and draws, for each frame it presents, the objects of that frame's media time.
package struct LiveObjects: Sendable, Encodable {
    /// The kind's name (`faces`, `codes`, `detectedObjects`), or `video`.
    var kind: String
    /// Which detector in another process sent them; they are drawn each on its own.
    var detector: String?
    var time: Double
    var wallTimeNs: UInt64
    var objects: ObjectKind.LabelledObjects?

    /// A detector's message; nil for a message of no object kind.
    init?(_ message: Message) {
        guard let time = message.time, let kind = ObjectKind.carried(by: message.kind),
            let objects = kind.drawn(message)
        else { return nil }
        (self.kind, detector, self.time, wallTimeNs) = (
            kind.name, message.objects?.detector, time.seconds, message.wallTimeNs
        )
        self.objects = kind.labelled(objects)
    }

    /// A video frame's times.
    init?(clockOf message: Message) {
        guard let time = message.time else { return nil }
        (kind, self.time, wallTimeNs) = ("video", time.seconds, message.wallTimeNs)
    }
}
