/// One analysed frame's objects from a detector in another process (kind `objects`),
/// modelled on `AVMetadataObject`: the detector sends it to `--metadata-in` with the frame's
/// `time`; the source checks it, gives its objects Sightline's IDs and publishes it again.
/// An empty list means nothing in view. docs/protocol.md has the wire format.
public struct DetectedObjectGroup: Sendable, Codable, Equatable {
    /// Names the detector ("people"): its objects are tracked, counted and recorded apart
    /// from other detectors'. The rules of a source ID.
    public var detector: String
    public var items: [DetectedObject]

    public init(detector: String, items: [DetectedObject]) {
        self.detector = detector
        self.items = items
    }

    /// Objects in one group, at most.
    package static let maximumObjects = 256

    /// The group as a source accepts it, or why not: every field a detector sends is checked
    /// here, before anything tracks or records it.
    package func validated() throws(DetectedObjectsError) {
        guard SourceID.isValid(detector) else { throw .badDetector }
        guard items.count <= Self.maximumObjects else { throw .tooManyObjects(items.count) }
        for (index, item) in items.enumerated() {
            guard DetectedObject.isValidType(item.type) else { throw .badType(index) }
            guard item.bounds.isWithinObjectRange else { throw .badBounds(index) }
            if let confidence = item.confidence, !(0...1).contains(confidence) { throw .badConfidence(index) }
            if let label = item.label, label.utf8.count > 256 { throw .badLabel(index) }
            if let id = item.id, !MessageLimits.count.contains(id) { throw .badID(index) }
        }
    }
}

/// One object a detector found: what it is, where, how sure, and its IDs.
public struct DetectedObject: Sendable, Hashable, Codable {
    /// `AVMetadataObject.ObjectType`'s name where Apple has one (`humanBody`, `catBody`,
    /// `dogBody`, `salientObject`, …), otherwise a reverse-DNS name (`org.example.forklift`).
    public var type: String
    public var bounds: NormalizedRect
    /// 0…1, the detector's.
    public var confidence: Double?
    /// Text shown beside the box ("person").
    public var label: String?
    /// The detector's own ID for the object, when it tracks them itself: kept, and objects
    /// with the same ID are one object whatever their boxes.
    public var id: Int?
    /// Sightline's ID, stable while the object is tracked; absent in what a detector sends.
    private var trackedID: Int?

    private enum CodingKeys: String, CodingKey {
        case type, bounds, confidence, label, id
        case trackedID = "objectID"
    }

    public init(
        type: String, bounds: NormalizedRect, confidence: Double? = nil, label: String? = nil, id: Int? = nil,
        objectID: Int? = nil
    ) {
        self.type = type
        self.bounds = bounds
        self.confidence = confidence
        self.label = label
        self.id = id
        self.trackedID = objectID
    }

    /// The object types of `AVMetadataObject.ObjectType` that are not faces or codes.
    package static let appleTypes: Set<String> = [
        "humanBody", "humanFullBody", "catBody", "dogBody", "catHead", "dogHead", "salientObject",
    ]

    /// One of `appleTypes`, or a reverse-DNS name: two or more dot-separated labels of ASCII
    /// letters, digits, `-` and `_`, the first starting with a letter, at most 128 bytes.
    package static func isValidType(_ type: String) -> Bool {
        if appleTypes.contains(type) { return true }
        let labels = type.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard type.utf8.count <= 128, labels.count >= 2, let first = labels[0].first, isLetter(first) else {
            return false
        }
        return labels.allSatisfy { label in
            !label.isEmpty
                && label.allSatisfy { isLetter($0) || (48...57).contains($0) || $0 == UInt8(ascii: "-") || $0 == 95 }
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }
}

extension DetectedObject: TrackableObject {
    /// Sightline's ID in what a source publishes; 0 in what a detector sends.
    public var objectID: Int {
        get { trackedID ?? 0 }
        set { trackedID = newValue }
    }

    /// Of the same type, and with the same detector ID when both have one.
    package func mayBe(_ other: DetectedObject) -> Bool {
        type == other.type && (id == nil || other.id == nil || id == other.id)
    }

    /// The detector says it is the same object.
    package func isSurely(_ other: DetectedObject) -> Bool { id != nil && id == other.id && type == other.type }

    package static let minimumOverlap = 0.3
}

extension NormalizedRect {
    /// Where a detected object's box may be: it has an area, and lies on the frame, though
    /// it may cross its edges (x and y from −1 to 1, width and height up to 2).
    var isWithinObjectRange: Bool {
        (-1...1).contains(x) && (-1...1).contains(y) && width > 0 && width <= 2 && height > 0 && height <= 2
            && x < 1 && y < 1 && x + width > 0 && y + height > 0
    }
}

/// Why a detector's group was refused; `reason` names it in counters and logs, and each
/// case but the first carries the count or the index of the item at fault.
package enum DetectedObjectsError: Error, Equatable, CustomStringConvertible {
    case badDetector
    case tooManyObjects(Int)
    case badType(Int)
    case badBounds(Int)
    case badConfidence(Int)
    case badLabel(Int)
    case badID(Int)

    /// A short, bounded name for counting: `badDetector`, `tooManyObjects`, `badType`,
    /// `badBounds`, `badConfidence`, `badLabel`, `badID`.
    package var reason: String {
        switch self {
        case .badDetector: "badDetector"
        case .tooManyObjects: "tooManyObjects"
        case .badType: "badType"
        case .badBounds: "badBounds"
        case .badConfidence: "badConfidence"
        case .badLabel: "badLabel"
        case .badID: "badID"
        }
    }

    package var description: String {
        switch self {
        case .badDetector: "a detector is named by 1-64 letters, digits, '.', '_' or '-'"
        case .tooManyObjects(let count):
            "\(count) objects in a group, more than \(DetectedObjectGroup.maximumObjects)"
        case .badType(let index): "items[\(index)].type is not an Apple object type or a reverse-DNS name"
        case .badBounds(let index): "items[\(index)].bounds is not a box on the frame in normalised coordinates"
        case .badConfidence(let index): "items[\(index)].confidence is not within 0...1"
        case .badLabel(let index): "items[\(index)].label is longer than 256 bytes"
        case .badID(let index): "items[\(index)].id is negative or too large"
        }
    }
}

extension DetectedObject {
    /// What events call it (MQTT topics, the console's index): the detector's label, else
    /// Frigate's name for Apple's type, else a reverse-DNS type's last part.
    package var eventLabel: String { Self.eventLabel(label, type: type) }

    package static func eventLabel(_ label: String?, type: String) -> String {
        if let label { return label }
        return switch type {
        case "humanBody", "humanFullBody": "person"
        case "catBody", "catHead": "cat"
        case "dogBody", "dogHead": "dog"
        default: String(type.split(separator: ".").last ?? Substring(type))
        }
    }
}
