import SightlineCore

extension ObjectKind {
    /// Faces (dlib's): recorded as iOS records them, one record per face, in a track every
    /// recording declares; a source whose gallery names faces lists `identities`, and its
    /// recordings declare the name and distance fields as well.
    package static let faces = ObjectKind(
        name: "faces", objectName: "face", detection: "faces", messageKind: .faces,
        trackIdentifier: MetadataIdentifier.detectedFace, trackFormat: .detectedFaces, recordedFromStart: true,
        extraFields: (detection: "identities", trackFormat: .detectedFacesWithIdentities), colour: .green,
        snapshotsAppearances: true,
        record: { message in
            message.faces.map { faces in
                RecordedObjects(
                    items: faces.isEmpty ? [] : [.detectedFaces(faces)],
                    usesExtraFields: faces.contains { $0.identity != nil })
            }
        },
        drawMessage: { message in
            message.faces?.map { drawn(id: $0.faceID, bounds: $0.bounds, name: $0.identity?.name) }
        },
        drawItems: { items in
            items.flatMap { $0.detectedFaceRecords ?? [] }.map {
                drawn(id: $0.faceID, bounds: $0.bounds, name: $0.identity?.name)
            }
        },
        label: { face in "\(face.name.map { "\($0) " } ?? "")#\(face.id)" })

    private static func drawn(id: Int, bounds: NormalizedRect, name: String?) -> DrawnObject {
        var object = DrawnObject(id: id, bounds: bounds)
        object.name = name
        return object
    }
}
