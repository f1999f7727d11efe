import SightlineCore

extension ObjectKind {
    /// Objects from detectors in other processes (`objects` messages): each detector's in a
    /// track of its own, whose samples name the detector and list each object's fields as
    /// items of their own (docs/movie-format.md), so that every tool that reads timed
    /// metadata shows them. A recording without any has no such track.
    package static let detectedObjects = ObjectKind(
        name: "detectedObjects", objectName: "object", detection: "objects", messageKind: .objects,
        trackIdentifier: MetadataIdentifier.detectedObject, trackFormat: .detectedObjects, colour: .blue,
        typeColour: colour(ofType:), snapshotsAppearances: true,
        record: { message in
            guard let group = message.objects else { return nil }
            return RecordedObjects(
                items: group.items.isEmpty ? [] : items(of: group), usesExtraFields: false,
                track: (trackIdentifier(of: group.detector), .detectedObjects))
        },
        drawMessage: { message in message.objects?.items.map(drawn) },
        drawItems: { items in detectedObjects(in: items).map(drawn) },
        label: { object in "\(object.text ?? object.type ?? "") #\(object.id)" })

    /// A type's colour, the same in every page, export and process: Apple's types have their
    /// own; any other type one of `palette`, by a hash of its name that no process seeds
    /// (FNV-1a), so that two types a detector sends are told apart at a glance.
    package static func colour(ofType type: String) -> RGBColour {
        switch type {
        case "humanBody": return .blue
        case "catBody": return RGBColour(red: 255, green: 112, blue: 67)
        case "dogBody": return RGBColour(red: 186, green: 104, blue: 255)
        case "salientObject": return RGBColour(red: 255, green: 236, blue: 61)
        default:
            let hash = type.utf8.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 }
            return palette[Int(hash % UInt32(palette.count))]
        }
    }

    /// Colours apart from faces' green, codes' amber and Apple's types' own.
    private static let palette = [
        RGBColour(red: 255, green: 77, blue: 141), RGBColour(red: 0, green: 212, blue: 200),
        RGBColour(red: 160, green: 200, blue: 80), RGBColour(red: 140, green: 150, blue: 255),
        RGBColour(red: 255, green: 160, blue: 200), RGBColour(red: 230, green: 230, blue: 230),
    ]

    /// What the recorder calls a detector's track (the file's keys are every detector's):
    /// not a key, so no detector's name can be taken for one.
    private static func trackIdentifier(of detector: String) -> String {
        "\(MetadataIdentifier.detectedObjectDetector)/\(detector)"
    }

    /// A group as a sample's items: the detector, then each object's fields, its ID first.
    private static func items(of group: DetectedObjectGroup) -> [MetadataItem] {
        var items = [MetadataItem(MetadataIdentifier.detectedObjectDetector, .utf8, .string(group.detector))]
        for object in group.items {
            let b = object.bounds
            items += [
                MetadataItem(MetadataIdentifier.detectedObjectID, .uint32, .uint(UInt64(clamping: object.objectID))),
                MetadataItem(MetadataIdentifier.detectedObjectType, .utf8, .string(object.type)),
                MetadataItem(
                    MetadataIdentifier.detectedObjectBounds, .rectF32, .floats([b.x, b.y, b.width, b.height])),
            ]
            if let confidence = object.confidence {
                items.append(MetadataItem(MetadataIdentifier.detectedObjectConfidence, .float32, .float(confidence)))
            }
            if let label = object.label {
                items.append(MetadataItem(MetadataIdentifier.detectedObjectLabel, .utf8, .string(label)))
            }
            if let id = object.id {
                items.append(
                    MetadataItem(MetadataIdentifier.detectedObjectDetectorID, .uint64, .uint(UInt64(clamping: id))))
            }
        }
        return items
    }

    /// The objects of a recorded sample: each begins at an ID item, and fields before the
    /// first ID, or an object without a type or bounds, are passed over.
    package static func detectedObjects(in items: [MetadataItem]) -> [DetectedObject] {
        var objects: [DetectedObject] = []
        var current: (object: DetectedObject, hasType: Bool, hasBounds: Bool)?
        func finish() {
            if let current, current.hasType, current.hasBounds { objects.append(current.object) }
        }
        for item in items {
            if item.identifier == MetadataIdentifier.detectedObjectID, case .uint(let id) = item.value {
                finish()
                let empty = NormalizedRect(x: 0, y: 0, width: 0, height: 0)
                current = (DetectedObject(type: "", bounds: empty, objectID: Int(clamping: id)), false, false)
                continue
            }
            guard current != nil else { continue }
            switch (item.identifier, item.value) {
            case (MetadataIdentifier.detectedObjectType, .string(let type)):
                (current!.object.type, current!.hasType) = (type, true)
            case (MetadataIdentifier.detectedObjectBounds, .floats(let v)) where v.count == 4:
                (current!.object.bounds, current!.hasBounds) = (
                    NormalizedRect(x: v[0], y: v[1], width: v[2], height: v[3]), true
                )
            case (MetadataIdentifier.detectedObjectConfidence, .float(let value)): current!.object.confidence = value
            case (MetadataIdentifier.detectedObjectLabel, .string(let value)): current!.object.label = value
            case (MetadataIdentifier.detectedObjectDetectorID, .uint(let value)):
                current!.object.id = Int(clamping: value)
            default: break
            }
        }
        finish()
        return objects
    }

    private static func drawn(_ object: DetectedObject) -> DrawnObject {
        var drawn = DrawnObject(id: object.objectID, bounds: object.bounds)
        drawn.type = object.type
        drawn.text = object.label
        return drawn
    }
}

extension MetadataItem {
    fileprivate init(_ identifier: String, _ dataType: MetadataDataType, _ value: MetadataValue) {
        self.init(identifier: identifier, dataType: dataType, value: value)
    }
}
