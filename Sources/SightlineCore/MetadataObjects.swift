/// A rectangle in normalised coordinates: 0…1 across the unrotated frame, origin top-left
/// (AVFoundation's metadata-object convention). Values may lie slightly outside 0…1 when a
/// detector's box crosses the frame's edge.
public struct NormalizedRect: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var area: Double { max(width, 0) * max(height, 0) }

    /// Intersection over union, 0 when the rectangles do not overlap.
    public func intersectionOverUnion(_ other: NormalizedRect) -> Double {
        let left = max(x, other.x)
        let right = min(x + width, other.x + other.width)
        let top = max(y, other.y)
        let bottom = min(y + height, other.y + other.height)
        guard right > left, bottom > top else { return 0 }
        let intersection = (right - left) * (bottom - top)
        return intersection / (area + other.area - intersection)
    }
}

/// A detected face, modelled on `AVMetadataFaceObject` and extended with what dlib adds.
public struct FaceObject: Sendable, Hashable, Codable {
    /// Stable while the face is tracked from frame to frame; a new face gets a new ID.
    public var faceID: Int
    public var bounds: NormalizedRect
    /// Degrees, when it can be estimated (see docs/face-detection.md).
    public var rollAngle: Double?
    /// Degrees, AVFoundation's convention (0, 45, 315 …), when it can be estimated.
    public var yawAngle: Double?
    public var time: MediaTime
    public var duration: MediaTime?
    /// dlib's detection score (higher is surer; 0 is the default threshold).
    public var score: Double
    /// Which of dlib's five HOG filters fired (see `FaceSubDetector`).
    public var subDetector: Int
    /// dlib's 5 landmarks, normalised like `bounds`: the outer and inner corner of the eye
    /// on the image's right, the same of the eye on its left, the base of the nose. Present
    /// when the landmark model is (docs/identities.md).
    public var landmarks: [NormalizedPoint]?
    /// Whose face this is, when a gallery is in use and the face is close enough to an
    /// enrolled person.
    public var identity: FaceIdentity?
    /// The 128 numbers of dlib's recognition network for this face, only with
    /// `--publish-descriptors`: a descriptor identifies a person, so it stays in the process
    /// unless asked for.
    public var descriptor: [Float]?

    public init(
        faceID: Int, bounds: NormalizedRect, rollAngle: Double?, yawAngle: Double?, time: MediaTime,
        duration: MediaTime?, score: Double, subDetector: Int, landmarks: [NormalizedPoint]? = nil,
        identity: FaceIdentity? = nil, descriptor: [Float]? = nil
    ) {
        self.faceID = faceID
        self.bounds = bounds
        self.rollAngle = rollAngle
        self.yawAngle = yawAngle
        self.time = time
        self.duration = duration
        self.score = score
        self.subDetector = subDetector
        self.landmarks = landmarks
        self.identity = identity
        self.descriptor = descriptor
    }
}

/// An enrolled person a face was matched to.
public struct FaceIdentity: Sendable, Hashable, Codable {
    /// The name the person was enrolled under.
    public var name: String
    /// Euclidean distance between the face's descriptor and the person's closest enrolled
    /// one: below the match threshold (0.6 by default), lower is surer.
    public var distance: Double

    public init(name: String, distance: Double) {
        self.name = name
        self.distance = distance
    }
}

/// A point in normalised coordinates (see `NormalizedRect`).
public struct NormalizedPoint: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// Barcode and 2D-code symbologies, named as `AVMetadataObject.ObjectType` names them.
/// `rawValue` is the name used on the bus and on the command line; `avFoundationType` is
/// Apple's string for the same type. UPC-A is reported as EAN-13 with a leading 0, as
/// AVFoundation does.
public enum MachineReadableCodeType: String, Sendable, Hashable, Codable, CaseIterable {
    case aztec, codabar, code39, code93, code128, dataMatrix, ean8, ean13, gs1DataBar, gs1DataBarExpanded
    case interleaved2of5, itf14, maxiCode, microQR, pdf417, qr, upce

    /// `AVMetadataObject.ObjectType`'s raw value; MaxiCode has none in AVFoundation.
    public var avFoundationType: String {
        switch self {
        case .aztec: "org.iso.Aztec"
        case .codabar: "org.iso.Codabar"
        case .code39: "org.iso.Code39"
        case .code93: "com.intermec.Code93"
        case .code128: "org.iso.Code128"
        case .dataMatrix: "org.iso.DataMatrix"
        case .ean8: "org.gs1.EAN-8"
        case .ean13: "org.gs1.EAN-13"
        case .gs1DataBar: "org.gs1.GS1DataBar"
        case .gs1DataBarExpanded: "org.gs1.GS1DataBarExpanded"
        case .interleaved2of5: "org.ansi.Interleaved2of5"
        case .itf14: "org.gs1.ITF14"
        case .maxiCode: "com.sightline.MaxiCode"
        case .microQR: "org.iso.MicroQR"
        case .pdf417: "org.iso.PDF417"
        case .qr: "org.iso.QRCode"
        case .upce: "org.gs1.UPC-E"
        }
    }

    /// Parses a comma-separated list such as `qr,ean13`; `all` means every type.
    public static func list(_ text: String) throws -> Set<MachineReadableCodeType> {
        var types = Set<MachineReadableCodeType>()
        for name in text.split(separator: ",").map({ String($0.filter { $0 != " " }) }) {
            if name == "all" {
                types.formUnion(allCases)
            } else if let type = MachineReadableCodeType(rawValue: name) {
                types.insert(type)
            } else {
                throw SightlineError.invalidArgument(
                    "unknown code type '\(name)'; known: all, \(allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        guard !types.isEmpty else { throw SightlineError.invalidArgument("no code types given") }
        return types
    }
}

/// A decoded barcode or 2D code, modelled on `AVMetadataMachineReadableCodeObject`.
public struct MachineReadableCodeObject: Sendable, Hashable, Codable {
    /// Stable while the code stays in view (Sightline's addition; AVFoundation has none).
    public var codeID: Int
    public var type: MachineReadableCodeType
    /// The decoded payload as text.
    public var stringValue: String
    /// The symbol's corners in its own orientation: top-left, top-right, bottom-right,
    /// bottom-left (a code upside down has its top-left corner at the bottom right).
    public var corners: [NormalizedPoint]
    /// The upright rectangle enclosing the corners.
    public var bounds: NormalizedRect
    public var time: MediaTime
    public var duration: MediaTime?

    public init(
        codeID: Int, type: MachineReadableCodeType, stringValue: String, corners: [NormalizedPoint], time: MediaTime,
        duration: MediaTime?
    ) {
        self.codeID = codeID
        self.type = type
        self.stringValue = stringValue
        self.corners = corners
        let xs = corners.map(\.x)
        let ys = corners.map(\.y)
        let (left, top) = (xs.min() ?? 0, ys.min() ?? 0)
        self.bounds = NormalizedRect(x: left, y: top, width: (xs.max() ?? 0) - left, height: (ys.max() ?? 0) - top)
        self.time = time
        self.duration = duration
    }
}

/// How a code is stored in a movie's codes track (docs/movie-format.md): the object without
/// its times, which the sample already has. The recorder writes it; players read it.
public struct MachineReadableCodeRecord: Sendable, Codable, Equatable {
    public var codeID: Int
    public var type: MachineReadableCodeType
    public var stringValue: String
    public var corners: [NormalizedPoint]
    public var bounds: NormalizedRect

    public init(_ code: MachineReadableCodeObject) {
        (codeID, type, stringValue, corners, bounds) = (
            code.codeID, code.type, code.stringValue, code.corners, code.bounds
        )
    }
}

/// What a tracker needs of an object to follow it from frame to frame: an ID it keeps
/// stable, and a place in the frame.
package protocol TrackableObject: Sendable, Hashable {
    /// faceID, codeID: stable while the object is tracked; 0 before a tracker assigns it.
    var objectID: Int { get set }
    var bounds: NormalizedRect { get }
    /// Whether `other`, seen in a later frame, may be this same object (a code must keep its
    /// type and value; any face may be any face). The tracker then matches by overlap.
    func mayBe(_ other: Self) -> Bool
    /// Whether `other` is this same object whatever their overlap (a detector's own ID says
    /// so); by default, never.
    func isSurely(_ other: Self) -> Bool
    /// How far two sightings must overlap (intersection over union) to be one object.
    static var minimumOverlap: Double { get }
}

extension TrackableObject {
    package func isSurely(_ other: Self) -> Bool { false }
}

/// What faces and codes have in common besides being tracked: how they travel on the bus.
/// A new kind of object a built-in detector finds conforms to this.
package protocol MetadataObject: TrackableObject, Codable {
    var time: MediaTime { get }
    /// The `object` of this kind's events ("face", "code").
    static var eventObject: String { get }
    /// The kind of the messages listing this kind's objects in a frame.
    static var messageKind: MessageKind { get }
    /// The message listing `objects`, with nothing else of this kind set.
    static func message(_ objects: [Self], source: String, time: MediaTime, wallTimeNs: UInt64) -> Message
    /// The event for `object` entering or leaving.
    static func event(_ change: ObjectEvent.Change, _ object: Self) -> ObjectEvent
    /// What a log line about this object shows besides its ID and time.
    var logDetails: [String: String] { get }
    /// How sure its detector is of this sighting, higher is surer (a face's score): which
    /// sighting makes its best snapshot. nil: every sighting is as good (codes).
    var detectionScore: Double? { get }
}

extension MetadataObject {
    package var detectionScore: Double? { nil }
}

extension FaceObject: MetadataObject {
    package var objectID: Int {
        get { faceID }
        set { faceID = newValue }
    }
    package func mayBe(_ other: FaceObject) -> Bool { true }
    package var detectionScore: Double? { score }
    package var logDetails: [String: String] {
        var details = ["score": "\((score * 100).rounded() / 100)"]
        if let identity { details["name"] = identity.name }
        return details
    }
    package static let eventObject = "face"
    package static let messageKind = MessageKind.faces
    package static let minimumOverlap = 0.3
    package static func message(_ objects: [FaceObject], source: String, time: MediaTime, wallTimeNs: UInt64)
        -> Message
    {
        Message(kind: .faces, source: source, time: time, wallTimeNs: wallTimeNs, faces: objects)
    }
    package static func event(_ change: ObjectEvent.Change, _ object: FaceObject) -> ObjectEvent {
        ObjectEvent(change: change, object: eventObject, id: object.faceID, face: object)
    }
}

extension MachineReadableCodeObject: MetadataObject {
    package var objectID: Int {
        get { codeID }
        set { codeID = newValue }
    }
    package func mayBe(_ other: MachineReadableCodeObject) -> Bool {
        type == other.type && stringValue == other.stringValue
    }
    package var logDetails: [String: String] { ["type": type.rawValue, "value": stringValue] }
    package static let eventObject = "code"
    package static let messageKind = MessageKind.codes
    /// Any overlap will do: the value already says which code it is; overlap only tells
    /// apart two codes with the same value.
    package static let minimumOverlap = 0.0
    package static func message(
        _ objects: [MachineReadableCodeObject], source: String, time: MediaTime, wallTimeNs: UInt64
    ) -> Message {
        Message(kind: .codes, source: source, time: time, wallTimeNs: wallTimeNs, codes: objects)
    }
    package static func event(_ change: ObjectEvent.Change, _ object: MachineReadableCodeObject) -> ObjectEvent {
        ObjectEvent(change: change, object: eventObject, id: object.codeID, code: object)
    }
}
