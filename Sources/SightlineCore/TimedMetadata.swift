/// The type of a metadata value, as QuickTime declares it in a key's `dtyp` box: a
/// well-known type code (namespace 0) or a reverse-DNS type name (namespace 1).
public enum MetadataDataType: Sendable, Hashable, CustomStringConvertible {
    case wellKnown(UInt32)
    /// A custom type such as `com.apple.quicktime.detected-face`.
    case named(String)
    /// A namespace this code does not know; the value stays raw bytes.
    case other(namespace: UInt32, bytes: [UInt8])

    public static let raw = MetadataDataType.wellKnown(0)
    public static let utf8 = MetadataDataType.wellKnown(1)
    public static let utf16 = MetadataDataType.wellKnown(2)
    public static let jpeg = MetadataDataType.wellKnown(13)
    public static let png = MetadataDataType.wellKnown(14)
    public static let float32 = MetadataDataType.wellKnown(23)
    public static let float64 = MetadataDataType.wellKnown(24)
    public static let int8 = MetadataDataType.wellKnown(65)
    public static let int16 = MetadataDataType.wellKnown(66)
    public static let int32 = MetadataDataType.wellKnown(67)
    public static let pointF32 = MetadataDataType.wellKnown(70)
    public static let dimensionsF32 = MetadataDataType.wellKnown(71)
    public static let rectF32 = MetadataDataType.wellKnown(72)
    public static let int64 = MetadataDataType.wellKnown(74)
    public static let uint8 = MetadataDataType.wellKnown(75)
    public static let uint16 = MetadataDataType.wellKnown(76)
    public static let uint32 = MetadataDataType.wellKnown(77)
    public static let uint64 = MetadataDataType.wellKnown(78)
    public static let affineTransformF64 = MetadataDataType.wellKnown(79)
    /// Undocumented; what iOS declares for detected-face bounds (4 vertices as 8 float32).
    public static let polygonF32 = MetadataDataType.wellKnown(80)

    /// Names used in JSON output.
    static let names: [UInt32: String] = [
        0: "raw", 1: "utf8", 2: "utf16", 13: "jpeg", 14: "png", 23: "float32", 24: "float64", 65: "int8",
        66: "int16", 67: "int32", 70: "pointF32", 71: "dimensionsF32", 72: "rectF32", 74: "int64",
        75: "uint8", 76: "uint16", 77: "uint32", 78: "uint64", 79: "affineTransformF64", 80: "polygonF32",
    ]

    public var description: String {
        switch self {
        case .wellKnown(let code): Self.names[code] ?? "wellKnown:\(code)"
        case .named(let name): name
        case .other(let namespace, _): "namespace\(namespace)"
        }
    }
}

extension MetadataDataType {
    /// For the integer types: their width in bits and whether they are signed.
    public var integerLayout: (bits: Int, signed: Bool)? {
        switch self {
        case .int8: (8, true)
        case .int16: (16, true)
        case .int32: (32, true)
        case .int64: (64, true)
        case .uint8: (8, false)
        case .uint16: (16, false)
        case .uint32: (32, false)
        case .uint64: (64, false)
        default: nil
        }
    }

    /// Whether `value` is in range for this integer type (false for other types).
    public func holds(_ value: Int64) -> Bool {
        guard let (bits, signed) = integerLayout else { return false }
        if signed { return bits == 64 || (value >= -(1 << (bits - 1)) && value < (1 << (bits - 1))) }
        return value >= 0 && (bits == 64 || value < (1 << bits))
    }

    /// For the types whose value is a list of numbers (points, dimensions, rectangles,
    /// polygons, transforms): whether `count` numbers make one value. nil for other types.
    public func allowsComponents(_ count: Int) -> Bool? {
        switch self {
        case .pointF32, .dimensionsF32: count == 2
        case .rectF32: count == 4
        case .affineTransformF64: count == 9
        case .polygonF32: count >= 6 && count % 2 == 0
        default: nil
        }
    }
}

/// A decoded metadata value.
public enum MetadataValue: Sendable, Hashable {
    case string(String)
    case int(Int64)
    case uint(UInt64)
    case float(Double)
    /// Points, dimensions, rectangles, polygons and transforms: their components in order.
    case floats([Double])
    /// Records such as detected faces: one item list per record.
    case records([[MetadataItem]])
    /// A value whose type is not known, or raw by declaration.
    case data([UInt8])
}

/// One identified value, like `AVMetadataItem`: `identifier` is `<keyspace>/<key>`, for
/// example `mdta/com.apple.quicktime.location.ISO6709`.
public struct MetadataItem: Sendable, Hashable {
    public var identifier: String
    public var dataType: MetadataDataType
    public var value: MetadataValue

    public init(identifier: String, dataType: MetadataDataType, value: MetadataValue) {
        self.identifier = identifier
        self.dataType = dataType
        self.value = value
    }
}

/// Metadata that applies to a span of media time, like `AVTimedMetadataGroup`. An empty
/// group means "nothing from `time` on".
public struct TimedMetadataGroup: Sendable, Hashable {
    public var time: MediaTime
    /// `nil`: the group lasts until the next group of its track starts (or the movie ends).
    public var duration: MediaTime?
    public var items: [MetadataItem]

    public init(time: MediaTime, duration: MediaTime? = nil, items: [MetadataItem]) {
        self.time = time
        self.duration = duration
        self.items = items
    }
}

/// Identifiers Sightline writes and reads.
public enum MetadataIdentifier {
    public static let detectedFace = "mdta/com.apple.quicktime.detected-face"
    public static let detectedFaceID = "fiel/com.apple.quicktime.detected-face.face-id"
    public static let detectedFaceBounds = "fiel/com.apple.quicktime.detected-face.bounds"
    public static let detectedFaceRollAngle = "fiel/com.apple.quicktime.detected-face.roll-angle"
    public static let detectedFaceYawAngle = "fiel/com.apple.quicktime.detected-face.yaw-angle"
    /// Ours, in a face record: the name of the enrolled person the face was matched to
    /// (UTF-8), and the descriptor distance of that match (float32). Apple's readers skip
    /// fields they do not know.
    public static let detectedFaceIdentity = "fiel/com.sightline.detected-face.identity"
    public static let detectedFaceIdentityDistance = "fiel/com.sightline.detected-face.identity-distance"
    public static let videoOrientation = "mdta/com.apple.quicktime.video-orientation"
    public static let locationISO6709 = "mdta/com.apple.quicktime.location.ISO6709"
    /// Apple documents no key for barcodes; ours holds a JSON array of codes as UTF-8 text.
    public static let detectedMachineReadableCodes = "mdta/com.sightline.detected-machine-readable-codes"
    /// Ours, for the objects of detectors in other processes, a track per detector: each
    /// sample names the detector, then lists each object's fields, its ID first.
    package static let detectedObject = "mdta/com.sightline.detected-object"
    package static let detectedObjectDetector = "mdta/com.sightline.detected-object.detector"
    package static let detectedObjectID = "mdta/com.sightline.detected-object.object-id"
    package static let detectedObjectType = "mdta/com.sightline.detected-object.type"
    package static let detectedObjectBounds = "mdta/com.sightline.detected-object.bounds"
    package static let detectedObjectConfidence = "mdta/com.sightline.detected-object.confidence"
    package static let detectedObjectLabel = "mdta/com.sightline.detected-object.label"
    package static let detectedObjectDetectorID = "mdta/com.sightline.detected-object.detector-id"
}

extension MetadataItem {
    /// The faces of a `detected-face` item, as `detectedFaces` writes them and iOS does: each
    /// record's face-id and the rectangle around its bounds (four corners, or x y w h); nil
    /// for any other item. Records without both are left out.
    public var detectedFaceBounds: [(faceID: Int, bounds: NormalizedRect)]? {
        detectedFaceRecords?.map { ($0.faceID, $0.bounds) }
    }

    /// The same with each face's name, when the recorder knew whose face it was.
    public var detectedFaceRecords: [DetectedFaceRecord]? {
        guard identifier == MetadataIdentifier.detectedFace, case .records(let records) = value else { return nil }
        return records.compactMap { record in
            var id: Int?
            var corners: [Double]?
            var name: String?
            var distance: Double?
            for field in record {
                switch (field.identifier, field.value) {
                case (MetadataIdentifier.detectedFaceID, .uint(let value)): id = Int(value)
                case (MetadataIdentifier.detectedFaceBounds, .floats(let values)) where values.count == 8:
                    corners = values
                case (MetadataIdentifier.detectedFaceBounds, .floats(let values)) where values.count == 4:
                    corners = [values[0], values[1], values[0] + values[2], values[1] + values[3]]
                case (MetadataIdentifier.detectedFaceIdentity, .string(let value)): name = value
                case (MetadataIdentifier.detectedFaceIdentityDistance, .float(let value)): distance = value
                default: break
                }
            }
            guard let id, let corners else { return nil }
            let xs = stride(from: 0, to: corners.count, by: 2).map { corners[$0] }
            let ys = stride(from: 1, to: corners.count, by: 2).map { corners[$0] }
            let (left, top) = (xs.min()!, ys.min()!)
            return DetectedFaceRecord(
                faceID: id, bounds: NormalizedRect(x: left, y: top, width: xs.max()! - left, height: ys.max()! - top),
                identity: name.map { FaceIdentity(name: $0, distance: distance ?? .nan) })
        }
    }

    /// Faces as iOS records them: one record per face with face-id, bounds as the four
    /// corners (top-left, top-right, bottom-right, bottom-left), and the angles it knows.
    public static func detectedFaces(_ faces: [FaceObject]) -> MetadataItem {
        let records = faces.map { face -> [MetadataItem] in
            let b = face.bounds
            var fields = [
                MetadataItem(
                    identifier: MetadataIdentifier.detectedFaceID, dataType: .uint32, value: .uint(UInt64(face.faceID))),
                MetadataItem(
                    identifier: MetadataIdentifier.detectedFaceBounds, dataType: .polygonF32,
                    value: .floats([b.x, b.y, b.x + b.width, b.y, b.x + b.width, b.y + b.height, b.x, b.y + b.height])),
            ]
            if let roll = face.rollAngle {
                fields.append(
                    MetadataItem(
                        identifier: MetadataIdentifier.detectedFaceRollAngle, dataType: .float32, value: .float(roll)))
            }
            if let yaw = face.yawAngle {
                fields.append(
                    MetadataItem(
                        identifier: MetadataIdentifier.detectedFaceYawAngle, dataType: .float32, value: .float(yaw)))
            }
            if let identity = face.identity {
                fields.append(
                    MetadataItem(
                        identifier: MetadataIdentifier.detectedFaceIdentity, dataType: .utf8,
                        value: .string(identity.name)))
                fields.append(
                    MetadataItem(
                        identifier: MetadataIdentifier.detectedFaceIdentityDistance, dataType: .float32,
                        value: .float(identity.distance)))
            }
            return fields
        }
        return MetadataItem(
            identifier: MetadataIdentifier.detectedFace, dataType: .named("com.apple.quicktime.detected-face"),
            value: .records(records))
    }
}

/// A face as a movie's face track holds it (see `MetadataItem.detectedFaceRecords`).
public struct DetectedFaceRecord: Sendable, Hashable {
    public var faceID: Int
    public var bounds: NormalizedRect
    public var identity: FaceIdentity?

    public init(faceID: Int, bounds: NormalizedRect, identity: FaceIdentity? = nil) {
        self.faceID = faceID
        self.bounds = bounds
        self.identity = identity
    }
}
