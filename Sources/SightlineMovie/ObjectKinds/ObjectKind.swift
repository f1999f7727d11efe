import SightlineCore

/// One kind of object detectors find (faces, codes), described once: how a source says it
/// looks for the kind, which messages carry it, the timed-metadata track that records it,
/// and how its objects are drawn (the console, the player, burn-in, snapshots).
///
/// Every module that handles objects goes through `ObjectKind.all`, so that no detector's
/// name is a contract between modules. A kind is one file in this folder that defines its
/// value, and an entry in `all`.
package struct ObjectKind: Sendable {
    /// What the console's pages and the player call the kind: a live frame's field, a
    /// recording's track kind (`faces`).
    package let name: String
    /// What one object is called in the player's list of appearances (`face`).
    package let objectName: String
    /// What a source's status lists in `detections` when it looks for the kind.
    package let detection: String
    package let messageKind: MessageKind
    /// The timed-metadata track that records the kind: its identifier and format. A kind
    /// with a track per detector names each with an identifier that begins
    /// `<trackIdentifier>.` (see `holds`).
    package let trackIdentifier: String
    package let trackFormat: MetadataTrackFormat
    /// Whether every recording declares the track, found or not (faces, as iOS does);
    /// otherwise from the first status that lists the kind or the first object.
    package let recordedFromStart: Bool
    /// Fields a source can add to the kind's objects, announced in its status by name (a
    /// gallery's names of faces), and the track format that declares them.
    package let extraFields: (detection: String, trackFormat: MetadataTrackFormat)?
    /// The colour of its boxes and labels, in the console's pages, burn-in and snapshots,
    /// unless its objects' types have their own (`colour(of:)`).
    package let colour: RGBColour
    private let typeColour: (@Sendable (String) -> RGBColour)?
    /// Whether the player shows a snapshot of each of its objects as it appears (faces).
    package let snapshotsAppearances: Bool
    private let recordItems: @Sendable (Message) -> RecordedObjects?
    private let drawMessage: @Sendable (Message) -> [DrawnObject]?
    private let drawItems: @Sendable ([MetadataItem]) -> [DrawnObject]
    private let labelObject: @Sendable (DrawnObject) -> String

    /// A message's objects as one group of the kind's track.
    package struct RecordedObjects {
        /// None: the objects have left.
        package var items: [MetadataItem]
        /// Whether the objects carry the kind's `extraFields`.
        package var usesExtraFields: Bool
        /// The track they go to when it is not the kind's: the detector's own.
        package var track: (identifier: String, format: MetadataTrackFormat)?
    }

    package init(
        name: String, objectName: String, detection: String, messageKind: MessageKind, trackIdentifier: String,
        trackFormat: MetadataTrackFormat, recordedFromStart: Bool = false,
        extraFields: (detection: String, trackFormat: MetadataTrackFormat)? = nil, colour: RGBColour,
        typeColour: (@Sendable (String) -> RGBColour)? = nil, snapshotsAppearances: Bool = false,
        record: @escaping @Sendable (Message) -> RecordedObjects?,
        drawMessage: @escaping @Sendable (Message) -> [DrawnObject]?,
        drawItems: @escaping @Sendable ([MetadataItem]) -> [DrawnObject],
        label: @escaping @Sendable (DrawnObject) -> String
    ) {
        self.name = name
        self.objectName = objectName
        self.detection = detection
        self.messageKind = messageKind
        self.trackIdentifier = trackIdentifier
        self.trackFormat = trackFormat
        self.recordedFromStart = recordedFromStart
        self.extraFields = extraFields
        self.colour = colour
        self.typeColour = typeColour
        self.snapshotsAppearances = snapshotsAppearances
        self.recordItems = record
        self.drawMessage = drawMessage
        self.drawItems = drawItems
        self.labelObject = label
    }

    /// Every kind, in the order recordings declare their tracks and pages list them.
    package static let all: [ObjectKind] = [.faces, .codes, .detectedObjects]

    /// The kind a message of `kind` carries; nil for messages that carry no objects.
    package static func carried(by kind: MessageKind) -> ObjectKind? { all.first { $0.messageKind == kind } }

    /// The kind whose track has `identifier`.
    package static func tracked(by identifier: String) -> ObjectKind? { all.first { $0.holds(identifier) } }

    /// Whether a track with `identifier` is the kind's: its own, or one of its detectors'.
    package func holds(_ identifier: String) -> Bool {
        identifier.hasPrefix(trackIdentifier)
            && (identifier.utf8.count == trackIdentifier.utf8.count
                || identifier.utf8.dropFirst(trackIdentifier.utf8.count).first == UInt8(ascii: "."))
    }

    /// The kind a recorded track holds, by the identifiers its format declares.
    package static func recorded(in format: MetadataTrackFormat) -> ObjectKind? {
        format.keys.lazy.compactMap { tracked(by: $0.identifier) }.first
    }

    /// The kinds a status's `detections` lists.
    package static func listed(in detections: [String]) -> [ObjectKind] {
        all.filter { detections.contains($0.detection) }
    }

    /// A message's objects as one group of the track; nil when the message has none of this
    /// kind or they cannot be recorded (malformed).
    package func recorded(_ message: Message) -> RecordedObjects? { recordItems(message) }

    /// A message's objects as the live view draws them; nil when it has none of this kind.
    package func drawn(_ message: Message) -> [DrawnObject]? { drawMessage(message) }

    /// A recorded group's objects as the player and burn-in draw them; nil when none of its
    /// items is of this kind.
    package func drawn(_ items: [MetadataItem]) -> [DrawnObject]? {
        let own = items.filter { holds($0.identifier) }
        return own.isEmpty ? nil : drawItems(own)
    }

    /// The text shown above an object's box.
    package func label(_ object: DrawnObject) -> String { labelObject(object) }

    /// The colour an object is drawn in: its type's, when the kind gives types their own.
    package func colour(of object: DrawnObject) -> RGBColour { colour(ofType: object.type) }

    package func colour(ofType type: String?) -> RGBColour {
        guard let typeColour, let type else { return colour }
        return typeColour(type)
    }

    /// Objects of this kind as the console's pages get them: each with its `label` and `colour`.
    package func labelled(_ objects: [DrawnObject]) -> LabelledObjects {
        LabelledObjects(objects: objects, kind: self)
    }

    /// Objects as JSON, each with the label and colour its kind gives it.
    package struct LabelledObjects: Encodable, Sendable {
        let objects: [DrawnObject]
        let kind: ObjectKind

        private enum DrawingKey: String, CodingKey { case label, colour }

        /// Each object's own fields, and how it is drawn beside them.
        package func encode(to encoder: any Encoder) throws {
            var list = encoder.unkeyedContainer()
            for object in objects {
                let element = list.superEncoder()
                try object.encode(to: element)
                var drawing = element.container(keyedBy: DrawingKey.self)
                try drawing.encode(kind.label(object), forKey: .label)
                try drawing.encode(kind.colour(of: object).css, forKey: .colour)
            }
        }
    }

    /// What the console's pages need to draw the kind, as their script reads it
    /// (`sightline.kinds`): its name, what one object is called, its colour, and whether the
    /// player shows a snapshot of each object as it appears.
    package struct PageDescription: Encodable, Sendable {
        var name: String
        var objectName: String
        var colour: String
        var snapshots: Bool
    }

    package var pageDescription: PageDescription {
        PageDescription(name: name, objectName: objectName, colour: colour.css, snapshots: snapshotsAppearances)
    }
}
