import Foundation
import GRDB
import SightlineCore
import SightlineMovie

/// One face, code or other object from when it came into view to when it left, in one
/// camera: a row of the event index, and an element of `/api/events` (docs/console.md).
package struct IndexedEvent: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    package static let databaseTableName = "event"

    package var id: Int64?
    /// The source it was seen by.
    package var camera: String
    /// `face`, `code`, or what a detector calls its objects (`person`), as MQTT labels them.
    package var label: String
    /// The person a gallery named (faces).
    package var name: String?
    /// `face`, `code` or `object`, and Sightline's ID of it in the source.
    package var kind: String
    package var objectID: Int
    /// Seconds since 1970; `end` is nil while it is in view (live events).
    package var start: Double
    package var end: Double?
    /// The recording that holds it, and where in it it starts, in seconds; nil for a live
    /// event no recording holds (yet).
    package var recording: String?
    package var t: Double?
    /// Where in the recording it is seen best (its largest box the picture does not cut).
    package var best: Double?
    /// A code's text.
    package var text: String?
    /// A code's symbology or a detected object's type (`humanBody`).
    package var type: String?

    package mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    package init(
        camera: String, label: String, name: String?, kind: String, objectID: Int, start: Double, end: Double?,
        recording: String?, t: Double?, text: String? = nil, type: String? = nil
    ) {
        (self.camera, self.label, self.name, self.kind, self.objectID) = (camera, label, name, kind, objectID)
        (self.start, self.end, self.recording, self.t, self.text, self.type) = (start, end, recording, t, text, type)
    }

    /// An object a recording's tracks show, in a recording of `camera` that starts at `start`.
    init(_ appearance: PlayerMetadata.Appearance, camera: String, recording: String, recordingStart: Double) {
        let isObject = appearance.kind == ObjectKind.detectedObjects.objectName
        let isFace = appearance.kind == ObjectKind.faces.objectName
        self.init(
            camera: camera,
            label: isObject
                ? DetectedObject.eventLabel(appearance.text, type: appearance.type ?? "object") : appearance.kind,
            name: isFace ? appearance.text : nil, kind: appearance.kind, objectID: appearance.id,
            start: recordingStart + appearance.start, end: recordingStart + appearance.end, recording: recording,
            t: appearance.start, text: isFace || isObject ? nil : appearance.text, type: appearance.type)
        best = appearance.best
    }

    /// What an `enter` event from the bus says (its later events change `name` and `end`).
    init(live event: ObjectEvent, camera: String, time: Double) {
        var (label, kind, name, text, type) = (event.object, event.object, String?.none, String?.none, String?.none)
        if let face = event.face {
            (label, kind, name) = (ObjectKind.faces.objectName, ObjectKind.faces.objectName, face.identity?.name)
        } else if let code = event.code {
            (label, kind) = (ObjectKind.codes.objectName, ObjectKind.codes.objectName)
            (text, type) = (code.stringValue, code.type.rawValue)
        } else if let item = event.item {
            (label, kind, type) = (item.eventLabel, ObjectKind.detectedObjects.objectName, item.type)
        }
        self.init(
            camera: camera, label: label, name: name, kind: kind, objectID: event.id, start: time, end: nil,
            recording: nil, t: nil, text: text, type: type)
    }
}

/// A recording as the index knows it: which camera, when, and its size when it was read
/// (a growing file is read again).
package struct IndexedRecording: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    package static let databaseTableName = "recording"

    package var name: String
    package var camera: String
    package var start: Double
    package var duration: Double
    package var size: UInt64

    package init(name: String, camera: String, start: Double, duration: Double, size: UInt64) {
        (self.name, self.camera, self.start, self.duration, self.size) = (name, camera, start, duration, size)
    }
}
