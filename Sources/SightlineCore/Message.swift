/// The kinds of message Sightline puts on the bus. The kind is the first topic segment.
public enum MessageKind: String, Sendable, Codable, CaseIterable {
    /// Every analysed frame that has faces, and one empty list when the last face leaves.
    case faces
    /// The same for barcodes and 2D codes.
    case codes
    /// A detector in another process's objects in one frame: sent to a source's
    /// `--metadata-in`, and published by the source with Sightline's IDs.
    case objects
    /// An object entered or left the scene (keyed by its ID).
    case events
    /// Life cycle and counters of a source: started, stopped, periodic counters.
    case status
    /// One H.264 access unit, Annex B, in the payload frame; `time` is its presentation time.
    case video
    /// One AAC frame in the payload frame; `time` is when its first sample is heard.
    case audio
    /// A timed metadata group from a client, as the source republishes it with its media time.
    case metadata
    /// A downscaled frame for other services' detectors: pixels in the payload frame.
    case frames
    /// A face or code at its best so far, its box drawn in: a JPEG in the payload frame.
    case snapshots
}

extension MessageKind {
    /// What a person watching events wants by default: everything but the video.
    public static let analytics: [MessageKind] = [.faces, .codes, .objects, .events, .status, .metadata]
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
    /// Counts this source's messages of this kind from 0, so a gap means loss. A client may
    /// leave it out (0).
    @ZeroWhenAbsent public var seq: UInt64
    /// Media time of the frame the message is about (absent for status not tied to a frame).
    public var time: MediaTime?
    /// Wall-clock capture time of that frame, or the time of the event, in ns since 1970. A
    /// client may leave it out (0: when it arrives).
    @ZeroWhenAbsent public var wallTimeNs: UInt64

    public var faces: [FaceObject]?
    public var codes: [MachineReadableCodeObject]?
    public var objects: DetectedObjectGroup?
    public var event: ObjectEvent?
    public var status: SourceStatus?
    public var video: VideoPacketInfo?
    public var audio: AudioPacketInfo?
    public var metadata: ClientMetadataGroup?
    public var frame: FrameInfo?
    public var snapshot: ObjectSnapshot?

    public init(
        kind: MessageKind, source: String, seq: UInt64 = 0, time: MediaTime?, wallTimeNs: UInt64,
        faces: [FaceObject]? = nil, codes: [MachineReadableCodeObject]? = nil, objects: DetectedObjectGroup? = nil,
        event: ObjectEvent? = nil, status: SourceStatus? = nil,
        video: VideoPacketInfo? = nil, audio: AudioPacketInfo? = nil, metadata: ClientMetadataGroup? = nil,
        frame: FrameInfo? = nil, snapshot: ObjectSnapshot? = nil
    ) {
        self.v = Message.protocolVersion
        self.kind = kind
        self.source = source
        self.seq = seq
        self.time = time
        self.wallTimeNs = wallTimeNs
        self.faces = faces
        self.codes = codes
        self.objects = objects
        self.event = event
        self.status = status
        self.video = video
        self.audio = audio
        self.metadata = metadata
        self.frame = frame
        self.snapshot = snapshot
    }
}

/// A count a message may leave out, read as 0: what clients send (`metadata`, `objects`)
/// need not number or clock itself. Written as the plain number.
@propertyWrapper
public struct ZeroWhenAbsent: Sendable, Codable, Equatable {
    public var wrappedValue: UInt64

    public init(wrappedValue: UInt64) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}

extension KeyedDecodingContainer {
    /// An absent `ZeroWhenAbsent` field is 0, not an error.
    public func decode(_ type: ZeroWhenAbsent.Type, forKey key: Key) throws -> ZeroWhenAbsent {
        try decodeIfPresent(UInt64.self, forKey: key).map(ZeroWhenAbsent.init) ?? ZeroWhenAbsent(wrappedValue: 0)
    }
}

extension KeyedEncodingContainer {
    /// A `ZeroWhenAbsent` field is written as the number itself, as a `UInt64` field is,
    /// without an encoder of its own: every message on the bus has two.
    public mutating func encode(_ value: ZeroWhenAbsent, forKey key: Key) throws {
        try encode(value.wrappedValue, forKey: key)
    }
}

/// What a `video` message's payload is: one H.264 access unit in Annex B form. Key frames
/// carry their SPS and PPS in-band, so a subscriber can start at any key frame.
public struct VideoPacketInfo: Sendable, Codable, Equatable {
    /// "h264" or "hevc" (H.265), FFmpeg's names; the payload is Annex B in both.
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

/// What a `frames` message's payload is: `gray8` rows of `width` bytes, or a JPEG image.
public struct FrameInfo: Sendable, Codable, Equatable {
    public enum Format: String, Sendable, Codable { case gray8, jpeg }
    public var format: Format
    public var width: Int
    public var height: Int
    /// The size of the frame it was scaled from.
    public var sourceWidth: Int
    public var sourceHeight: Int

    public init(format: Format, width: Int, height: Int, sourceWidth: Int, sourceHeight: Int) {
        self.format = format
        self.width = width
        self.height = height
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
    }
}

/// Which object a `snapshots` message's JPEG shows (its `frame` says the JPEG's size).
public struct ObjectSnapshot: Sendable, Codable, Equatable {
    /// The `object` of its events ("face", "code", a detected object's type) and their `id`.
    public var object: String
    public var id: Int
    /// The sighting's detection score (faces); nil for objects without one.
    public var score: Double?
    /// Where its box is drawn, normalised to the frame.
    public var bounds: NormalizedRect
    /// Which detector in another process found it (as its events say); nil: a built-in one.
    public var detector: String?

    public init(object: String, id: Int, score: Double?, bounds: NormalizedRect, detector: String? = nil) {
        (self.object, self.id, self.score, self.bounds, self.detector) = (object, id, score, bounds, detector)
    }
}

/// An object entering or leaving the scene.
public struct ObjectEvent: Sendable, Codable, Equatable {
    /// `identified`: a tracked face was matched to an enrolled person (it carries `identity`),
    /// or matched to another one than before.
    public enum Change: String, Sendable, Codable {
        case enter, leave, identified

        /// How a log line says it: "entered", "left", "identified".
        public var pastTense: String {
            switch self {
            case .enter: "entered"
            case .leave: "left"
            case .identified: "identified"
            }
        }
    }
    public var change: Change
    /// What kind of object: "face", "code", or a detected object's type (`humanBody`).
    public var object: String
    public var id: Int
    /// On enter, the first sighting; on leave, the last one (the one matching `object`).
    public var face: FaceObject?
    public var code: MachineReadableCodeObject?
    public var item: DetectedObject?
    /// Which detector in another process found `item`.
    public var detector: String?

    public init(
        change: Change, object: String, id: Int, face: FaceObject? = nil, code: MachineReadableCodeObject? = nil,
        item: DetectedObject? = nil, detector: String? = nil
    ) {
        self.change = change
        self.object = object
        self.id = id
        self.face = face
        self.code = code
        self.item = item
        self.detector = detector
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
    /// What the source detects (`faces`, `barcodes`), on `started` and `running`.
    public var detections: [String]?
    /// How its detectors take frames, on `started` and `running`.
    public var analysis: Analysis?
    /// Which device an `interrupted` or `resumed` is about when it is not the video
    /// source: `microphone` (the `--audio-device` beside a camera).
    public var device: String?
    /// A camera's controls as they are set (those configured or changed since, as the
    /// driver kept them), by v4l2-ctl's names: on `started`, `running` and `resumed`, and at
    /// once in a `running` status whose `reason` says what changed.
    public var controls: [String: Int64]?

    /// `everyFrame`: the source waits for its detectors, as `AVAssetReader` does (files);
    /// `dropLate`: a frame that arrives while a detector is busy is dropped, as
    /// `alwaysDiscardsLateVideoFrames` does (cameras, streams, `--realtime`).
    public enum Analysis: String, Sendable, Codable { case everyFrame, dropLate }

    public init(
        state: State, reason: String? = nil, input: InputDescription? = nil, counters: PipelineCounters? = nil,
        detections: [String]? = nil, analysis: Analysis? = nil, device: String? = nil
    ) {
        self.state = state
        self.reason = reason
        self.input = input
        self.counters = counters
        self.detections = detections
        self.analysis = analysis
        self.device = device
    }
}

public struct InputDescription: Sendable, Codable, Equatable {
    public var url: String
    public var width: Int
    public var height: Int
    public var pixelFormat: String
    /// Nominal frames per second, when the container says.
    public var frameRate: Double?
    /// How the frames are turned for display, as an EXIF orientation (1 upright, 6 a quarter
    /// turn clockwise, …, 8): the source's display matrix or `--orientation`. nil: upright.
    /// Frames and detections stay in the stored orientation, as AVFoundation's do.
    public var orientation: Int?
    /// The source's audio and what Sightline makes of it; nil: none (or `--audio off`).
    public var audio: AudioInputDescription?

    public init(
        url: String, width: Int, height: Int, pixelFormat: String, frameRate: Double?, orientation: Int? = nil,
        audio: AudioInputDescription? = nil
    ) {
        self.url = url
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.frameRate = frameRate
        self.orientation = orientation
        self.audio = audio
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
    /// Times the device failed or disappeared, or a live stream dropped.
    public var interruptions: Int = 0
    /// Times frames came back after an interruption (a camera or stream reconnected).
    public var reconnects: Int?
    /// Seconds the source spent interrupted, the outage in progress included.
    public var disconnectedSeconds: Double?
    public var outputs: [String: OutputCounters] = [:]
    /// Face detection on the frames that reached the detector.
    public var detection: TimingCounters?
    /// Barcode reading on the frames that reached the reader, when it is on.
    public var codeDetection: TimingCounters?
    /// H.264 encoding, when the pipeline encodes (not when it passes the source's packets on).
    public var encoding: TimingCounters?
    /// Frames published for other services (`count`) and the time to scale and encode them.
    public var framesPublishing: TimingCounters?
    /// Client metadata taken in, when the source accepts it.
    public var metadataIn: InputCounters?
    /// Objects taken in from each detector in another process, by its name.
    public var objectsIn: [String: DetectorCounters]?
    /// Video messages published (encoded or passed through).
    public var videoPackets: Int = 0
    /// The source's audio, when it has some that is carried on.
    public var audio: AudioCounters?
    public var messagesPublished: Int = 0
    public var bytesPublished: Int = 0

    public init() {}
}

/// Client metadata a source took in (`run --metadata-in`).
public struct InputCounters: Sendable, Codable, Equatable {
    public var accepted = 0
    /// Dropped groups by reason: `flood`, `malformed`, `unknownIdentifier`,
    /// `unknownDataType`, `noTime`, or the decoder's (`notJSON`, `unsupportedVersion`,
    /// `oversized`, `wrongFrameCount`, `badFields`, `topicMismatch`, `unknownTopic`).
    public var rejected: [String: Int] = [:]

    public init(accepted: Int = 0, rejected: [String: Int] = [:]) {
        self.accepted = accepted
        self.rejected = rejected
    }
}

/// What a source took in from one detector in another process.
public struct DetectorCounters: Sendable, Codable, Equatable {
    /// Groups accepted and published, and the objects in them.
    public var groups = 0
    public var objects = 0
    /// Groups dropped, by reason: `late` (not after the detector's last group, or after its
    /// objects were let go), `flood`, `noTime`, or what `DetectedObjectsError` names
    /// (`badBounds`, `badType`, `tooManyObjects`, …).
    public var rejected: [String: Int] = [:]

    public init(groups: Int = 0, objects: Int = 0, rejected: [String: Int] = [:]) {
        self.groups = groups
        self.objects = objects
        self.rejected = rejected
    }
}

public struct OutputCounters: Sendable, Codable, Equatable {
    public var delivered: Int = 0
    /// Frames discarded before the output saw them, by reason (`late`, `shutdown`, `rate`).
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
