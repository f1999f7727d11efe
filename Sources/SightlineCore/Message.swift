/// The kinds of message Sightline puts on the bus. The kind is the first topic segment.
public enum MessageKind: String, Sendable, Codable, CaseIterable {
    /// Every analysed frame that has faces, and one empty list when the last face leaves.
    case faces
    /// An object entered or left the scene (keyed by its ID).
    case events
    /// Life cycle and counters of a source: started, stopped, periodic counters.
    case status
    /// One H.264 access unit, Annex B, in the payload frame; `time` is its presentation time.
    case video
}

extension MessageKind {
    /// What a person watching events wants by default: everything but the video.
    public static let analytics: [MessageKind] = [.faces, .events, .status]
}

/// Topics are `<kind>/<source>/`. The trailing separator makes ZeroMQ's byte-prefix
/// subscription exact: `faces/cam1/` does not match `faces/cam10/`, `faces/` matches the
/// faces of every source.
public enum Topic {
    public static func make(kind: MessageKind, source: String) -> String { "\(kind.rawValue)/\(source)/" }

    /// The subscription prefix for a kind, optionally narrowed to one source.
    public static func prefix(kind: MessageKind, source: String?) -> String {
        source.map { make(kind: kind, source: $0) } ?? "\(kind.rawValue)/"
    }

    /// Splits a received topic into its kind and source, or nil when it is not ours.
    public static func parse(_ topic: String) -> (kind: MessageKind, source: String)? {
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].isEmpty, let kind = MessageKind(rawValue: String(parts[0])),
            SourceID.isValid(String(parts[1]))
        else { return nil }
        return (kind, String(parts[1]))
    }
}

/// Source IDs name a camera or stream in topics and file names.
public enum SourceID {
    /// 1 to 64 characters of letters, digits, `.`, `_` and `-`, starting with a letter or digit.
    public static func isValid(_ id: String) -> Bool {
        guard let first = id.unicodeScalars.first, id.unicodeScalars.count <= 64 else { return false }
        func allowed(_ c: Unicode.Scalar) -> Bool {
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c))
        }
        return allowed(first) && id.unicodeScalars.allSatisfy { allowed($0) || $0 == "." || $0 == "_" || $0 == "-" }
    }
}

/// One message on the bus: the JSON document in the second frame of
/// `[topic][message][optional binary payload]`. Fields beyond the common header are
/// present according to `kind`; docs/protocol.md is the reference.
public struct Message: Sendable, Codable, Equatable {
    public static let protocolVersion = 1

    /// Protocol version; a subscriber rejects versions it does not know.
    public var v: Int
    public var kind: MessageKind
    public var source: String
    /// Counts this source's messages of this kind from 0, so a gap means loss.
    public var seq: UInt64
    /// Media time of the frame the message is about (absent for status not tied to a frame).
    public var time: MediaTime?
    /// Wall-clock capture time of that frame, or the time of the event, in ns since 1970.
    public var wallTimeNs: UInt64

    public var faces: [FaceObject]?
    public var event: ObjectEvent?
    public var status: SourceStatus?
    public var video: VideoPacketInfo?

    public init(
        kind: MessageKind, source: String, seq: UInt64 = 0, time: MediaTime?, wallTimeNs: UInt64,
        faces: [FaceObject]? = nil, event: ObjectEvent? = nil, status: SourceStatus? = nil,
        video: VideoPacketInfo? = nil
    ) {
        self.v = Message.protocolVersion
        self.kind = kind
        self.source = source
        self.seq = seq
        self.time = time
        self.wallTimeNs = wallTimeNs
        self.faces = faces
        self.event = event
        self.status = status
        self.video = video
    }
}

/// What a `video` message's payload is: one H.264 access unit in Annex B form. Key frames
/// carry their SPS and PPS in-band, so a subscriber can start at any key frame.
public struct VideoPacketInfo: Sendable, Codable, Equatable {
    /// Always "h264" in protocol version 1.
    public var codec: String
    public var keyFrame: Bool
    /// Decode time; the message's `time` is the presentation time (they differ with B-frames).
    public var decodeTime: MediaTime
    public var duration: MediaTime?
    public var width: Int
    public var height: Int

    public init(
        codec: String = "h264", keyFrame: Bool, decodeTime: MediaTime, duration: MediaTime?, width: Int, height: Int
    ) {
        self.codec = codec
        self.keyFrame = keyFrame
        self.decodeTime = decodeTime
        self.duration = duration
        self.width = width
        self.height = height
    }
}

/// An object entering or leaving the scene.
public struct ObjectEvent: Sendable, Codable, Equatable {
    public enum Change: String, Sendable, Codable { case enter, leave }
    public var change: Change
    /// What kind of object: "face" (barcodes later).
    public var object: String
    public var id: Int
    /// On enter, the first sighting; on leave, the last one.
    public var face: FaceObject?

    public init(change: Change, object: String, id: Int, face: FaceObject?) {
        self.change = change
        self.object = object
        self.id = id
        self.face = face
    }
}

/// A source's state and counters.
public struct SourceStatus: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable { case started, running, interrupted, resumed, stopped, failed }
    public var state: State
    /// Why the source stopped or failed, in one line.
    public var reason: String?
    /// What is being read, with its size and rate once known.
    public var input: InputDescription?
    public var counters: PipelineCounters?

    public init(state: State, reason: String? = nil, input: InputDescription? = nil, counters: PipelineCounters? = nil)
    {
        self.state = state
        self.reason = reason
        self.input = input
        self.counters = counters
    }
}

public struct InputDescription: Sendable, Codable, Equatable {
    public var url: String
    public var width: Int
    public var height: Int
    public var pixelFormat: String
    /// Nominal frames per second, when the container says.
    public var frameRate: Double?

    public init(url: String, width: Int, height: Int, pixelFormat: String, frameRate: Double?) {
        self.url = url
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.frameRate = frameRate
    }
}

/// Counters a running pipeline reports: every frame is accounted for.
/// For each output, `delivered + dropped.values.sum() == framesIn` once it has drained.
public struct PipelineCounters: Sendable, Codable, Equatable {
    /// Frames the source produced.
    public var framesIn: Int = 0
    /// Frames or packets the source skipped, by reason: `corrupt`, or `driverDropped` for
    /// frames a camera's driver lost before they reached us (its sequence numbers jumped).
    public var sourceSkipped: [String: Int] = [:]
    /// Times the device failed or disappeared.
    public var interruptions: Int = 0
    public var outputs: [String: OutputCounters] = [:]
    /// Face detection on the frames that reached the detector.
    public var detection: TimingCounters?
    /// H.264 encoding, when the pipeline encodes (not when it passes the source's packets on).
    public var encoding: TimingCounters?
    /// Video messages published (encoded or passed through).
    public var videoPackets: Int = 0
    public var messagesPublished: Int = 0
    public var bytesPublished: Int = 0

    public init() {}
}

public struct OutputCounters: Sendable, Codable, Equatable {
    public var delivered: Int = 0
    /// Frames discarded before the output saw them, by reason (`late`, `shutdown`).
    public var dropped: [String: Int] = [:]

    public init(delivered: Int = 0, dropped: [String: Int] = [:]) {
        self.delivered = delivered
        self.dropped = dropped
    }

    public var droppedTotal: Int { dropped.values.reduce(0, +) }
}

public struct TimingCounters: Sendable, Codable, Equatable {
    public var count: Int = 0
    public var totalMs: Double = 0
    public var maxMs: Double = 0

    public init() {}

    public var meanMs: Double { count == 0 ? 0 : totalMs / Double(count) }

    public mutating func record(milliseconds: Double) {
        count += 1
        totalMs += milliseconds
        maxMs = max(maxMs, milliseconds)
    }
}
